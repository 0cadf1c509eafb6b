import { BadRequestException, NotFoundException } from '@nestjs/common';
import { Conflict, Forbidden, IllegalState, NotFound, Unauthorized, Unavailable, ValidationError } from '@handplane/kernel';
import { fromRpcError } from '../app/tasks';
import { toHttpError } from './error-mapping';

describe('HTTP error mapping', () => {
  it.each([
    [new ValidationError('bad', ['command: empty']), 422, 'validation'],
    [new NotFound('x'), 404, 'not_found'],
    [new Conflict('x'), 409, 'conflict'],
    [new IllegalState('x'), 409, 'illegal_state'],
    [new Unauthorized('x'), 401, 'unauthorized'],
    [new Forbidden('x'), 403, 'forbidden'],
    [new Unavailable('x'), 503, 'unavailable'],
  ])('maps %p to %i', (e, status, code) => {
    const r = toHttpError(e);
    expect(r.status).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(r.body.error.message).toBe(e.message);
  });

  it('keeps the validation issues', () => {
    expect(toHttpError(new ValidationError('bad', ['a: x', 'b: y'])).body.error.issues).toEqual(['a: x', 'b: y']);
  });

  it('maps body-parser errors by their type', () => {
    expect(toHttpError(Object.assign(new Error('too big'), { type: 'entity.too.large', status: 413 }))).toEqual({
      status: 413,
      body: { error: { code: 'too_large', message: 'the body is larger than 1 MiB' } },
    });
    expect(toHttpError(Object.assign(new SyntaxError('Unexpected end'), { type: 'entity.parse.failed', status: 400 })).status).toBe(400);
    expect(toHttpError(new BadRequestException('Unexpected end of JSON input')).body.error.code).toBe('bad_request');
  });

  it('answers unknown routes 404 and hides internal errors', () => {
    expect(toHttpError(new NotFoundException('Cannot GET /x')).body).toEqual({ error: { code: 'not_found', message: 'no such route' } });
    expect(toHttpError(new Error('password=hunter2 in a stack'))).toEqual({ status: 500, body: { error: { code: 'internal', message: 'internal error' } } });
  });

  it('turns coordinator error codes back into domain errors', () => {
    expect(toHttpError(fromRpcError({ code: 'validation', message: 'no &' })).status).toBe(422);
    expect(toHttpError(fromRpcError({ code: 'not_found', message: 'm' })).status).toBe(404);
    expect(toHttpError(fromRpcError({ code: 'conflict', message: 'm' })).status).toBe(409);
    // A budget refusal keeps its reason (issue 10.5).
    expect(toHttpError(fromRpcError({ code: 'forbidden', message: 'budget exceeded: x' }))).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: 'budget exceeded: x' } } });
    expect(toHttpError(fromRpcError({ code: 'internal', message: 'm' })).status).toBe(503);
    expect(toHttpError(fromRpcError({ code: 'unavailable', message: 'm' })).status).toBe(503);
  });
});
