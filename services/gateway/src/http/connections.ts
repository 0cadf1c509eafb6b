import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Tracks the server's sockets so shutdown does not wait on clients: `server.close()` leaves
 * keep-alive sockets that never sent a request (clients pre-connect) open until they time out.
 */
export function trackConnections(server: Server): { shutdown(graceMs: number): () => void } {
  const inFlight = new Map<Socket, number>();
  let closing = false;
  server.on('connection', (s: Socket) => {
    inFlight.set(s, 0);
    s.once('close', () => inFlight.delete(s));
  });
  server.on('request', (req, res) => {
    const s = req.socket;
    inFlight.set(s, (inFlight.get(s) ?? 0) + 1);
    res.once('close', () => {
      const n = (inFlight.get(s) ?? 1) - 1;
      inFlight.set(s, n);
      if (closing && n === 0) s.destroy();
    });
  });
  return {
    /** Closes idle sockets now, busy ones when their response is done, and all after `graceMs`; returns a cancel. */
    shutdown(graceMs) {
      closing = true;
      for (const [s, n] of inFlight) if (n === 0) s.destroy();
      const t = setTimeout(() => [...inFlight.keys()].forEach((s) => s.destroy()), graceMs);
      t.unref();
      return () => clearTimeout(t);
    },
  };
}
