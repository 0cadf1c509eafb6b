import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Unavailable } from '@handplane/kernel';

/** A NATS connection with its JetStream client and manager. */
export interface Nats {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
}

/** Connects with unbounded reconnects (the services outlive NATS restarts). */
export async function connectNats(url: string, name: string): Promise<Nats> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url.split(','), name, maxReconnectAttempts: -1, reconnectTimeWait: 500, timeout: 5000 });
  } catch (cause) {
    throw new Unavailable(`cannot reach NATS at ${url}`, { cause });
  }
  const jsm = await jetstreamManager(nc, { timeout: 10_000 });
  const js = jetstream(nc, { timeout: 10_000 });
  return { nc, js, jsm };
}
