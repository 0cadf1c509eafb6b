// A rebuild in its own process, slowed down so a test can SIGKILL it mid-way (e2e/projections.int.spec.ts).
import { topology } from '@handplane/contracts';
import { connectNats, createLogger, createPool, rebuildProjection } from '@handplane/platform';
import { runsProjection } from '../../services/gateway/src/app/read-models/conversation-read-models.projection';

async function main(): Promise<void> {
  const env = process.env;
  const nats = await connectNats(env.NATS_URL!, 'rebuild-child');
  const pool = createPool(env.DATABASE_URL!, 4);
  await rebuildProjection(nats, pool, runsProjection(topology(env.NATS_PREFIX)), {
    logger: createLogger('rebuild-child', 'silent'),
    batchSize: 10,
    onBatch: () => new Promise((r) => setTimeout(r, 300)),
  });
  process.stdout.write('finished\n');
  process.exit(0);
}
void main();
