import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientCredentials, isLoopback, loadRunnerClientTls } from './runner-client';

describe('runner client TLS settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hp-tls-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, body: string) => {
    const p = join(dir, name);
    writeFileSync(p, body);
    return p;
  };

  it('is plaintext when nothing is configured', () => {
    expect(loadRunnerClientTls({})).toBeUndefined();
  });

  it('reads the three files when all are configured', () => {
    const tls = loadRunnerClientTls({ RUNNER_TLS_CERT: file('c', 'CERT'), RUNNER_TLS_KEY: file('k', 'KEY'), RUNNER_TLS_CA: file('a', 'CA') });
    expect(tls && [tls.cert.toString(), tls.key.toString(), tls.ca.toString()]).toEqual(['CERT', 'KEY', 'CA']);
  });

  it('refuses a partial configuration instead of silently falling back to plaintext', () => {
    expect(() => loadRunnerClientTls({ RUNNER_TLS_CERT: file('c2', 'CERT') })).toThrow(/must be set together/);
  });

  it('allows plaintext only to loopback runners', () => {
    expect(isLoopback('127.0.0.1:50051')).toBe(true);
    expect(isLoopback('[::1]:50051')).toBe(true);
    expect(isLoopback('10.0.0.5:50051')).toBe(false);
    expect(() => clientCredentials('runner.example:50051')).toThrow(/refusing plaintext/);
  });
});
