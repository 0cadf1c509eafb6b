import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helm';

/** Workspace folders (root package.json `workspaces`, `dir/*` globs expanded) that hold a package.json. */
export function workspaces(): string[] {
  const globs = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;
  return globs
    .flatMap((g) => (g.endsWith('/*') ? readdirSync(join(ROOT, g.slice(0, -2))).map((d) => `${g.slice(0, -2)}/${d}`) : [g]))
    .filter((d) => existsSync(join(ROOT, d, 'package.json')))
    .sort();
}

function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.ts$/.test(name) && !/\.spec(-helper)?\.ts$/.test(name) && !name.endsWith('.d.ts') ? [p] : [];
  });
}

/** The `@handplane/*` libs a package's runtime sources import (not its tests). */
function importedLibs(srcDir: string): Set<string> {
  const out = new Set<string>();
  for (const f of sources(srcDir)) for (const m of readFileSync(f, 'utf8').matchAll(/from '@handplane\/([a-z-]+)'/g)) out.add(m[1]!);
  return out;
}

/** Every lib a service needs at run time, transitively through the libs' own imports. */
export function runtimeLibs(service: string): string[] {
  const seen = new Set<string>();
  const todo = [...importedLibs(join(ROOT, 'services', service, 'src'))];
  while (todo.length > 0) {
    const lib = todo.pop()!;
    if (seen.has(lib)) continue;
    seen.add(lib);
    todo.push(...importedLibs(join(ROOT, 'libs', lib, 'src')));
  }
  return [...seen].sort();
}
