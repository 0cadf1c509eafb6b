import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** The determinism boundary (STYLE.md rule 1) is enforced by lint: these cases must fail it. */
describe('lint boundary of pure domain code', () => {
  const root = join(__dirname, '..');
  // ESLint's flat config is ESM, which Jest's VM cannot import: run the real CLI, as CI does.
  const lint = async (code: string, file = 'libs/domain/src/task/probe.ts') => {
    const r = spawnSync(process.execPath, [join(root, 'node_modules/eslint/bin/eslint.js'), '--stdin', '--stdin-filename', join(root, file), '--format', 'json'], { input: code, cwd: root, encoding: 'utf8' });
    const [report] = JSON.parse(r.stdout) as { messages: { ruleId: string | null }[] }[];
    return report!.messages.map((m) => m.ruleId);
  };

  it.each([
    ["import { readFileSync } from 'node:fs';\nexport const x = readFileSync;", 'no-restricted-imports'],
    ["import { randomUUID } from 'crypto';\nexport const x = randomUUID;", 'no-restricted-imports'],
    ["import { Injectable } from '@nestjs/common';\nexport const x = Injectable;", 'no-restricted-imports'],
    ["import { connect } from '@nats-io/transport-node';\nexport const x = connect;", 'no-restricted-imports'],
    ["import { DataSource } from 'typeorm';\nexport const x = DataSource;", 'no-restricted-imports'],
    ["import { Pool } from 'pg';\nexport const x = Pool;", 'no-restricted-imports'],
    ["import { loadConfig } from '@handplane/platform';\nexport const x = loadConfig;", 'no-restricted-imports'],
    ['export const t = Date.now();', 'no-restricted-properties'],
    ['export const r = Math.random();', 'no-restricted-properties'],
    ['export const d = new Date();', 'no-restricted-syntax'],
    ['export const e = process.env.X;', 'no-restricted-globals'],
  ])('refuses %s', async (code, rule) => {
    expect(await lint(code)).toContain(rule);
  });

  it('accepts pure code that uses the kernel', async () => {
    expect(await lint("import { IllegalState } from '@handplane/kernel';\nexport const e = (m: string) => new IllegalState(m);")).toEqual([]);
  });

  it('allows the same imports outside the domain', async () => {
    expect(await lint("import { readFileSync } from 'node:fs';\nexport const x = readFileSync;", 'services/gateway/src/probe.ts')).toEqual([]);
  });
});
