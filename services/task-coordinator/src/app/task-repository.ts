import { decodeTaskEvent, type Topology } from '@handplane/contracts';
import { taskDecider, type TaskCommand, type TaskEvent, type TaskRegistered, type TaskState } from '@handplane/domain';
import { fold } from '@handplane/kernel';
import { handleCommand, type EventStore, type StoredEvent } from '@handplane/platform';

/** A task's history folded into its state. */
export interface LoadedTask {
  readonly state: TaskState;
  readonly history: readonly StoredEvent<TaskEvent>[];
  readonly lastSeq: number;
  /** The registration (carries the env, which the state leaves out), when the task exists. */
  readonly registered: StoredEvent<TaskRegistered> | undefined;
}

const isRegistered = (e: StoredEvent<TaskEvent>): e is StoredEvent<TaskRegistered> => e.event.type === 'TaskRegistered';

/** The task aggregate on its subject `task.<taskId>` in TASKS. */
export class TaskRepository {
  constructor(
    private readonly store: EventStore,
    private readonly t: Topology,
  ) {}

  /** Reads and folds one task; a task that was never registered has status 'none'. */
  async load(taskId: string): Promise<LoadedTask> {
    const { events, lastSeq } = await this.store.read<TaskEvent>(this.t.streams.TASKS, this.t.task(taskId), decodeTaskEvent);
    return { state: fold(taskDecider, events.map((e) => e.event)), history: events, lastSeq, registered: events.find(isRegistered) };
  }

  /**
   * Load → decide → append with optimistic concurrency. `msgId` must name the decision by its
   * content (e.g. `started:<taskId>:<attempt>:<runnerId>`) so a retried append is deduplicated and two
   * different decisions never are; a function names it from the events decided.
   */
  async execute(taskId: string, command: TaskCommand, msgId: string | ((events: readonly TaskEvent[]) => string)): Promise<{ events: TaskEvent[]; state: TaskState; lastSeq: number }> {
    return handleCommand({
      store: this.store,
      stream: this.t.streams.TASKS,
      subject: this.t.task(taskId),
      decode: decodeTaskEvent,
      decider: taskDecider,
      command,
      msgId: (events) => (typeof msgId === 'string' ? msgId : msgId(events)),
    });
  }
}
