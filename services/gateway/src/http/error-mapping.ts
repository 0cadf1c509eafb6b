import { Catch, HttpException, Inject, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { isDomainError, ValidationError, type DomainErrorCode } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import { RateLimited } from '../app/rate-limit';
import { LOGGER } from './tokens';

/** The one HTTP error shape: `{error: {code, message}}` (plus `issues` for validation). */
export interface HttpError {
  status: number;
  body: { error: { code: string; message: string; issues?: readonly string[] } };
  headers?: Record<string, string>;
}

const STATUS: Record<DomainErrorCode, number> = {
  validation: 422,
  not_found: 404,
  conflict: 409,
  illegal_state: 409,
  unauthorized: 401,
  forbidden: 403,
  too_large: 413,
  rate_limited: 429,
  unavailable: 503,
};

// Errors that body-parser hands to Express (`type` says which), before any handler runs.
const BODY_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  'entity.parse.failed': { status: 400, code: 'bad_request', message: 'the body is not valid JSON' },
  'entity.too.large': { status: 413, code: 'too_large', message: 'the body is larger than 1 MiB' },
  'entity.verify.failed': { status: 400, code: 'bad_request', message: 'the body could not be verified' },
  'request.aborted': { status: 400, code: 'bad_request', message: 'the request was aborted' },
  'request.size.invalid': { status: 400, code: 'bad_request', message: 'the body does not match its Content-Length' },
  'encoding.unsupported': { status: 415, code: 'unsupported_media_type', message: 'unsupported content encoding' },
  'charset.unsupported': { status: 415, code: 'unsupported_media_type', message: 'unsupported charset' },
};

const HTTP_CODES: Record<number, string> = { 400: 'bad_request', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 405: 'method_not_allowed', 413: 'too_large', 415: 'unsupported_media_type' };

const shape = (status: number, code: string, message: string, issues?: readonly string[]): HttpError => ({
  status,
  body: { error: { code, message, ...(issues && issues.length ? { issues } : {}) } },
});

/** Maps anything thrown while serving a request to a status and the JSON error body. */
export function toHttpError(e: unknown): HttpError {
  if (e instanceof RateLimited) return { ...shape(429, e.code, e.message), headers: { 'Retry-After': String(e.retryAfterSeconds) } };
  if (isDomainError(e)) return shape(STATUS[e.code] ?? 500, e.code, e.message, e instanceof ValidationError ? e.issues : undefined);
  const bodyError = BODY_ERRORS[String((e as { type?: unknown })?.type)];
  if (bodyError) return shape(bodyError.status, bodyError.code, bodyError.message);
  if (e instanceof HttpException) {
    const status = e.getStatus();
    // Nest turns body-parser's SyntaxError into a 400 HttpException: that is malformed JSON.
    if (status === 400) return shape(400, 'bad_request', `malformed request: ${e.message}`);
    if (status === 404) return shape(404, 'not_found', 'no such route');
    return shape(status, HTTP_CODES[status] ?? (status < 500 ? 'bad_request' : 'internal'), e.message);
  }
  return shape(500, 'internal', 'internal error');
}

/** The Nest side of the mapping: every error of every route (and unknown routes) answers JSON. */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const { status, body, headers } = toHttpError(exception);
    if (status >= 500) this.logger.error({ err: exception, status }, 'request failed');
    // Once a stream (SSE, output) has started, the status line is gone: just end it.
    if (res.headersSent) {
      res.end();
      return;
    }
    if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer');
    for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
    res.status(status).json(body);
  }
}
