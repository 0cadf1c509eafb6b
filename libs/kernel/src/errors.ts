/**
 * The closed set of domain errors. Transports map them in one file each
 * (HTTP status, gRPC code, NATS nak/term); use cases never throw transport errors.
 */
export type DomainErrorCode = 'not_found' | 'illegal_state' | 'conflict' | 'validation' | 'unavailable' | 'unauthorized' | 'forbidden' | 'too_large' | 'rate_limited';

/** Base class: carries a stable code, whether a retry may help, and a cause. */
export abstract class DomainError extends Error {
  abstract readonly code: DomainErrorCode;
  /** True when the same request may succeed later (transient infrastructure trouble). */
  readonly retryable: boolean = false;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The addressed thing does not exist or is not visible to the caller (never reveals which). */
export class NotFound extends DomainError {
  readonly code = 'not_found' as const;
}

/** The command is not allowed in the aggregate's current state. */
export class IllegalState extends DomainError {
  readonly code = 'illegal_state' as const;
}

/** Optimistic concurrency or a fenced generation lost a race; reload and decide again. */
export class Conflict extends DomainError {
  readonly code = 'conflict' as const;
  override readonly retryable = true;
}

/** The input is well formed but not acceptable. `issues` lists what is wrong. */
export class ValidationError extends DomainError {
  readonly code = 'validation' as const;
  constructor(message: string, readonly issues: readonly string[] = [], options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** A dependency (NATS, Postgres, a runner) cannot answer now. */
export class Unavailable extends DomainError {
  readonly code = 'unavailable' as const;
  override readonly retryable = true;
}

/** The input is larger than the operation accepts (HTTP 413). */
export class TooLarge extends DomainError {
  readonly code = 'too_large' as const;
}

/** No or bad credentials. */
export class Unauthorized extends DomainError {
  readonly code = 'unauthorized' as const;
}

/** Authenticated, but not allowed. */
export class Forbidden extends DomainError {
  readonly code = 'forbidden' as const;
}

/** True for any of the domain errors above. */
export function isDomainError(e: unknown): e is DomainError {
  return e instanceof DomainError;
}
