import { IllegalState, NotFound } from '@handplane/kernel';
import type { MarkDeliveredReply, MarkDeliveredRequest } from '@handplane/contracts';
import { systemMetadata, type IngestorDeps } from './deps';
import { decide } from './settle-result';

/**
 * `readable → delivered`: the result was handed to the agent or a person. Appends
 * `CommandResultDelivered` once (msg id `<commandId>:delivered`; a repeat is a no-op) and then makes
 * the cursor say `delivered` with the exit facts, so the output endpoint shows the same state. A
 * pending or unavailable result is refused (IllegalState): only a complete result is delivered.
 */
export async function markDelivered(deps: IngestorDeps, req: MarkDeliveredRequest): Promise<Extract<MarkDeliveredReply, { ok: true }>> {
  const { pool } = deps;
  const known = await pool.query('SELECT 1 FROM ingest_cursors WHERE command_id = $1', [req.commandId]);
  if (!known.rowCount) throw new NotFound(`command ${req.commandId} is not followed by the log ingestor`);
  const metadata = systemMetadata(deps.clock);
  const { events, state } = await decide(deps, req.commandId, { type: 'MarkDelivered', data: { deliveredTo: req.deliveredTo }, metadata }, `${req.commandId}:delivered`);
  if (state.status !== 'delivered') throw new IllegalState(`command ${req.commandId} is ${state.status}: not delivered`);
  // The cursor may still say result_pending after a crash between CommandResultReadable and its
  // update: the exit facts come from the aggregate, and the row leaves the claim loop.
  await pool.query(
    `UPDATE ingest_cursors SET result_state = 'delivered', end_offset = $2, exit_code = $3, signal = $4, owner = NULL, lease_until = NULL, updated_at = now()
     WHERE command_id = $1 AND result_state <> 'unavailable'`,
    [req.commandId, state.exit.endOffset, state.exit.exitCode, state.exit.signal],
  );
  return { ok: true, resultState: 'delivered', appended: events.length > 0 };
}
