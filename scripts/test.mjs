#!/usr/bin/env node
// `npm test`: every test, from a fresh clone. Installs dependencies if needed, makes sure NATS and
// Postgres are up, builds (the e2e tier starts the built services), lints, then runs the three
// Jest tiers and prints one plain summary line: "tests: N passed, N failed, N skipped".
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDependencies, log, root, run } from './lib.mjs';

const args = process.argv.slice(2);
ensureDependencies();
const { ensureInfra, ensureChromium, ensureComposeValidator } = await import('./infra.mjs');
await ensureInfra();
ensureChromium();
ensureComposeValidator();
log('building');
run('npx', ['tsc', '-b', 'tsconfig.build.json']);
log('linting');
const lint = spawnSync('npx', ['eslint', '.', '--max-warnings=0'], { stdio: 'inherit', cwd: root });
if (lint.status !== 0) log('lint failed (the tests still run; the result will be a failure)');

mkdirSync(join(root, 'artifacts'), { recursive: true });
const report = join(root, 'artifacts', 'jest-report.json');
log('running tests');
const r = spawnSync('npx', ['jest', '--ci', '--maxWorkers=2', '--json', `--outputFile=${report}`, ...args], { stdio: 'inherit', cwd: root });
let summary = null;
if (existsSync(report)) {
  const j = JSON.parse(readFileSync(report, 'utf8'));
  summary = { passed: j.numPassedTests, failed: j.numFailedTests + j.numRuntimeErrorTestSuites, skipped: j.numPendingTests + j.numTodoTests };
}
if (summary) console.log(`\ntests: ${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped`);
if (summary && summary.passed === 0) {
  console.error('no test ran');
  process.exit(1);
}
process.exit(r.status === 0 && lint.status === 0 ? 0 : 1);
