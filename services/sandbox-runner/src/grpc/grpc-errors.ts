import { status, type ServiceError } from '@grpc/grpc-js';
import { Metadata } from '@grpc/grpc-js';
import { isDomainError, type DomainErrorCode } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import { OffsetOutOfRange } from '../app/errors';

const CODES: Record<DomainErrorCode, status> = {
  not_found: status.NOT_FOUND,
  validation: status.INVALID_ARGUMENT,
  // A stale generation or an Exec that reuses a commandId for another attempt.
  illegal_state: status.FAILED_PRECONDITION,
  conflict: status.ABORTED,
  unavailable: status.UNAVAILABLE,
  unauthorized: status.UNAUTHENTICATED,
  forbidden: status.PERMISSION_DENIED,
  too_large: status.RESOURCE_EXHAUSTED,
  rate_limited: status.RESOURCE_EXHAUSTED,
};

/** The gRPC side of the error mapping: domain errors keep their message, anything else is INTERNAL. */
export function toGrpcError(e: unknown, logger: Logger, method: string): Partial<ServiceError> {
  if (e instanceof OffsetOutOfRange) return { code: status.OUT_OF_RANGE, details: e.message, metadata: new Metadata() };
  if (isDomainError(e)) return { code: CODES[e.code], details: e.message, metadata: new Metadata() };
  logger.error({ err: e, method }, 'runner call failed');
  return { code: status.INTERNAL, details: 'internal error', metadata: new Metadata() };
}
