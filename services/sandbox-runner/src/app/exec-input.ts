import { ValidationError } from '@handplane/kernel';
import { LIMITS } from '@handplane/contracts';
import type { ExecInput, Generation } from './types';

/** The Exec request as it arrives (the proto message has this shape). */
export interface RawExec {
  readonly commandId: string;
  readonly taskId: string;
  readonly conversationId: string;
  readonly tenant: string;
  readonly generation: Generation | undefined;
  readonly command: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}

/** Ids become directory names and NATS subject tokens, so they are kept to a safe alphabet. */
const ID = /^[A-Za-z0-9_-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

function idIssues(name: string, value: string): string[] {
  if (!value) return [`${name} is required`];
  return ID.test(value) ? [] : [`${name} must be 1-128 letters, digits, '_' or '-'`];
}

function commandIssues(command: string): string[] {
  if (command.trim().length === 0) return ['command must not be empty'];
  const out: string[] = [];
  if (command.includes('\0')) out.push('command must not contain NUL');
  if (bytes(command) > LIMITS.commandBytes) out.push(`command must be at most ${LIMITS.commandBytes} bytes`);
  return out;
}

function cwdIssues(cwd: string): string[] {
  if (cwd.includes('\0')) return ['cwd must not contain NUL'];
  if (bytes(cwd) > LIMITS.cwdBytes) return [`cwd must be at most ${LIMITS.cwdBytes} bytes`];
  if (cwd.startsWith('/')) return ['cwd must be relative to the workspace (no leading "/")'];
  if (cwd.split('/').includes('..')) return ['cwd must stay inside the workspace (no "..")'];
  return [];
}

function envIssues(env: Readonly<Record<string, string>>): string[] {
  const entries = Object.entries(env);
  if (entries.length > LIMITS.envEntries) return [`env must have at most ${LIMITS.envEntries} entries`];
  const out: string[] = [];
  for (const [name, value] of entries) {
    // Names only in messages: values may be secrets.
    if (!ENV_NAME.test(name)) out.push(`env name ${JSON.stringify(name.slice(0, 64))} must be letters, digits and '_' (not starting with a digit)`);
    else if (value.includes('\0')) out.push(`env ${name} must not contain NUL`);
    else if (bytes(value) > LIMITS.envValueBytes) out.push(`env ${name} must be at most ${LIMITS.envValueBytes} bytes`);
  }
  return out;
}

/** "a/./b//c/" → "a/b/c"; "" and "." → "". Assumes cwdIssues found nothing. */
export function normalizeCwd(cwd: string): string {
  return cwd
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/');
}

/** Checks an Exec request; throws ValidationError listing every problem found. */
export function parseExec(raw: RawExec): ExecInput {
  const issues = [
    ...idIssues('commandId', raw.commandId),
    ...idIssues('taskId', raw.taskId),
    ...idIssues('conversationId', raw.conversationId),
    ...(raw.tenant.includes('\0') || bytes(raw.tenant) > 256 ? ['tenant must be at most 256 bytes without NUL'] : []),
    ...(raw.generation ? [] : ['generation is required']),
    ...commandIssues(raw.command),
    ...cwdIssues(raw.cwd),
    ...envIssues(raw.env),
    ...(Number.isSafeInteger(raw.timeoutMs) && raw.timeoutMs >= 0 ? [] : ['timeoutMs must be a non-negative integer']),
  ];
  if (issues.length > 0 || !raw.generation) throw new ValidationError(`invalid Exec: ${issues.join('; ')}`, issues);
  return {
    commandId: raw.commandId,
    taskId: raw.taskId,
    conversationId: raw.conversationId,
    tenant: raw.tenant,
    generation: { epoch: raw.generation.epoch, attempt: raw.generation.attempt },
    command: raw.command,
    cwd: normalizeCwd(raw.cwd),
    env: { ...raw.env },
    timeoutMs: raw.timeoutMs,
  };
}

/** A command id given to Signal, ReadLog, Ack or Status: required; one never accepted by Exec cannot exist. */
export function requireCommandId(commandId: string): string {
  if (!commandId) throw new ValidationError('commandId is required', ['commandId is required']);
  return commandId;
}

/** True when the id could have been accepted by Exec (so it is safe as a path segment). */
export function isValidId(id: string): boolean {
  return ID.test(id);
}
