import { createServer } from 'node:net';

/**
 * A TCP port of 127.0.0.1 that was free a moment ago (the OS picked it for a listener that is
 * closed again), for services that must be told their port before they start.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
