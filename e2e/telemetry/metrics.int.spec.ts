import { waitFor } from '@handplane/testing';
import { METRICS_TOKEN, sample, scrape, startTelemetryStack, type TelemetryStack } from './telemetry-stack';

/**
 * `/metrics` of every service after a known workload: two finished commands (one succeeded, one
 * failed) and one backgrounded command that ignores SIGTERM and so stays `stopping` (long grace).
 */
describe('/metrics on every service shows what an operator needs', () => {
  let s: TelemetryStack;
  let conv: string;
  const tasks: Record<'ok' | 'bad' | 'slow', string> = { ok: '', bad: '', slow: '' };
  const status = async (taskId: string) => (await s.api('GET', `/v1/tasks/${taskId}`)).json;

  beforeAll(async () => {
    s = await startTelemetryStack('metrics', { FOREGROUND_WINDOW_MS: '1500', STOP_GRACE_MS: '60000' });
    conv = (await s.api('POST', '/v1/conversations', { title: 'metrics' })).json.id;
    const run = async (command: string) => {
      const r = await s.api('POST', `/v1/conversations/${conv}/commands`, { command });
      if (r.status !== 201) throw new Error(`command answered ${r.status}`);
      return r.json.taskId as string;
    };
    tasks.ok = await run('echo hello');
    tasks.bad = await run('echo oops; exit 3');
    tasks.slow = await run(`trap '' TERM; echo ready; sleep 120`);
    await waitFor(async () => (await status(tasks.ok)).status === 'succeeded' && (await status(tasks.bad)).status === 'failed', 60_000, 'two finished');
    await waitFor(async () => (await status(tasks.slow)).background === true, 60_000, 'slow task backgrounded');
    expect((await s.api('POST', `/v1/tasks/${tasks.slow}/stop`, {})).status).toBe(202);
    await waitFor(async () => (await status(tasks.slow)).status === 'stopping', 30_000, 'slow task stopping');
  });
  afterAll(() => s?.stop());

  /** Scrapes until `check` holds (figures read from projections and stream state settle asynchronously). */
  async function settled(port: number, check: (body: string) => boolean, what: string, headers: Record<string, string> = {}): Promise<string> {
    let last = '';
    try {
      await waitFor(
        async () => {
          last = (await scrape(port, headers)).body;
          return check(last);
        },
        30_000,
        what,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}\nlast scrape:\n${last}`);
    }
    return last;
  }

  it('serves the Prometheus text format with process metrics on every port, no auth on internal ports', async () => {
    for (const [name, port] of Object.entries(s.ports)) {
      const r = await scrape(port, name === 'gateway' ? { authorization: `Bearer ${METRICS_TOKEN}` } : {});
      expect({ name, status: r.status }).toEqual({ name, status: 200 });
      expect(r.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(sample(r.body, 'handplane_process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(r.body).toContain(`service="${name === 'coordinator' ? 'task-coordinator' : name === 'ingestor' ? 'log-ingestor' : name === 'runtime' ? 'agent-runtime' : name === 'runner' ? 'sandbox-runner' : 'gateway'}"`);
      // No tenant data in any label or value: no tenant, user, ids or command text.
      for (const secret of ['acme', 'alice', conv, tasks.ok, tasks.slow, 'hello', 'oops', 'sleep 120']) expect({ name, leaked: r.body.includes(secret) ? secret : null }).toEqual({ name, leaked: null });
    }
  });

  it('gateway: /metrics needs the METRICS_TOKEN bearer; counts requests by route template', async () => {
    expect((await scrape(s.ports.gateway)).status).toBe(401);
    expect((await scrape(s.ports.gateway, { authorization: 'Bearer wrong-token-wrong' })).status).toBe(401);
    const body = (await scrape(s.ports.gateway, { authorization: `Bearer ${METRICS_TOKEN}` })).body;
    expect(sample(body, 'handplane_http_requests_total', { method: 'POST', route: '/v1/conversations/:id/commands', status: '201' })).toBe(3);
    expect(sample(body, 'handplane_http_requests_total', { method: 'POST', route: '/v1/tasks/:taskId/stop', status: '202' })).toBe(1);
    expect(sample(body, 'handplane_rpc_client_requests_total', { subject: `${s.prefix}.rpc.coordinator.start-task`, outcome: 'ok' })).toBe(3);
    await settled(s.ports.gateway, (b) => sample(b, 'handplane_projection_lag_events', { projection: 'conversations' }) === 0, 'conversations projection caught up', { authorization: `Bearer ${METRICS_TOKEN}` });
  });

  it('coordinator: tasks by status, backgrounded, stopping, RPCs and queue depth', async () => {
    const body = await settled(s.ports.coordinator, (b) => sample(b, 'handplane_tasks', { status: 'stopping' }) === 1 && sample(b, 'handplane_projection_lag_events', { projection: 'tasks' }) === 0, 'tasks projected');
    const byStatus = Object.fromEntries(['starting', 'running', 'stopping', 'succeeded', 'failed', 'cancelled', 'timed_out', 'lost'].map((st) => [st, sample(body, 'handplane_tasks', { status: st })]));
    expect(byStatus).toEqual({ starting: 0, running: 0, stopping: 1, succeeded: 1, failed: 1, cancelled: 0, timed_out: 0, lost: 0 });
    // The same figures from the table itself (what the gauge must agree with).
    const { rows } = await s.pool.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM tasks GROUP BY status`);
    for (const r of rows) expect(byStatus[r.status]).toBe(Number(r.n));
    expect(sample(body, 'handplane_tasks_backgrounded')).toBe(1);
    expect(sample(body, 'handplane_runner_client_duration_seconds_count', { method: 'Exec', code: 'OK' })).toBe(3);
    expect(sample(body, 'handplane_tasks_stopping')).toBe(1);
    expect(sample(body, 'handplane_rpc_server_requests_total', { subject: `${s.prefix}.rpc.coordinator.start-task`, outcome: 'ok' })).toBe(3);
    expect(sample(body, 'handplane_rpc_server_requests_total', { subject: `${s.prefix}.rpc.coordinator.stop-task`, outcome: 'ok' })).toBe(1);
    for (const durable of ['coordinator-tasks', 'coordinator-commands', 'coordinator-notices']) {
      expect(sample(body, 'handplane_consumer_pending_messages', { consumer: `${s.prefix}_${durable}`, state: 'pending' })).toBeGreaterThanOrEqual(0);
    }
    expect(sample(body, 'handplane_consumer_messages_total', { consumer: `${s.prefix}_coordinator-tasks`, outcome: 'ack' })).toBeGreaterThanOrEqual(3);
  });

  it('ingestor: ingestion lag — pending commands, oldest pending age, committed bytes', async () => {
    // "hello\n" + "oops\n" + "ready\n": every byte the three commands wrote so far is durable.
    const body = await settled(s.ports.ingestor, (b) => sample(b, 'handplane_ingest_committed_bytes_total') === 17, 'all output committed');
    expect(sample(body, 'handplane_ingest_commands', { state: 'result_pending' })).toBe(1);
    const states = (await s.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ingest_cursors WHERE result_state <> 'result_pending'`)).rows[0]!.n;
    expect(Number(states)).toBe(2);
    expect(sample(body, 'handplane_ingest_oldest_pending_age_seconds')).toBeGreaterThan(0);
    expect(sample(body, 'handplane_ingest_commands_active')).toBe(1);
    expect(sample(body, 'handplane_ingest_commands_failing')).toBe(0);
    expect(sample(body, 'handplane_consumer_pending_messages', { consumer: `${s.prefix}_ingestor-tasks`, state: 'pending' })).toBeGreaterThanOrEqual(0);
  });

  it('runner: commands running, Exec latency histogram, unacked spool bytes', async () => {
    const body = (await scrape(s.ports.runner)).body;
    expect(sample(body, 'handplane_runner_commands_running')).toBe(1);
    expect(sample(body, 'handplane_runner_grpc_duration_seconds_count', { method: 'Exec', code: 'OK' })).toBe(3);
    expect(sample(body, 'handplane_runner_grpc_duration_seconds_count', { method: 'Signal', code: 'OK' })).toBeGreaterThanOrEqual(1);
    expect(sample(body, 'handplane_runner_spool_unacked_bytes')).toBeGreaterThanOrEqual(0);
  });

  it('runtime: inbox and wake-up queues agree with its tables; its CONV consumer depth is reported', async () => {
    const count = async (sql: string) => Number((await s.pool.query<{ n: string }>(sql)).rows[0]!.n);
    const wakeups = await count(`SELECT count(*) AS n FROM wakeups WHERE consumed_at IS NULL`);
    const inbox = await count(`SELECT count(*) AS n FROM inbox WHERE consumed_by_run IS NULL`);
    const body = await settled(
      s.ports.runtime,
      (b) => sample(b, 'handplane_runtime_wakeups_pending') === wakeups && sample(b, 'handplane_runtime_inbox_pending') === inbox,
      'runtime queues',
    );
    expect(sample(body, 'handplane_consumer_pending_messages', { consumer: `${s.prefix}_runtime-conv`, state: 'pending' })).toBeGreaterThanOrEqual(0);
    expect(sample(body, 'handplane_runtime_runs_active')).toBeGreaterThanOrEqual(0);
  });
});
