import { z } from 'zod';
import { STDIN_MAX_BYTES, writeStdinReplySchema, type WriteStdinRequest } from '@handplane/contracts';
import { TooLarge, ValidationError } from '@handplane/kernel';
import { callRpc } from '@handplane/platform';
import type { GatewayResources, Principal } from './resources';
import { fromRpcError } from './rpc-errors';
import { requireTask } from './task-read';
import { parseInput } from './validate';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const stdinBodySchema = z
  .object({
    data: z.string().default(''),
    encoding: z.enum(['utf8', 'base64']).default('utf8'),
    close: z.boolean().default(false),
    attempt: z.number().int().nonnegative().optional(),
  })
  .strict();

/** What a write did: `bytes` written now, `totalBytes` so far, `closed` once stdin is closed. */
export interface StdinAnswer {
  readonly taskId: string;
  readonly attempt: number;
  readonly bytes: number;
  readonly closed: boolean;
  readonly totalBytes: number;
}

/** `POST /v1/tasks/:taskId/stdin` (DESIGN.md §7): input for a running command, fenced by attempt. */
export interface StdinApp {
  write(p: Principal, taskId: string, body: unknown): Promise<StdinAnswer>;
}

/** The bytes a body stands for (utf8 text, or base64 for anything else). */
export function stdinBytes(data: string, encoding: 'utf8' | 'base64'): Buffer {
  if (encoding === 'utf8') return Buffer.from(data, 'utf8');
  if (data.length % 4 !== 0 || !BASE64.test(data)) throw new ValidationError('invalid body: data: not valid base64', ['data: not valid base64']);
  return Buffer.from(data, 'base64');
}

export function stdinApp(r: GatewayResources): StdinApp {
  return {
    async write(p, taskId, body) {
      // Membership first: a task of a conversation the caller is not in is "not found", whatever its state.
      await requireTask(r.pool, p, taskId);
      const input = parseInput(stdinBodySchema, body);
      const bytes = stdinBytes(input.data, input.encoding);
      if (bytes.length > STDIN_MAX_BYTES) throw new TooLarge(`data is ${bytes.length} bytes; at most ${STDIN_MAX_BYTES} per write (send more in several writes)`);
      if (bytes.length === 0 && !input.close) throw new ValidationError('invalid body: nothing to do: give data, close: true, or both', ['data: empty and close is not set']);
      const request: WriteStdinRequest = {
        tenant: p.tenant,
        userId: p.userId,
        taskId,
        data: bytes.toString('base64'),
        close: input.close,
        via: 'user',
        ...(input.attempt === undefined ? {} : { attempt: input.attempt }),
      };
      const reply = await callRpc(r.nats.nc, r.topology.rpc.writeStdin, request, writeStdinReplySchema, r.rpcTimeoutMs);
      if (!reply.ok) throw fromRpcError(reply.error, 'the coordinator could not write to the task');
      return { taskId: reply.taskId, attempt: reply.attempt, bytes: reply.bytes, closed: reply.closed, totalBytes: reply.totalBytes };
    },
  };
}
