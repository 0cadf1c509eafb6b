import { Conflict, Forbidden, IllegalState, NotFound, TooLarge, Unavailable, ValidationError, type DomainError } from '@handplane/kernel';
import type { RpcError } from '@handplane/contracts';

/**
 * The coordinator's `{code, message}` back as the domain error it stands for (mapped to HTTP in
 * one place). Codes it should never send (internal, unknown) become Unavailable: our trouble.
 */
export function fromRpcError(e: RpcError, what = 'the coordinator could not do it'): DomainError {
  switch (e.code) {
    case 'validation':
      return new ValidationError(e.message, [e.message]);
    case 'not_found':
      return new NotFound(e.message);
    case 'conflict':
      return new Conflict(e.message);
    case 'illegal_state':
      return new IllegalState(e.message);
    // A budget refused the task (issue 10.5): the coordinator's message says which and why.
    case 'forbidden':
      return new Forbidden(e.message);
    case 'too_large':
      return new TooLarge(e.message);
    default:
      return new Unavailable(`${what}: ${e.message}`);
  }
}
