import type { Server } from 'node:http';
import type { Config } from '@handplane/contracts';
import { ServiceMetrics, type MetricsAccess } from '@handplane/platform';

/**
 * Who may read the gateway's `/metrics` (the public port): with `METRICS_TOKEN` set, callers sending
 * `Authorization: Bearer <METRICS_TOKEN>`; without it, anyone in development, and nobody in production
 * (403: an open metrics page on the internet tells too much about the deployment).
 */
export function gatewayMetricsAccess(config: Pick<Config, 'NODE_ENV'>, token: string | undefined): MetricsAccess {
  if (token) return { kind: 'token', token };
  if (config.NODE_ENV === 'production') return { kind: 'disabled', reason: 'set METRICS_TOKEN to serve /metrics on the public port' };
  return { kind: 'open' };
}

/** The gateway's registry: HTTP figures come from the platform middleware; open connections (SSE streams included) here. */
export function gatewayMetrics(server: () => Server | undefined): ServiceMetrics {
  const m = new ServiceMetrics('gateway');
  m.gauge('handplane_gateway_connections_open', 'HTTP connections open on the gateway (SSE streams included)', [], () => {
    const s = server();
    return s ? new Promise<number>((resolve, reject) => s.getConnections((err, n) => (err ? reject(err) : resolve(n)))) : Promise.resolve(0);
  });
  return m;
}
