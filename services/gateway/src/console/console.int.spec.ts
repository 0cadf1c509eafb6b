import { Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { createLogger, listeningPort, startHttpApp } from '@handplane/platform';
import { createTokenVerifier } from '../app/auth';
import { DEV_JWT_SECRET } from '../app/dev-token';
import { HttpErrorFilter } from '../http/error-mapping';
import { LOGGER } from '../http/tokens';
import { CONTENT_SECURITY_POLICY, loadAssets } from './console-assets';
import { consoleSettings, consoleSettingsFromEnv, DEFAULT_PUBLIC_DIR, type ConsoleSettings } from './console-settings';
import { ConsoleModule } from './console.module';

// The console module on its own HTTP server, with the gateway's error mapping (no NATS or Postgres needed).
@Module({})
class ConsoleOnly {
  static register(settings: ConsoleSettings): DynamicModule {
    return {
      module: ConsoleOnly,
      imports: [ConsoleModule.register(settings)],
      providers: [
        { provide: LOGGER, useValue: createLogger('console-test', 'silent') },
        { provide: APP_FILTER, useClass: HttpErrorFilter },
      ],
    };
  }
}

async function serve(settings: ConsoleSettings): Promise<{ app: INestApplication; url: string }> {
  const app = await startHttpApp(ConsoleOnly.register(settings), 0, createLogger('console-test', 'silent'), '127.0.0.1');
  return { app, url: `http://127.0.0.1:${listeningPort(app)}` };
}

const SECRET = 'console-test-secret';

describe('web console (static files and development tokens)', () => {
  let dev: { app: INestApplication; url: string };
  let prod: { app: INestApplication; url: string };

  beforeAll(async () => {
    dev = await serve(consoleSettings({ NODE_ENV: 'development', JWT_SECRET: SECRET, JWKS_URL: '' }));
    prod = await serve(consoleSettings({ NODE_ENV: 'production', JWT_SECRET: SECRET, JWKS_URL: '' }));
  });
  afterAll(async () => {
    await dev?.app.close();
    await prod?.app.close();
  });

  it('serves the page at / with a strict Content-Security-Policy', async () => {
    const r = await fetch(`${dev.url}/`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(r.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('x-frame-options')).toBe('DENY');
    const html = await r.text();
    expect(html).toContain('<script type="module" src="/console/app.js"></script>');
    // No inline script or style: the policy would block them.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|style="/);
  });

  it('serves scripts and styles with their types and revalidates with the ETag', async () => {
    const js = await fetch(`${dev.url}/console/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const etag = js.headers.get('etag')!;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect((await fetch(`${dev.url}/console/app.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const css = await fetch(`${dev.url}/console/app.css`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
  });

  it('answers unknown or escaping paths with a JSON 404 and never reads outside public/', async () => {
    for (const path of ['/console/nope.js', '/console/../src/console/console.module.ts', '/console/%2e%2e/%2e%2e/package.json', '/console/', '/index.html.bak']) {
      const r = await fetch(`${dev.url}${path}`);
      expect(r.status).toBe(404);
      expect((await r.json()).error.code).toBe('not_found');
    }
  });

  it('has every module and file the page imports (a broken import would leave a blank page)', () => {
    const assets = loadAssets(DEFAULT_PUBLIC_DIR);
    const html = assets.get('/index.html')!.body.toString();
    for (const [, ref] of html.matchAll(/(?:src|href)="(\/console\/[^"]+)"/g)) expect(assets.has(ref!)).toBe(true);
    for (const [path, asset] of assets) {
      if (!path.endsWith('.js')) continue;
      for (const [, ref] of asset.body.toString().matchAll(/^import .* from '\.\/([\w-]+\.js)';$/gm)) expect([path, assets.has(`/console/${ref}`)]).toEqual([path, true]);
    }
  });

  it('outside production, signs a development token the gateway accepts', async () => {
    expect((await (await fetch(`${dev.url}/console/dev-token`)).json()).enabled).toBe(true);
    const r = await fetch(`${dev.url}/console/dev-token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: 'alice', tenant: 'acme' }) });
    expect(r.status).toBe(201);
    const { token } = await r.json();
    await expect(createTokenVerifier({ JWT_SECRET: SECRET, JWKS_URL: '' })(`Bearer ${token}`)).resolves.toMatchObject({ userId: 'alice', tenant: 'acme' });
    await expect(createTokenVerifier({ JWT_SECRET: 'another-secret', JWKS_URL: '' })(`Bearer ${token}`)).rejects.toThrow(/invalid token/);
    const bad = await fetch(`${dev.url}/console/dev-token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: 'a b', tenant: '' }) });
    expect(bad.status).toBe(422);
  });

  it('in production, refuses the development token endpoint', async () => {
    const status = await fetch(`${prod.url}/console/dev-token`);
    expect(status.status).toBe(403);
    const r = await fetch(`${prod.url}/console/dev-token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: 'alice', tenant: 'acme' }) });
    expect(r.status).toBe(403);
    const body = await r.json();
    expect(body.error.code).toBe('forbidden');
    expect(JSON.stringify(body)).not.toMatch(/eyJ/);
    // The page itself is still served.
    expect((await fetch(`${prod.url}/`)).status).toBe(200);
  });

  it('turns development tokens off in production and with JWKS-only auth, reading the environment like loadConfig', () => {
    expect(consoleSettings({ NODE_ENV: 'production', JWT_SECRET: 's', JWKS_URL: '' }).devTokens).toBe(false);
    expect(consoleSettings({ NODE_ENV: 'development', JWT_SECRET: DEV_JWT_SECRET, JWKS_URL: 'http://127.0.0.1:1/jwks' }).devTokens).toBe(false);
    expect(consoleSettings({ NODE_ENV: 'development', JWT_SECRET: 's', JWKS_URL: 'http://127.0.0.1:1/jwks' }).devTokens).toEqual({ secret: 's' });
    expect(consoleSettingsFromEnv({}).devTokens).toEqual({ secret: DEV_JWT_SECRET });
    expect(consoleSettingsFromEnv({ NODE_ENV: 'production', JWT_SECRET: 'x' }).devTokens).toBe(false);
  });
});
