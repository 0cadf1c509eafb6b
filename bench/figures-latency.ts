// The latency figures: one command at a time through the public API of the running stack, each
// sample interleaved with a sample of its baseline so that both see the same load.
import { performance } from 'node:perf_hooks';
import { loopbackSse, plainKill, plainRun } from './baselines';
import { benchConversation } from './client';
import type { BenchStack } from './stack';
import { latency, type Row } from './table';

const WARMUP = 3;

async function conversation(s: BenchStack, title: string) {
  return benchConversation(s.baseUrl, await s.token(), title);
}

/** Collects `n` samples of ours and of the baseline, alternating, after a few unrecorded warm-up rounds. */
async function interleaved(n: number, ours: () => Promise<number>, baseline: () => Promise<number>): Promise<{ ours: number[]; baseline: number[] }> {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < WARMUP + n; i++) {
    const x = await ours();
    const y = await baseline();
    if (i >= WARMUP) {
      a.push(x);
      b.push(y);
    }
  }
  return { ours: a, baseline: b };
}

/** POST …/commands `echo x` → task.result (readable) on SSE → GET …/output returns exactly `x\n`. */
export async function commandRoundTrip(s: BenchStack, n: number): Promise<Row[]> {
  const conv = await conversation(s, 'bench round trip');
  try {
    const r = await interleaved(
      n,
      async () => {
        const t0 = performance.now();
        const { taskId } = await conv.command('echo x');
        const result = await conv.sse.arrival('task.result', taskId);
        if (result.data.resultState !== 'readable') throw new Error(`task ${taskId} ended ${String(result.data.resultState)}`);
        const out = await fetch(`${s.baseUrl}/v1/tasks/${taskId}/output?offset=0`, { headers: { authorization: `Bearer ${await s.token()}` } });
        const bytes = Buffer.from(await out.arrayBuffer());
        if (bytes.toString() !== 'x\n') throw new Error(`task ${taskId} output ${JSON.stringify(bytes.toString())}`);
        return performance.now() - t0;
      },
      async () => {
        const p = await plainRun('echo x');
        if (p.stdout.toString() !== 'x\n') throw new Error('plain echo printed something else');
        return p.ms;
      },
    );
    return [
      {
        figure: 'command round trip: POST command → exit → output readable (`echo x`)',
        ours: latency(r.ours),
        baselineLabel: 'plain local spawn of `bash -c` to its close',
        baseline: latency(r.baseline),
        note: 'ours = gateway → coordinator (TaskRegistered) → runner Exec in a PID namespace + cgroup → ingestor commits the bytes to Postgres and LOGS → TaskFinished → task.result on the SSE stream → GET output; the client learns of the end from SSE.',
      },
    ];
  } finally {
    await conv.close();
  }
}

/** POST …/commands `echo x` → the first command.output event at an SSE client. */
export async function firstByteToSse(s: BenchStack, n: number): Promise<Row[]> {
  const conv = await conversation(s, 'bench first byte');
  const plain = await loopbackSse();
  try {
    const r = await interleaved(
      n,
      async () => {
        const t0 = performance.now();
        const { taskId } = await conv.command('echo x');
        const at = (await conv.sse.arrival('command.output', taskId)).at - t0;
        await conv.sse.arrival('task.result', taskId); // one command at a time
        return at;
      },
      () => plainFirstByte(plain),
    );
    return [
      {
        figure: 'first byte to SSE: POST command → first `command.output` event at an SSE client',
        ours: latency(r.ours),
        baselineLabel: 'loopback SSE server (node:http POST → spawn → `data:` event to a local client)',
        baseline: latency(r.baseline),
        note: 'our line is durable (Postgres + LOGS) before it is shown.',
      },
    ];
  } finally {
    await plain.close();
    await conv.close();
  }
}

const plainFirstByte = (plain: Awaited<ReturnType<typeof loopbackSse>>) => plain.firstByte('echo x');

/** A running `sleep 600`: POST …/stop → task.finished (cancelled) on SSE. */
export async function stopToExit(s: BenchStack, n: number): Promise<Row[]> {
  const conv = await conversation(s, 'bench stop');
  try {
    const r = await interleaved(
      n,
      async () => {
        const { taskId } = await conv.command('sleep 600');
        await conv.sse.arrival('task.started', taskId);
        const t0 = performance.now();
        await conv.stop(taskId);
        const fin = await conv.sse.arrival('task.finished', taskId);
        if (fin.data.status !== 'cancelled') throw new Error(`stopped task ${taskId} ended ${String(fin.data.status)}`);
        return fin.at - t0;
      },
      () => plainKill('sleep 600'),
    );
    return [
      {
        figure: 'stop-to-exit: POST stop → task.finished `cancelled` on SSE (`sleep 600`)',
        ours: latency(r.ours),
        baselineLabel: 'plain `kill` (SIGTERM) of a spawned `bash -c` to its exit event',
        baseline: latency(r.baseline),
        note: 'ours = coordinator fences the stop by attempt → runner SIGTERMs the PID namespace and verifies it is empty → exit record ingested → TaskFinished → SSE.',
      },
    ];
  } finally {
    await conv.close();
  }
}
