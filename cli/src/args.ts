import { UsageError } from './io';

/** Parsed command line: positionals, boolean flags and options with values (repeatable). */
export interface Args {
  readonly positionals: string[];
  readonly flags: ReadonlySet<string>;
  readonly options: ReadonlyMap<string, string[]>;
}

export interface ArgSpec {
  /** Boolean flags, long names (`json`) or single letters (`f`). */
  readonly flags: readonly string[];
  /** Options that take a value (`--url X` or `--url=X`). */
  readonly options: readonly string[];
}

/**
 * A small, strict parser: unknown options are usage errors, and everything after `--` is a
 * positional taken literally (so `run -- ls -la` passes `-la` to the command).
 */
export function parseArgs(argv: readonly string[], spec: ArgSpec): Args {
  const positionals: string[] = [];
  const flags = new Set<string>();
  const options = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith('-') || a === '-') {
      positionals.push(a);
      continue;
    }
    const long = a.startsWith('--');
    const eq = a.indexOf('=');
    const name = long ? a.slice(2, eq > 0 ? eq : undefined) : a.slice(1);
    if (spec.options.includes(name)) {
      const value = eq > 0 && long ? a.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new UsageError(`${a} needs a value`);
      options.set(name, [...(options.get(name) ?? []), value]);
    } else if (spec.flags.includes(name) && !(long && eq > 0)) {
      flags.add(name);
    } else if (!long && name.length > 1 && [...name].every((c) => spec.flags.includes(c))) {
      for (const c of name) flags.add(c); // -fq
    } else {
      throw new UsageError(`unknown option ${a}`);
    }
  }
  return { positionals, flags, options };
}

/** The last value of an option, if any. */
export const option = (a: Args, name: string): string | undefined => a.options.get(name)?.at(-1);

/** A non-negative integer option. */
export function intOption(a: Args, name: string): number | undefined {
  const v = option(a, name);
  if (v === undefined) return undefined;
  if (!/^\d{1,15}$/.test(v)) throw new UsageError(`--${name} must be a non-negative integer`);
  return Number(v);
}
