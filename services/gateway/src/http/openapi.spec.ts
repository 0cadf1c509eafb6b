import 'reflect-metadata';
import { RequestMethod, type DynamicModule, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { AppModule, type GatewayModuleDeps } from '../app.module';
import { openApiDocument } from './openapi';

/** Every controller of a module and the modules it imports. */
function controllersOf(m: DynamicModule | Type): Type[] {
  const d = m as DynamicModule;
  const own = (d.controllers ?? (Reflect.getMetadata('controllers', m) as Type[] | undefined) ?? []) as Type[];
  const imported = ((d.imports ?? []) as (DynamicModule | Type)[]).flatMap(controllersOf);
  return [...own, ...imported];
}

const join = (...parts: string[]) => `/${parts.flatMap((p) => p.split('/')).filter(Boolean).join('/')}`;
// Nest/Express 5 paths to OpenAPI paths: `:id` → `{id}`, `*path` → `{path}`.
const toOpenApi = (path: string) => path.replace(/:([A-Za-z]+)/g, '{$1}').replace(/\*([A-Za-z]+)/g, '{$1}');

/** Every route Nest registers for the gateway, as `METHOD /path`. */
function servedRoutes(): string[] {
  const module = AppModule.register({} as GatewayModuleDeps);
  const routes: string[] = [];
  for (const c of controllersOf(module)) {
    const base = (Reflect.getMetadata(PATH_METADATA, c) as string | undefined) ?? '';
    for (const name of Object.getOwnPropertyNames(c.prototype)) {
      const handler = c.prototype[name] as object;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      const path = Reflect.getMetadata(PATH_METADATA, handler) as string | undefined;
      if (method === undefined || path === undefined) continue;
      routes.push(`${RequestMethod[method]} ${toOpenApi(join(base, path))}`);
    }
  }
  return routes.sort();
}

describe('OpenAPI document', () => {
  const doc = openApiDocument() as { openapi: string; paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
  const documented = Object.entries(doc.paths)
    .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();

  it('documents every route the app serves, and nothing it does not serve', () => {
    const served = servedRoutes();
    expect(served.length).toBeGreaterThan(15); // the walk really found the controllers
    expect(served).toEqual(documented);
  });

  it('covers DESIGN.md §7', () => {
    for (const route of [
      'POST /v1/conversations',
      'GET /v1/conversations/{id}',
      'POST /v1/conversations/{id}/members',
      'POST /v1/conversations/{id}/messages',
      'POST /v1/conversations/{id}/commands',
      'GET /v1/conversations/{id}/tasks',
      'GET /v1/tasks/{taskId}',
      'GET /v1/tasks/{taskId}/output',
      'POST /v1/tasks/{taskId}/stop',
      'POST /v1/tasks/{taskId}/stdin',
      'POST /v1/conversations/{id}/stop-all',
      'POST /v1/conversations/{id}/approvals/{approvalId}',
      'POST /v1/conversations/{id}/questions/{questionId}/answer',
      'GET /v1/conversations/{id}/events',
      'GET /v1/conversations/{id}/audit',
      'GET /v1/tasks/{taskId}/audit',
      'GET /v1/tasks/{taskId}/output/follow',
      'GET /healthz',
      'GET /readyz',
      'GET /v1/tasks',
      'GET /v1/conversations/{id}/runs',
      'GET /v1/conversations/{id}/todos',
      'GET /v1/conversations/{id}/queue',
      'GET /v1/tasks/{taskId}/commands',
      'GET /v1/tasks/{taskId}/commands/{commandId}/log-index',
    ])
      expect(documented).toContain(route);
  });

  it('is OpenAPI 3.1 whose references all resolve, with 401 and 429 on every authenticated route', () => {
    expect(doc.openapi).toBe('3.1.0');
    const text = JSON.stringify(doc);
    const schemas = (doc as unknown as { components: { schemas: Record<string, unknown> } }).components.schemas;
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([A-Za-z]+)"/g)) expect(Object.keys(schemas)).toContain(name);
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!path.startsWith('/v1/')) continue;
      for (const op of Object.values(ops)) expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['401', '429']));
    }
  });
});
