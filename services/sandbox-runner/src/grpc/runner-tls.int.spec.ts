import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { loadConfig } from '@handplane/contracts';
import { createLogger, GRPC_KEEPALIVE, RunnerClients, unary } from '@handplane/platform';
import { RunnerClient, type ListRequest, type ListResponse } from '@handplane/proto';
import { NATS_URL, testNats } from '@handplane/testing';
import { codeOf, tempDataDir, type TestNats } from '../runner.spec-helper';
import { startRunner, type RunningRunner } from '../service';

/** A throw-away CA, a server certificate for 127.0.0.1 and a client certificate (openssl CLI). */
function makeCerts(dir: string) {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=handplane-test-ca', '-days', '1');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  for (const name of ['server', 'client']) {
    ssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', ...(name === 'server' ? ['-extfile', 'server.ext'] : []));
  }
  const read = (f: string) => readFileSync(join(dir, f));
  return { paths: { RUNNER_TLS_CERT: join(dir, 'server.crt'), RUNNER_TLS_KEY: join(dir, 'server.key'), RUNNER_TLS_CA: join(dir, 'ca.crt') }, client: { ca: read('ca.crt'), cert: read('client.crt'), key: read('client.key') } };
}

describe('sandbox-runner: mTLS', () => {
  let env: TestNats;
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let runner: RunningRunner;
  let certs: ReturnType<typeof makeCerts>;

  beforeAll(async () => {
    env = await testNats('runtls');
    data = await tempDataDir();
    certs = makeCerts(data.dir);
    const config = loadConfig({ NATS_URL, NATS_PREFIX: env.prefix, RUNNER_HOST: '127.0.0.1', RUNNER_PORT: '0', RUNNER_HTTP_PORT: '0' });
    runner = await startRunner(config, { dataDir: join(data.dir, 'data'), env: certs.paths, logger: createLogger('sandbox-runner-test', 'silent') });
  });
  afterAll(async () => {
    await runner?.stop();
    await env?.close();
    await data?.remove();
  });

  const list = (c: RunnerClient) => unary<ListRequest, ListResponse>(c.list.bind(c), { conversationId: '' }, 5000);

  it('answers a client with a certificate signed by the CA', async () => {
    const clients = new RunnerClients(certs.client);
    try {
      expect((await list(clients.get(`127.0.0.1:${runner.grpcPort}`))).runnerId).toBe(runner.runnerId);
    } finally {
      clients.close();
    }
  });

  it('refuses a client without a certificate, and a plaintext one', async () => {
    const address = `127.0.0.1:${runner.grpcPort}`;
    const noCert = new RunnerClient(address, credentials.createSsl(certs.client.ca), GRPC_KEEPALIVE);
    const plain = new RunnerClient(address, credentials.createInsecure(), GRPC_KEEPALIVE);
    try {
      await codeOf(list(noCert));
      await codeOf(list(plain));
    } finally {
      noCert.close();
      plain.close();
    }
  });
});
