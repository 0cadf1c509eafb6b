import { connect } from 'node:net';

/** How long a port probe waits for the connection. */
export const PORT_PROBE_TIMEOUT_MS = 1000;

/** Whether a TCP connection to the host's loopback `port` is accepted (condition waits, issue 10.1). */
export function probePort(port: number, host = '127.0.0.1', timeoutMs = PORT_PROBE_TIMEOUT_MS): Promise<{ satisfied: boolean; detail: string }> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (satisfied: boolean, detail: string) => {
      socket.removeAllListeners();
      socket.on('error', () => undefined);
      socket.destroy();
      resolve({ satisfied, detail });
    };
    socket.setTimeout(timeoutMs, () => done(false, `port ${port} did not answer within ${timeoutMs} ms`));
    socket.once('connect', () => done(true, `port ${port} accepted a connection`));
    socket.once('error', (e: NodeJS.ErrnoException) => done(false, `port ${port} is not open (${e.code ?? e.message})`));
  });
}
