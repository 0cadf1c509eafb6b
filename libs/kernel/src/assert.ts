/** Exhaustiveness check for `switch` over a union: fails to compile when a case is missing. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}
