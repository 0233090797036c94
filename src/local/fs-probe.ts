// Probes properties of the filesystem holding the sync root (today: whether it ignores case).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DAEMON_FILE_PREFIX } from './ignore.js';

/**
 * True when `dir`'s filesystem treats names differing only in case as the same file (macOS/Windows
 * defaults, FAT, case-folded ext4 dirs). Creates a mixed-case probe file, looks it up under the
 * upper-case spelling, and removes it. Throws the fs error when dir is not writable.
 */
export function detectCaseInsensitive(dir: string): boolean {
  const name = `${DAEMON_FILE_PREFIX}probe-${randomBytes(6).toString('hex')}-case`;
  const probe = path.join(dir, name);
  fs.closeSync(fs.openSync(probe, 'wx', 0o600));
  try {
    const other = fs.lstatSync(path.join(dir, name.toUpperCase()), { throwIfNoEntry: false });
    return other !== undefined;
  } finally {
    fs.rmSync(probe, { force: true });
  }
}
