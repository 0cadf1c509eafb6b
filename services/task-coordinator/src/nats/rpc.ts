import { startTaskRequestSchema, stopAllRequestSchema, stopTaskRequestSchema, validateTaskWaitRequestSchema, writeStdinRequestSchema } from '@handplane/contracts';
import { serveRpc, type Nats } from '@handplane/platform';
import type { Subscription } from '@nats-io/transport-node';
import type { CoordinatorDeps } from '../app/deps';
import { startTask } from '../app/start-task';
import { stopAll } from '../app/stop-all';
import { stopTask } from '../app/stop-task';
import { validateTaskWait } from '../app/validate-task-wait';
import { writeStdin } from '../app/write-stdin';

/** Queue group shared by every coordinator replica. */
export const RPC_QUEUE = 'task-coordinator';

/** `start-task`, `validate-task-wait`, `stop-task` and `stop-all` (errors become `{ok:false, error}` in serveRpc). */
export function serveCoordinatorRpc(nats: Nats, d: CoordinatorDeps): Subscription[] {
  return [
    serveRpc(nats.nc, d.t.rpc.startTask, RPC_QUEUE, startTaskRequestSchema, (req) => startTask(d, req), d.logger),
    serveRpc(nats.nc, d.t.rpc.validateTaskWait, RPC_QUEUE, validateTaskWaitRequestSchema, (req) => validateTaskWait(d, req), d.logger),
    serveRpc(nats.nc, d.t.rpc.stopTask, RPC_QUEUE, stopTaskRequestSchema, (req) => stopTask(d, req), d.logger),
    serveRpc(nats.nc, d.t.rpc.stopAll, RPC_QUEUE, stopAllRequestSchema, (req) => stopAll(d, req), d.logger),
    serveRpc(nats.nc, d.t.rpc.writeStdin, RPC_QUEUE, writeStdinRequestSchema, (req) => writeStdin(d, req), d.logger),
  ];
}
