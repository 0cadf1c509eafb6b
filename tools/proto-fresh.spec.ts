import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The committed generated code is exactly what `npm run proto` produces from proto/ (offline). */
describe('generated protocol code', () => {
  it('is up to date with proto/', () => {
    const root = join(__dirname, '..');
    const out = mkdtempSync(join(tmpdir(), 'hp-proto-'));
    try {
      execFileSync(process.execPath, [join(root, 'scripts', 'gen-proto.mjs')], { env: { ...process.env, PROTO_OUT: out }, stdio: 'pipe' });
      const rel = 'handplane/runner/v1/runner.ts';
      expect(readFileSync(join(out, rel), 'utf8')).toBe(readFileSync(join(root, 'libs/proto/src/gen', rel), 'utf8'));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
