import { status, type ServiceError } from '@grpc/grpc-js';
import { Conflict, IllegalState, NotFound, TooLarge, Unavailable, ValidationError, type DomainError } from '@handplane/kernel';

const detailOf = (e: unknown): string => {
  const err = e as Partial<ServiceError>;
  return err.details || err.message || String(e);
};

/**
 * The gRPC side of the error mapping: what a runner refused for good (the same request can never
 * succeed) becomes ValidationError; everything else is a runner we could not use now.
 */
export function fromGrpcError(e: unknown, what: string): DomainError {
  const detail = detailOf(e);
  switch ((e as Partial<ServiceError>).code) {
    case status.INVALID_ARGUMENT:
    case status.FAILED_PRECONDITION:
    case status.PERMISSION_DENIED:
    case status.OUT_OF_RANGE:
      return new ValidationError(`runner refused ${what}: ${detail}`, [detail], { cause: e });
    default:
      return new Unavailable(`runner could not ${what}: ${detail}`, { cause: e });
  }
}

/**
 * A Signal's errors: FAILED_PRECONDITION is the runner's generation fence (it runs another
 * generation of this command and signalled nothing), NOT_FOUND a command it does not know.
 */
export function fromSignalError(e: unknown): DomainError {
  const detail = detailOf(e);
  switch ((e as Partial<ServiceError>).code) {
    case status.FAILED_PRECONDITION:
      return new Conflict(`stale signal refused by the runner: ${detail}`, { cause: e });
    case status.NOT_FOUND:
      return new NotFound(`the runner does not know the command: ${detail}`, { cause: e });
    default:
      return fromGrpcError(e, 'signal');
  }
}

/**
 * A WriteStdin's errors: FAILED_PRECONDITION is either the generation fence ("stale …": Conflict) or a
 * stdin that is closed / a command that exited (IllegalState); ABORTED the runner's back-pressure.
 */
export function fromStdinError(e: unknown): DomainError {
  const detail = detailOf(e);
  switch ((e as Partial<ServiceError>).code) {
    case status.FAILED_PRECONDITION:
      return detail.startsWith('stale') ? new Conflict(`stale stdin write refused by the runner: ${detail}`, { cause: e }) : new IllegalState(detail, { cause: e });
    case status.ABORTED:
      return new Conflict(detail, { cause: e });
    case status.RESOURCE_EXHAUSTED:
      return new TooLarge(detail, { cause: e });
    case status.NOT_FOUND:
      return new IllegalState(`the runner does not know the command: ${detail}`, { cause: e });
    default:
      return fromGrpcError(e, 'write stdin');
  }
}

/** True for a gRPC NOT_FOUND. */
export function isNotFound(e: unknown): boolean {
  return (e as Partial<ServiceError>).code === status.NOT_FOUND;
}
