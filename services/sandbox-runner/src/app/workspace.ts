import { mkdir, realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { ValidationError } from '@handplane/kernel';

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The conversation's workspace (`<data>/workspaces/<conversationId>`, created on demand) and the
 * absolute working directory for `cwd` inside it. Symlinks are resolved, so a link that leads out
 * of the workspace is refused like a `..`.
 */
export async function resolveWorkspaceCwd(workspacesRoot: string, conversationId: string, cwd: string): Promise<{ workspace: string; cwd: string }> {
  const dir = join(workspacesRoot, conversationId);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const workspace = await realpath(dir);
  if (!cwd) return { workspace, cwd: workspace };
  let real: string;
  try {
    real = await realpath(join(workspace, cwd));
  } catch {
    throw new ValidationError(`cwd ${JSON.stringify(cwd)} does not exist in the workspace`, ['cwd does not exist']);
  }
  if (real !== workspace && !real.startsWith(workspace + sep)) throw new ValidationError(`cwd ${JSON.stringify(cwd)} leads out of the workspace`, ['cwd escapes the workspace']);
  if (!(await stat(real)).isDirectory()) throw new ValidationError(`cwd ${JSON.stringify(cwd)} is not a directory`, ['cwd is not a directory']);
  return { workspace, cwd: real };
}

/**
 * A minimal base environment plus the request's own: nothing of the runner's environment (its
 * credentials included) leaks into a command.
 */
export function commandEnv(workspace: string, requested: Readonly<Record<string, string>>, path = process.env.PATH || DEFAULT_PATH): Record<string, string> {
  return { PATH: path, HOME: workspace, LANG: 'C.UTF-8', TERM: 'dumb', ...requested };
}

/**
 * Whether `path` exists inside the conversation's workspace (condition waits, issue 10.1). Only
 * relative paths without `..` are accepted; symlinks are resolved, and one that leads out of the
 * workspace is refused like a `..` (never a probe of the host's files).
 */
export async function probeWorkspacePath(workspacesRoot: string, conversationId: string, path: string): Promise<{ satisfied: boolean; detail: string }> {
  if (!path || path.includes('\0') || path.startsWith('/') || path.split('/').includes('..')) {
    throw new ValidationError(`path ${JSON.stringify(path)} must be relative to the workspace, without ".."`, ['path escapes the workspace']);
  }
  const workspace = await realpath(join(workspacesRoot, conversationId)).catch(() => undefined);
  if (!workspace) return { satisfied: false, detail: `${path} does not exist (no workspace yet)` };
  let real: string;
  try {
    real = await realpath(join(workspace, path));
  } catch {
    return { satisfied: false, detail: `${path} does not exist` };
  }
  if (real !== workspace && !real.startsWith(workspace + sep)) throw new ValidationError(`path ${JSON.stringify(path)} leads out of the workspace`, ['path escapes the workspace']);
  return { satisfied: true, detail: `${path} exists` };
}
