import { Api } from './api';
import { UsageError, type Io } from './io';

/** What every command gets: where to write, the global options, and the API when it needs one. */
export interface Context {
  readonly io: Io;
  readonly json: boolean;
  readonly url: string;
  /** Milliseconds without news before a progress line on stderr. */
  readonly progressEveryMs: number;
  api(): Api;
  /** A note on stderr (never on stdout, which belongs to results). */
  note(text: string): void;
}

export function makeContext(io: Io, o: { url?: string; token?: string; json: boolean }): Context {
  const url = (o.url ?? io.env.HANDPLANE_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const token = o.token ?? io.env.HANDPLANE_TOKEN;
  const note = (text: string) => io.err(`handplane: ${text}\n`);
  let api: Api | undefined;
  const every = Number(io.env.HANDPLANE_PROGRESS_MS);
  return {
    io,
    json: o.json,
    url,
    progressEveryMs: Number.isFinite(every) && every > 0 ? every : 10_000,
    note,
    api() {
      if (!token) throw new UsageError('no token: set HANDPLANE_TOKEN or pass --token (`handplane token <user> <tenant>` makes a development one)');
      return (api ??= new Api(url, token, note));
    },
  };
}

/** Prints a result: JSON with --json, else the human text. */
export function print(ctx: Context, value: unknown, human: () => string): void {
  ctx.io.out(ctx.json ? `${JSON.stringify(value, null, 2)}\n` : human());
}
