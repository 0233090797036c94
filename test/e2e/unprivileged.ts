// Running the CLI as an unprivileged user. Permission errors (EACCES) cannot happen for root, and CI runs as
// root, so tests of unreadable or unwritable local paths run the CLI as nobody through setpriv or runuser.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN } from './harness.js';

export const NOBODY = 65534;
export const isRoot = process.getuid?.() === 0;

/** The programs that run a command as nobody; null when neither exists. */
function switchUserPrefix(): string[] | null {
  const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
  if (has('setpriv')) return ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups'];
  if (has('runuser')) return ['runuser', '-u', 'nobody', '--'];
  return null;
}

const runsHelp = (command: string[]) => spawnSync(command[0]!, [...command.slice(1), '--help'], { stdio: 'ignore', timeout: 30_000 }).status === 0;

let mountedAt: string | null = null;

/**
 * The command (program and arguments, before the CLI's own) that runs the CLI as an unprivileged user: the plain
 * CLI when we are not root; null when impossible (no setpriv/runuser, no way to reach the checkout).
 * A checkout under a 0700 directory (fresh-ci clones into `mktemp -d`) cannot be reached by nobody: the
 * checkout is then bind-mounted at a directory nobody can reach (root may mount; released by
 * releaseUnprivileged, or at exit). Its own files keep their modes, so nothing outside the test changes.
 */
function findUnprivilegedCommand(): string[] | null {
  if (!isRoot) return [process.execPath, BIN];
  const prefix = switchUserPrefix();
  if (prefix === null) return null;
  const direct = [...prefix, process.execPath, BIN];
  if (runsHelp(direct)) return direct;
  const checkout = path.resolve(path.dirname(BIN), '..');
  const at = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-nobody-'));
  fs.chmodSync(at, 0o755);
  if (spawnSync('mount', ['--bind', checkout, at], { stdio: 'ignore' }).status !== 0) {
    fs.rmdirSync(at);
    return null;
  }
  mountedAt = at;
  process.once('exit', releaseUnprivileged);
  const viaMount = [...prefix, process.execPath, path.join(at, path.relative(checkout, BIN))];
  if (runsHelp(viaMount)) return viaMount;
  releaseUnprivileged();
  return null;
}

/** Unmounts the checkout's bind mount, if findUnprivilegedCommand made one (call from afterAll). */
export function releaseUnprivileged(): void {
  if (mountedAt === null) return;
  spawnSync('umount', ['-l', mountedAt], { stdio: 'ignore' });
  try {
    fs.rmdirSync(mountedAt);
  } catch {
    // still busy: left empty in the temp dir
  }
  mountedAt = null;
}

export const unprivilegedCommand = findUnprivilegedCommand();

/** Gives a whole tree to uid:gid (root only), so that the unprivileged user owns its workspace. */
export function chownTree(dir: string, uid = NOBODY, gid = NOBODY): void {
  fs.chownSync(dir, uid, gid);
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) chownTree(p, uid, gid);
    else fs.chownSync(p, uid, gid);
  }
}
