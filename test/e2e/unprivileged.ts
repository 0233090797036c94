// Running the CLI as an unprivileged user. Permission errors (EACCES) cannot happen for root, and CI runs as
// root, so tests of unreadable or unwritable local paths run the CLI as nobody through setpriv or runuser.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN } from './harness.js';

export const NOBODY = 65534;
export const isRoot = process.getuid?.() === 0;

/**
 * The command prefix that runs a program as an unprivileged user; [] when we are not root; null when impossible:
 * no setpriv/runuser, or that user cannot run the CLI from this checkout (e.g. a clone under a 0700 temp dir).
 */
function findUnprivilegedPrefix(): string[] | null {
  if (!isRoot) return [];
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
  const prefix = has('setpriv') ? ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'] : has('runuser') ? ['runuser', '-u', 'nobody', '--'] : null;
  if (prefix === null) return null;
  const [cmd, ...args] = [...prefix, process.execPath, BIN, '--help'];
  return spawnSync(cmd!, args, { stdio: 'ignore', timeout: 30_000 }).status === 0 ? prefix : null;
}

export const unprivilegedPrefix = findUnprivilegedPrefix();

/** Gives a whole tree to uid:gid (root only), so that the unprivileged user owns its workspace. */
export function chownTree(dir: string, uid = NOBODY, gid = NOBODY): void {
  fs.chownSync(dir, uid, gid);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) chownTree(p, uid, gid);
    else fs.chownSync(p, uid, gid);
  }
}
