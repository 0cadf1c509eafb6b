import type { NatsConnection } from '@nats-io/transport-node';
import type { Pool } from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Nats } from '../nats/connect';

/** One sample of a gauge read at scrape time. */
export interface GaugeSample {
  readonly labels?: Record<string, string>;
  readonly value: number;
}

/** Latency buckets (seconds) from sub-millisecond RPCs to minute-long requests. */
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * The Prometheus registry of one service instance (one per process in production; tests run several
 * services in one process, each with its own). Label values are only ever route templates, subject
 * and consumer names, statuses and outcomes: never ids, tenants, users or commands.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  /** Scraped after `registry`, so a read that failed during this scrape is already counted. */
  private readonly late = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly rpcServed: Counter<'subject' | 'outcome'>;
  readonly rpcCalled: Counter<'subject' | 'outcome'>;
  readonly rpcDuration: Histogram<'subject' | 'side'>;
  readonly consumed: Counter<'consumer' | 'outcome'>;
  readonly runnerCalls: Histogram<'method' | 'code'>;
  readonly collectErrors: Counter<'metric'>;
  private readonly consumers = new Map<string, { nats: Nats; stream: string; durable: string }>();
  private readonly projections = new Map<string, { nats: Nats; pool: Pool; stream: string }>();

  constructor(
    readonly service: string,
    opts: { defaultMetrics?: boolean } = {},
  ) {
    this.registry.setDefaultLabels({ service });
    this.late.setDefaultLabels({ service });
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'handplane_' });
    const r = [this.registry];
    this.httpRequests = new Counter({ name: 'handplane_http_requests_total', help: 'HTTP requests answered, by route template and status', labelNames: ['method', 'route', 'status'], registers: r });
    this.httpDuration = new Histogram({ name: 'handplane_http_request_duration_seconds', help: 'HTTP request duration', labelNames: ['method', 'route'], buckets: BUCKETS, registers: r });
    this.rpcServed = new Counter({ name: 'handplane_rpc_server_requests_total', help: 'NATS RPC requests served, by subject and outcome (ok or error code)', labelNames: ['subject', 'outcome'], registers: r });
    this.rpcCalled = new Counter({ name: 'handplane_rpc_client_requests_total', help: 'NATS RPC requests made, by subject and outcome', labelNames: ['subject', 'outcome'], registers: r });
    this.rpcDuration = new Histogram({ name: 'handplane_rpc_duration_seconds', help: 'NATS RPC duration (side = server or client)', labelNames: ['subject', 'side'], buckets: BUCKETS, registers: r });
    this.consumed = new Counter({ name: 'handplane_consumer_messages_total', help: 'Durable consumer deliveries handled, by outcome (ack, nak, term)', labelNames: ['consumer', 'outcome'], registers: r });
    this.runnerCalls = new Histogram({ name: 'handplane_runner_client_duration_seconds', help: 'gRPC calls to runners as the caller sees them, by method and status code (Exec: spawn latency)', labelNames: ['method', 'code'], buckets: BUCKETS, registers: r });
    this.collectErrors = new Counter({ name: 'handplane_metrics_collect_errors_total', help: 'Gauges that could not be read at scrape time', labelNames: ['metric'], registers: [this.late] });
    const consumers = this.consumers;
    const failed = this.collectErrors;
    new Gauge({
      name: 'handplane_consumer_pending_messages',
      help: 'Queue depth of this service’s JetStream durable consumers: messages not yet delivered (state=pending) and delivered but not acked (state=ack_pending)',
      labelNames: ['consumer', 'state'],
      registers: r,
      async collect() {
        this.reset();
        await Promise.all(
          [...consumers.values()].map(async (c) => {
            try {
              const info = await c.nats.jsm.consumers.info(c.stream, c.durable);
              this.set({ consumer: c.durable, state: 'pending' }, info.num_pending);
              this.set({ consumer: c.durable, state: 'ack_pending' }, info.num_ack_pending);
            } catch {
              failed.inc({ metric: 'handplane_consumer_pending_messages' });
            }
          }),
        );
      },
    });
  }

  /**
   * Reports how far a projection this service hosts is behind its stream, in events
   * (`handplane_projection_lag_events{projection}`: the stream's last sequence minus the projector position).
   */
  watchProjection(nats: Nats, pool: Pool, projection: { readonly name: string; readonly stream: string }): void {
    if (this.projections.size === 0) {
      const projections = this.projections;
      this.gauge('handplane_projection_lag_events', 'Events of the stream a read model has not applied yet', ['projection'], async () =>
        Promise.all(
          [...projections].map(async ([name, p]) => {
            const [info, pos] = await Promise.all([p.nats.jsm.streams.info(p.stream), p.pool.query<{ seq: string }>('SELECT seq FROM projector_positions WHERE name = $1', [name])]);
            return { labels: { projection: name }, value: Math.max(0, info.state.last_seq - Number(pos.rows[0]?.seq ?? 0)) };
          }),
        ),
      );
    }
    this.projections.set(projection.name, { nats, pool, stream: projection.stream });
  }

  /** Counts the pending messages of a durable consumer in `handplane_consumer_pending_messages`. */
  watchConsumer(nats: Nats, stream: string, durable: string): void {
    this.consumers.set(`${stream}/${durable}`, { nats, stream, durable });
  }

  /**
   * A gauge read when scraped (`read` should be one cheap query). A failing read leaves the gauge
   * empty for that scrape and counts in `handplane_metrics_collect_errors_total`.
   */
  gauge(name: string, help: string, labelNames: readonly string[], read: () => Promise<readonly GaugeSample[] | number>): void {
    const failed = this.collectErrors;
    new Gauge({
      name,
      help,
      labelNames: [...labelNames],
      registers: [this.registry],
      async collect() {
        this.reset();
        try {
          const got = await read();
          if (typeof got === 'number') this.set(got);
          else for (const s of got) this.set(s.labels ?? {}, s.value);
        } catch {
          failed.inc({ metric: name });
          // Unknown, not zero: a label-less gauge would otherwise read 0.
          if (labelNames.length === 0) this.set(NaN);
        }
      },
    });
  }

  /** A counter whose value is read at scrape time from a monotonic figure the service already keeps. */
  counterFrom(name: string, help: string, read: () => number): void {
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  /** Text exposition of every metric. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    const body = await this.registry.metrics();
    return { contentType: this.registry.contentType, body: `${body}\n${await this.late.metrics()}` };
  }
}

const bound = new WeakMap<NatsConnection, ServiceMetrics>();

/**
 * Ties a service's NATS connection to its metrics and tracer name: RPCs, durable consumers and event
 * appends made through platform on that connection are then counted and traced as that service.
 */
export function bindTelemetry(nats: Nats, metrics: ServiceMetrics): void {
  bound.set(nats.nc, metrics);
}

/** The metrics bound to a connection, if any. */
export function telemetryOf(nc: NatsConnection): ServiceMetrics | undefined {
  return bound.get(nc);
}
