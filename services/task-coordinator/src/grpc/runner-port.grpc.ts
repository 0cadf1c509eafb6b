import { unary, type Logger, type RunnerClients } from '@handplane/platform';
import { CommandState, SignalKind, SignalOutcome, type CommandStatus, type ExecRequest, type SignalRequest, type WriteStdinRequest } from '@handplane/proto';
import { Conflict } from '@handplane/kernel';
import type { ExecOrder, RunnerCommand, RunnerPort, SignalOrder, StdinOrder } from '../app/runner-port';
import { fromGrpcError, fromSignalError, fromStdinError, isNotFound } from './errors';

/** The domain → proto mapping of an Exec. */
export function toExecRequest(o: ExecOrder): ExecRequest {
  return {
    commandId: o.commandId,
    taskId: o.taskId,
    conversationId: o.conversationId,
    tenant: o.tenant,
    generation: { epoch: o.epoch, attempt: o.attempt },
    command: o.command,
    cwd: o.cwd,
    env: o.env,
    timeoutMs: o.timeoutMs,
  };
}

/** The domain → proto mapping of a Signal. */
export function toSignalRequest(o: SignalOrder): SignalRequest {
  return {
    commandId: o.commandId,
    taskId: o.taskId,
    generation: { epoch: o.epoch, attempt: o.attempt },
    kind: o.kind === 'stop' ? SignalKind.SIGNAL_KIND_STOP : SignalKind.SIGNAL_KIND_KILL,
    graceMs: o.graceMs,
    reason: o.reason,
  };
}

/** The domain → proto mapping of a WriteStdin. */
export function toWriteStdinRequest(o: StdinOrder): WriteStdinRequest {
  return { commandId: o.commandId, taskId: o.taskId, generation: { epoch: o.epoch, attempt: o.attempt }, data: o.data, close: o.close };
}

const STATES: Partial<Record<CommandState, RunnerCommand['state']>> = {
  [CommandState.COMMAND_STATE_RUNNING]: 'running',
  [CommandState.COMMAND_STATE_STOPPING]: 'stopping',
  [CommandState.COMMAND_STATE_EXITED]: 'exited',
};

/** The proto → domain mapping of a command's status (an unknown state reads as running: nothing is settled on it). */
export function fromCommandStatus(s: CommandStatus): RunnerCommand {
  const exit = s.exit ? { exitCode: s.exit.exitCode ?? null, signal: s.exit.signal || null, reason: s.exit.reason, endOffset: s.exit.endOffset } : null;
  const state = STATES[s.state] ?? 'running';
  return { commandId: s.commandId, taskId: s.taskId, epoch: s.generation?.epoch ?? 0, attempt: s.generation?.attempt ?? 0, state: state === 'exited' && !exit ? 'running' : state, exit };
}

/** RunnerPort over gRPC: one cached client per runner address, every call with a deadline. */
export function grpcRunnerPort(clients: RunnerClients, logger: Logger, callTimeoutMs = 10_000): RunnerPort {
  return {
    async exec(address, order) {
      const c = clients.get(address);
      try {
        await unary(c.exec.bind(c), toExecRequest(order), callTimeoutMs);
      } catch (e) {
        throw fromGrpcError(e, 'exec');
      }
    },
    async knows(address, commandId, attempt) {
      const c = clients.get(address);
      try {
        const s = await unary(c.status.bind(c), { commandId }, callTimeoutMs);
        return (s.generation?.attempt ?? 0) === attempt;
      } catch (e) {
        // Best effort: a runner that cannot answer is treated as not having the command.
        if (!isNotFound(e)) logger.warn({ err: e, address, commandId }, 'runner status probe failed');
        return false;
      }
    },
    async signal(address, order) {
      const c = clients.get(address);
      let outcome: SignalOutcome;
      try {
        outcome = (await unary(c.signal.bind(c), toSignalRequest(order), callTimeoutMs)).outcome;
      } catch (e) {
        throw fromSignalError(e);
      }
      if (outcome === SignalOutcome.SIGNAL_OUTCOME_STALE) throw new Conflict(`runner reports a stale generation for ${order.commandId}; nothing was signalled`);
      return outcome === SignalOutcome.SIGNAL_OUTCOME_ALREADY_EXITED ? 'already_exited' : 'delivered';
    },
    async writeStdin(address, order) {
      const c = clients.get(address);
      try {
        const r = await unary(c.writeStdin.bind(c), toWriteStdinRequest(order), callTimeoutMs);
        return { written: r.written, closed: r.closed, totalWritten: r.totalWritten };
      } catch (e) {
        throw fromStdinError(e);
      }
    },
    async probe(address, commandId, what) {
      const c = clients.get(address);
      try {
        const r = await unary(c.probe.bind(c), { commandId, what: 'port' in what ? { $case: 'port', value: what.port } : { $case: 'path', value: what.path } }, callTimeoutMs);
        return { satisfied: r.satisfied, detail: r.detail };
      } catch (e) {
        throw fromGrpcError(e, 'probe');
      }
    },
    async list(address) {
      const c = clients.get(address);
      try {
        const r = await unary(c.list.bind(c), { conversationId: '' }, callTimeoutMs);
        return { runnerId: r.runnerId, bootId: r.bootId, commands: r.commands.map(fromCommandStatus) };
      } catch (e) {
        throw fromGrpcError(e, 'list');
      }
    },
    close: () => clients.close(),
  };
}
