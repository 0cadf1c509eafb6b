import { Conflict, Forbidden, NotFound, Unavailable, ValidationError } from '@handplane/kernel';
import { PROJECTION_NAMES, PROJECTIONS, projectionRebuildReplySchema, projectionRebuildSubject } from '@handplane/contracts';
import { callRpc, projectionStatus, signRebuildRequest, type ProjectionStatus } from '@handplane/platform';
import { guardDb } from './db';
import type { GatewayResources } from './resources';

/** The operator's view of the read models (`/v1/admin/projections`, `handplane projections`). */
export interface ProjectionsAdminApp {
  list(): Promise<ProjectionStatus[]>;
  get(name: string): Promise<ProjectionStatus>;
  /** Asks the projection's host to rebuild it; answers once the rebuild holds its lock. */
  rebuild(name: string): Promise<{ name: string; status: 'running' }>;
}

function known(name: string) {
  const p = PROJECTIONS.find((x) => x.name === name);
  if (!p) throw new NotFound(`unknown projection ${JSON.stringify(name)}; valid names: ${PROJECTION_NAMES.join(', ')}`);
  return p;
}

/** `adminToken` signs the rebuild requests (the hosts check the signature with the same token). */
export function projectionsAdminApp(r: GatewayResources, adminToken: string): ProjectionsAdminApp {
  return {
    list: () => guardDb(() => projectionStatus(r.pool, PROJECTIONS)),
    async get(name) {
      const p = known(name);
      return (await guardDb(() => projectionStatus(r.pool, [p])))[0]!;
    },
    async rebuild(name) {
      known(name);
      const request = signRebuildRequest(adminToken, name, r.clock.now());
      const reply = await callRpc(r.nats.nc, projectionRebuildSubject(r.topology.prefix, name), request, projectionRebuildReplySchema, r.rpcTimeoutMs);
      if (reply.ok) return { name, status: 'running' };
      if (reply.error.code === 'conflict') throw new Conflict(reply.error.message);
      // The host has no ADMIN_TOKEN, or another one: an operator's configuration to fix.
      if (reply.error.code === 'forbidden') throw new Forbidden(`the host of ${name} refused the rebuild: ${reply.error.message}`);
      if (reply.error.code === 'validation') throw new ValidationError(reply.error.message);
      throw new Unavailable(`the rebuild of ${name} could not start: ${reply.error.message}`);
    },
  };
}
