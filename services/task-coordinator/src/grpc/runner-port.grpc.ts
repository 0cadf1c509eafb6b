import { unary, type Logger, type RunnerClients } from '@handplane/platform';
import type { ExecRequest } from '@handplane/proto';
import type { ExecOrder, RunnerPort } from '../app/runner-port';
import { fromGrpcError, isNotFound } from './errors';

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
    close: () => clients.close(),
  };
}
