import { gatewayMetricsAccess } from './gateway-metrics';

describe('who may read the gateway /metrics (public port)', () => {
  it('requires the bearer token whenever METRICS_TOKEN is set', () => {
    expect(gatewayMetricsAccess({ NODE_ENV: 'production' }, 'tok')).toEqual({ kind: 'token', token: 'tok' });
    expect(gatewayMetricsAccess({ NODE_ENV: 'development' }, 'tok')).toEqual({ kind: 'token', token: 'tok' });
  });

  it('is closed in production without a token, open in development', () => {
    expect(gatewayMetricsAccess({ NODE_ENV: 'production' }, undefined)).toMatchObject({ kind: 'disabled', reason: expect.stringContaining('METRICS_TOKEN') });
    expect(gatewayMetricsAccess({ NODE_ENV: 'production' }, '')).toMatchObject({ kind: 'disabled' });
    expect(gatewayMetricsAccess({ NODE_ENV: 'development' }, undefined)).toEqual({ kind: 'open' });
  });
});
