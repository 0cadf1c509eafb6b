/**
 * Names of streams, subjects, KV buckets and request subjects. A `prefix` isolates one
 * deployment (or one test) from another on a shared NATS server: the default is none.
 */
export interface Topology {
  readonly prefix: string;
  readonly streams: { readonly TASKS: string; readonly LOGS: string; readonly CANCELS: string; readonly CONV: string };
  /** Subject filters each stream captures. */
  readonly streamSubjects: { readonly TASKS: string[]; readonly LOGS: string[]; readonly CANCELS: string[]; readonly CONV: string[] };
  /** Task aggregate subject. */
  task(taskId: string): string;
  /** SandboxCommand aggregate subject (result state machine), in the TASKS stream. */
  cmd(commandId: string): string;
  /** Output chunks and the exit record of one command. */
  log(commandId: string): string;
  cancel(runnerId: string): string;
  conv(conversationId: string): string;
  /** Wildcards for consumers. */
  readonly all: { readonly task: string; readonly cmd: string; readonly log: string; readonly conv: string };
  /** Request/reply subjects served by queue groups. */
  readonly rpc: { readonly startTask: string; readonly validateTaskWait: string; readonly stopTask: string; readonly stopAll: string; readonly markDelivered: string; readonly writeStdin: string };
  /** Core NATS subjects of periodic reports (not persisted): `overdue` carries the coordinator's overdue report. */
  readonly reports: { readonly overdue: string };
  /** KV bucket where runners register with a heartbeat. */
  readonly runnersBucket: string;
  /** Durable consumer names are namespaced too. */
  durable(name: string): string;
}

const TOKEN = /^[A-Za-z0-9_-]*$/;

/** Builds the topology for a prefix ('' in production; a unique one per test). */
export function topology(prefix = ''): Topology {
  if (!TOKEN.test(prefix)) throw new Error(`invalid NATS prefix ${JSON.stringify(prefix)}: use letters, digits, _ and -`);
  const s = (subject: string) => (prefix ? `${prefix}.${subject}` : subject);
  const n = (name: string) => (prefix ? `${prefix}_${name}` : name);
  const id = (v: string) => {
    if (!v || !TOKEN.test(v)) throw new Error(`invalid subject token ${JSON.stringify(v)}`);
    return v;
  };
  return {
    prefix,
    streams: { TASKS: n('TASKS'), LOGS: n('LOGS'), CANCELS: n('CANCELS'), CONV: n('CONV') },
    streamSubjects: { TASKS: [s('task.*'), s('cmd.*')], LOGS: [s('log.*')], CANCELS: [s('cancel.*')], CONV: [s('conv.*')] },
    task: (taskId) => s(`task.${id(taskId)}`),
    cmd: (commandId) => s(`cmd.${id(commandId)}`),
    log: (commandId) => s(`log.${id(commandId)}`),
    cancel: (runnerId) => s(`cancel.${id(runnerId)}`),
    conv: (conversationId) => s(`conv.${id(conversationId)}`),
    all: { task: s('task.*'), cmd: s('cmd.*'), log: s('log.*'), conv: s('conv.*') },
    rpc: {
      startTask: s('rpc.coordinator.start-task'),
      validateTaskWait: s('rpc.coordinator.validate-task-wait'),
      stopTask: s('rpc.coordinator.stop-task'),
      stopAll: s('rpc.coordinator.stop-all'),
      writeStdin: s('rpc.coordinator.write-stdin'),
      markDelivered: s('rpc.log-ingestor.mark-delivered'),
    },
    reports: { overdue: s('report.tasks.overdue') },
    runnersBucket: n('runners'),
    durable: (name) => n(name),
  };
}
