// Baselines measured in the same run as our figures: what the same work costs with nothing of
// Handplane in the way. The raw JetStream and Postgres ones live in bench/ingest/bench-env.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { followSse } from './client';

/** `bash -c <command>` to its exit with all of stdout read: the plain local spawn. */
export function plainRun(command: string): Promise<{ ms: number; stdout: Buffer }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const out: Buffer[] = [];
    const child = spawn('bash', ['-c', command], { stdio: ['ignore', 'pipe', 'ignore'] });
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.once('error', reject);
    child.once('close', () => resolve({ ms: performance.now() - t0, stdout: Buffer.concat(out) }));
  });
}

/** A spawned `bash -c <command>`, SIGTERM once it runs, until the exit event. */
export function plainKill(command: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('spawn', () => {
      const t0 = performance.now();
      child.once('exit', () => resolve(performance.now() - t0));
      child.kill('SIGTERM');
    });
  });
}

/**
 * A loopback SSE server in plain node:http: POST /run spawns `bash -c <command>` and writes its first
 * stdout chunk as a `data:` event to the open stream, which a local fetch client reads. The same
 * shape as our path (HTTP request in, process output out as SSE) without anything durable between.
 */
export async function loopbackSse() {
  const streams = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(': open\n\n');
      streams.add(res);
      req.on('close', () => streams.delete(res));
      return;
    }
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const { taskId, command } = JSON.parse(body) as { taskId: string; command: string };
      const child = spawn('bash', ['-c', command], { stdio: ['ignore', 'pipe', 'ignore'] });
      let offset = 0;
      child.stdout.on('data', (d: Buffer) => {
        const event = `event: command.output\ndata: ${JSON.stringify({ taskId, offset, text: d.toString() })}\n\n`;
        offset += d.length;
        for (const s of streams) s.write(event);
      });
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ taskId }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sse = followSse(`${base}/events`, 'none');
  await sse.open;
  let n = 0;
  return {
    /** POST → the first `command.output` at the SSE client, in ms. */
    async firstByte(command: string): Promise<number> {
      const taskId = `plain-${++n}`;
      const t0 = performance.now();
      const r = await fetch(`${base}/run`, { method: 'POST', body: JSON.stringify({ taskId, command }) });
      await r.text();
      return (await sse.arrival('command.output', taskId, 30_000)).at - t0;
    },
    async close() {
      await sse.close();
      for (const s of streams) s.end();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Resident set of a process (VmRSS) in MiB. */
export function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
}

/** Proportional set size (shared pages divided among their users) of one process in MiB; 0 once gone. */
export function pssMiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** Every descendant pid of `root` (from /proc/<pid>/stat parent links; namespaced children included). */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
    } catch {
      /* gone meanwhile */
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

/**
 * `n` plain `bash -c 'sleep …'` children of this process at once: the time to spawn them, the RSS
 * this process gained per child (node's own bookkeeping, to compare with the runner's), the PSS of
 * the children per child, and the time from SIGTERM to every exit.
 */
export async function plainSleeps(n: number): Promise<{ parentMiBPerTask: number; processMiBPerTask: number; spawnAllMs: number; killAllMs: number }> {
  const before = rssMiB(process.pid);
  const t0 = performance.now();
  const children: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    const c = spawn('bash', ['-c', 'sleep 3600'], { stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise((r) => c.once('spawn', r));
    children.push(c);
  }
  const spawnAllMs = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 500));
  const parent = Math.max(0, rssMiB(process.pid) - before);
  const pss = children.reduce((s, c) => s + pssMiB(c.pid!), 0);
  const t1 = performance.now();
  await Promise.all(
    children.map((c) => {
      const gone = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      return gone;
    }),
  );
  return { parentMiBPerTask: parent / n, processMiBPerTask: pss / n, spawnAllMs, killAllMs: performance.now() - t1 };
}
