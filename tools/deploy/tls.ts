import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:tls';

/** PEM material of one side of the runner's mTLS. */
export interface Pem {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
  readonly ca: string | Buffer;
}

/**
 * A real mutual-TLS handshake on loopback, as the runner (server, client certificate required) and
 * its callers (client, server name checked) do it: the client dials 127.0.0.1 but verifies the
 * certificate against `servername`, the name it would dial in the cluster. Answers '' on success,
 * else the error of whichever side failed.
 */
export async function mtlsHandshake(server: Pem, client: Partial<Pem> & { ca: Pem['ca'] }, servername: string): Promise<string> {
  const srv = createServer({ cert: server.cert, key: server.key, ca: server.ca, requestCert: true, rejectUnauthorized: true }, (s) => s.end('ok'));
  let serverError = '';
  srv.on('tlsClientError', (e) => (serverError = e.message));
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  try {
    const { port } = srv.address() as AddressInfo;
    const sock = connect({ host: '127.0.0.1', port, servername, ca: client.ca, cert: client.cert, key: client.key });
    try {
      // TLS 1.3 reports a refused client certificate only on the first read, so read the reply.
      const reply = await new Promise<string>((resolve, reject) => {
        let data = '';
        sock.on('data', (d: Buffer) => (data += d.toString()));
        sock.on('end', () => resolve(data));
        sock.on('error', reject);
      });
      return reply === 'ok' ? '' : serverError || `no reply (${reply})`;
    } catch (e) {
      return serverError || (e as Error).message;
    } finally {
      sock.destroy();
    }
  } finally {
    srv.close();
  }
}
