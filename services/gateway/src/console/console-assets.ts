import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';

/** One static file, held in memory (the console is a few small files). */
export interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json; charset=utf-8',
};

/**
 * The console's pages may load scripts, styles and data from this origin only: no inline script or
 * style, no eval, no framing, no plugins. The bearer token lives in the page, so this is what
 * keeps injected markup from reaching it.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers sent with every console file. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    return statSync(full).isDirectory() ? walk(full) : [full];
  });
}

/**
 * Reads every file of `publicDir` with a known type once, keyed by its URL path (`/console/app.js`).
 * Requests are answered from this map only, so no request path ever reaches the file system.
 */
export function loadAssets(publicDir: string): ReadonlyMap<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of walk(publicDir)) {
    const contentType = TYPES[extname(file)];
    if (!contentType) continue;
    const body = readFileSync(file);
    const url = '/' + relative(publicDir, file).split(sep).join('/');
    assets.set(url, { body, contentType, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return assets;
}
