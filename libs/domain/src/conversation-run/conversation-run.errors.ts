import { ValidationError } from '@handplane/kernel';

/** Governance rules of DESIGN.md §4 that a decision can break. */
export type GuardRule = 'G1' | 'G2' | 'G3' | 'G4' | 'G5' | 'G6' | 'G7' | 'G8' | 'G9' | 'G10';

/**
 * A governance rule refused the model's request. It is a ValidationError (the input is not
 * acceptable) that names the rule, so the runtime can emit `guard.rejected {rule}` and hand the
 * message back to the model, which is written for the model to act on.
 */
export class GuardViolation extends ValidationError {
  constructor(
    readonly rule: GuardRule,
    message: string,
    issues: readonly string[] = [],
  ) {
    super(message, issues);
  }
}
