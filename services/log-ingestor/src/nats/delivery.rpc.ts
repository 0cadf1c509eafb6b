import type { Subscription } from '@nats-io/transport-node';
import { markDeliveredRequestSchema } from '@handplane/contracts';
import { serveRpc } from '@handplane/platform';
import type { IngestorDeps } from '../app/deps';
import { markDelivered } from '../app/mark-delivered';

/** Queue group shared by every ingestor replica. */
export const RPC_QUEUE = 'log-ingestor';

/** `mark-delivered` over NATS request/reply (domain errors become `{ok:false, error}` in serveRpc). */
export function serveDeliveryRpc(deps: IngestorDeps): Subscription {
  return serveRpc(deps.nats.nc, deps.topology.rpc.markDelivered, RPC_QUEUE, markDeliveredRequestSchema, (req) => markDelivered(deps, req), deps.logger);
}
