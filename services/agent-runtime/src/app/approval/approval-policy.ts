import { z } from 'zod';

/**
 * Which commands the agent may run on its own and which need a person (G7). `APPROVAL_POLICY` is
 * JSON `{"requireApproval": [regex…], "autoApprove": [regex…], "default": "auto" | "human"}`,
 * matched against the whole command text: `requireApproval` first (a person decides), then
 * `autoApprove` (the policy approves, recorded as an automated approval that keeps any wait),
 * then `default` (`auto`: the command just runs, nothing is recorded). Empty: everything automatic.
 */
export interface ApprovalPolicy {
  readonly requireApproval: readonly RegExp[];
  readonly autoApprove: readonly RegExp[];
  readonly default: 'auto' | 'human';
}

export type ApprovalDecision = { readonly kind: 'none' } | { readonly kind: 'automated' | 'human'; readonly reason: string };

const schema = z
  .object({
    requireApproval: z.array(z.string()).default([]),
    autoApprove: z.array(z.string()).default([]),
    default: z.enum(['auto', 'human']).default('auto'),
  })
  .strict();

/** Everything runs automatically. */
export const AUTOMATIC: ApprovalPolicy = { requireApproval: [], autoApprove: [], default: 'auto' };

function regex(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (e) {
    throw new Error(`APPROVAL_POLICY: invalid regular expression ${JSON.stringify(source)}: ${(e as Error).message}`);
  }
}

/** Parses `APPROVAL_POLICY` (empty or absent: everything automatic); throws a clear message when invalid. */
export function parseApprovalPolicy(json: string | undefined): ApprovalPolicy {
  if (!json?.trim()) return AUTOMATIC;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error('APPROVAL_POLICY must be JSON: {"requireApproval": [regex…], "autoApprove": [regex…], "default": "auto"|"human"}');
  }
  const p = schema.safeParse(raw);
  if (!p.success) throw new Error(`APPROVAL_POLICY: ${p.error.issues.map((i) => `${i.path.join('.') || 'policy'}: ${i.message}`).join('; ')}`);
  return { requireApproval: p.data.requireApproval.map(regex), autoApprove: p.data.autoApprove.map(regex), default: p.data.default };
}

/** What the policy decides for one command. */
export function decideApproval(policy: ApprovalPolicy, command: string): ApprovalDecision {
  const human = policy.requireApproval.find((r) => r.test(command));
  if (human) return { kind: 'human', reason: `the approval policy requires a person for commands matching /${human.source}/` };
  const auto = policy.autoApprove.find((r) => r.test(command));
  if (auto) return { kind: 'automated', reason: `the approval policy approves commands matching /${auto.source}/` };
  return policy.default === 'human' ? { kind: 'human', reason: 'the approval policy requires a person for every command it does not approve' } : { kind: 'none' };
}
