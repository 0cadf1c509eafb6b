import { status, type ServiceError } from '@grpc/grpc-js';
import { Unavailable, ValidationError, type DomainError } from '@handplane/kernel';

/**
 * The gRPC side of the error mapping: what a runner refused for good (the same request can never
 * succeed) becomes ValidationError; everything else is a runner we could not use now.
 */
export function fromGrpcError(e: unknown, what: string): DomainError {
  const err = e as Partial<ServiceError>;
  const detail = err.details || err.message || String(e);
  switch (err.code) {
    case status.INVALID_ARGUMENT:
    case status.FAILED_PRECONDITION:
    case status.PERMISSION_DENIED:
    case status.OUT_OF_RANGE:
      return new ValidationError(`runner refused ${what}: ${detail}`, [detail], { cause: e });
    default:
      return new Unavailable(`runner could not ${what}: ${detail}`, { cause: e });
  }
}

/** True for a gRPC NOT_FOUND. */
export function isNotFound(e: unknown): boolean {
  return (e as Partial<ServiceError>).code === status.NOT_FOUND;
}
