// What a pair's trash holds, file by file (for `binder-sync trash`), and where each file came from. The trash is
// `<stateDir>/<pair>/trash/<YYYY-MM-DD>/<relPath>` (local/fs-ops.ts Trash): a name taken that day gets "~N"
// before its extension, a path whose parent is a file that day goes under a "~N/" side folder, and a path too
// long to mirror is kept as `~long/<id>/<basename>`. Such a name cannot tell its origin by itself (a user's own
// `report~2.txt` looks like the third copy of `report.txt`: black-box round 30b, F5), so the path each of them
// came from is recorded, before the file is put there, in `<day>/.binder-sync-origins/<hash of its in-day path>`.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';
import { DAEMON_FILE_PREFIX, TEMP_PREFIX } from './ignore.js';

export interface TrashEntry {
  /** `<day>/<path inside that day>`: what `trash restore` takes. */
  entry: string;
  day: string;
  /** Where it was in the sync root (see originOf): where `trash restore` puts it back. */
  originalPath: string;
  /**
   * originalPath was read from the entry's name, not from a record: an entry kept by a binder-sync that recorded
   * no origins, named like a second copy of a file kept that day (see legacyOrigin). Its own name may be meant.
   */
  originalPathGuessed: boolean;
  size: number;
  /** When its content was last modified (ISO), as kept. */
  mtime: string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The folder of a day that holds the files whose mirrored path was too long (see Trash.longPathCandidate). */
export const LONG_PATHS_DIR = '~long';
const LONG_ENTRY = /^~long\/([0-9a-f]{16})\/[^/]+$/;
/** Where versions before the origin records kept a long-path entry's origin: `~long/<id>.path`. */
const LONG_SIDECAR = /^~long\/[0-9a-f]{16}\.path$/;

/**
 * The folder of a day that holds the origin records. Its name starts with the prefix of binder-sync's own files,
 * which are never synced, so no synced file has that path (one restored there by hand is kept under a "~N/" side
 * folder: Trash.freePath).
 */
export const RECORDS_DIR = `${DAEMON_FILE_PREFIX}origins`;

/**
 * Whether a file kept at `inDay` is certainly the file of that path: the trash's naming ("~N" suffix, "~N/" side
 * folder, `~long/`) never makes such a path, and no record is ever kept for one. Any "~" and digit in it, or a
 * `~long/` start, may be the trash's, so such an entry has a record (or, kept by an older version, its origin is
 * read from its name: legacyOrigin).
 */
export function readsAsItself(inDay: string): boolean {
  return !/~\d/.test(inDay) && !inDay.startsWith(`${LONG_PATHS_DIR}/`);
}

/** Whether a file from `rel` kept at `inDay` needs its origin recorded (the listing reads the others as they are). */
export function recordNeeded(inDay: string, rel: string): boolean {
  return inDay !== rel || !readsAsItself(rel);
}

/** The in-day path of the record of where the file kept at `inDay` came from. */
export function recordPathOf(inDay: string): string {
  return `${RECORDS_DIR}/${createHash('sha256').update(inDay).digest('hex').slice(0, 32)}.path`;
}

/**
 * A copy into the trash not finished yet, or cut short by a crash (fs-ops.ts copyDurably's temp at the top of a
 * day folder): never an entry, never restored.
 */
export function isPartialCopy(inDay: string): boolean {
  return !inDay.includes('/') && inDay.startsWith(TEMP_PREFIX);
}

/** Whether `inDay` is one of the trash's records, not a kept file: never listed, never restored. */
export function isTrashRecord(dayDir: string, inDay: string): boolean {
  if (inDay.startsWith(`${RECORDS_DIR}/`)) return true;
  // An older version's long-path record, beside its entry's folder (a file of that name without one is a file).
  return LONG_SIDECAR.test(inDay) && fs.existsSync(path.join(dayDir, inDay.slice(0, -'.path'.length)));
}

/** A record's content when it is a relative path inside the root, else null (no record, or not one of ours). */
function readRecord(abs: string): string | null {
  let recorded: string;
  try {
    recorded = fs.readFileSync(abs, 'utf8');
  } catch {
    return null;
  }
  const ok = recorded !== '' && !recorded.startsWith('/') && !recorded.includes('\0') && recorded.split('/').every((p) => p !== '' && p !== '.' && p !== '..');
  return ok ? recorded : null;
}

export interface Origin {
  path: string;
  /** Read from the name of an entry an older version kept (see legacyOrigin), not known. */
  guessed: boolean;
}

/**
 * Where the file at `inDay` inside the day folder `dayDir` came from: its own path when the trash's naming cannot
 * have made it (readsAsItself), else its record; an entry with no record was kept by a version that recorded none
 * (or is a file put there by hand): legacyOrigin.
 */
export function originOf(dayDir: string, inDay: string): Origin {
  if (readsAsItself(inDay)) return { path: inDay, guessed: false };
  const recorded = readRecord(path.join(dayDir, recordPathOf(inDay)));
  if (recorded !== null) return { path: recorded, guessed: false };
  const long = LONG_ENTRY.exec(inDay);
  if (long !== null) {
    const sidecar = readRecord(path.join(dayDir, `${LONG_PATHS_DIR}/${long[1]!}.path`));
    // Without it (a crash between the two writes of an older version, a folder of the user's own named ~long):
    // named as it is.
    return { path: sidecar ?? inDay, guessed: false };
  }
  return legacyOrigin(dayDir, inDay);
}

/**
 * The origin of an entry without a record, from how older versions named entries, only where the day folder
 * shows the naming was used:
 * - a leading "~N/" is a side folder when a parent of the rest is a file in that day (the only reason one was
 *   made; synced files are never directly in the sync root, so a user's own folder "~N" never meets that);
 * - a "~N" before the extension is a copy's suffix only when the name without it is in that day too (it was added
 *   only when that name was taken, and kept files are not removed before their day is purged). A user's own
 *   `x~1.txt` kept the same day as `x.txt` still reads as a copy, the far more common case (a file replaced
 *   twice in a day): that origin is `guessed`, and the listing and restore say so. Without `x.txt` that day, the
 *   name is its own.
 */
function legacyOrigin(dayDir: string, inDay: string): Origin {
  const parts = inDay.split('/');
  if (parts.length > 1 && /^~\d+$/.test(parts[0]!)) {
    const rest = parts.slice(1);
    for (let i = 1; i < rest.length; i++) {
      const st = fs.lstatSync(path.join(dayDir, ...rest.slice(0, i)), { throwIfNoEntry: false });
      if (st !== undefined && !st.isDirectory()) return { path: rest.join('/'), guessed: false };
    }
  }
  const m = /^(.+)~\d+(\.[^.]*)?$/.exec(parts[parts.length - 1]!);
  if (m !== null) {
    const stripped = [...parts.slice(0, -1), `${m[1]}${m[2] ?? ''}`].join('/');
    if (fs.lstatSync(path.join(dayDir, stripped), { throwIfNoEntry: false }) !== undefined) return { path: stripped, guessed: true };
  }
  return { path: inDay, guessed: false };
}

/**
 * The trash's files, newest day first and by path within a day, at most `limit` of them (`capped` when there
 * are more), only those `keep` takes when given (counted before the limit). A missing trash is empty; one that
 * cannot be read is an error (LOCAL_IO); an unreadable folder inside it is skipped. The origin records are not
 * files of their own.
 */
export function listTrashEntries(dir: string, limit = 100_000, keep?: (e: TrashEntry) => boolean): { entries: TrashEntry[]; capped: boolean } {
  const entries: TrashEntry[] = [];
  let days: string[];
  try {
    days = fs.readdirSync(dir).filter((d) => DAY.test(d)).sort().reverse();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { entries, capped: false };
    // Not "empty": a trash this user may not read (the daemon's, 0700) is said as such.
    throw new BinderSyncError(`cannot read the trash ${dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, {
      code: 'LOCAL_IO',
      retryable: false,
      context: { path: dir },
      hint: 'run it as the user the daemon runs as (e.g. sudo -u binder-sync binder-sync trash ...): the stateDir is private to it',
      cause: err,
    });
  }
  for (const day of days) {
    const inDay: TrashEntry[] = [];
    const stack: string[] = [''];
    // One more than fits is enough to know there are more: a huge day is not walked to its end.
    while (stack.length > 0 && entries.length + inDay.length <= limit) {
      const rel = stack.pop()!;
      let names: fs.Dirent[];
      try {
        names = fs.readdirSync(path.join(dir, day, rel), { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of names) {
        const child = rel === '' ? e.name : `${rel}/${e.name}`;
        if (e.isDirectory()) {
          if (child !== RECORDS_DIR) stack.push(child);
        } else if (e.isFile()) {
          const dayDir = path.join(dir, day);
          if (isTrashRecord(dayDir, child) || isPartialCopy(child)) continue;
          const st = fs.lstatSync(path.join(dayDir, child), { throwIfNoEntry: false });
          if (st === undefined) continue;
          const origin = originOf(dayDir, child);
          const entry: TrashEntry = { entry: `${day}/${child}`, day, originalPath: origin.path, originalPathGuessed: origin.guessed, size: st.size, mtime: st.mtime.toISOString() };
          if (keep === undefined || keep(entry)) inDay.push(entry);
        }
      }
    }
    inDay.sort((a, b) => (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0));
    for (const e of inDay) {
      if (entries.length >= limit) return { entries, capped: true };
      entries.push(e);
    }
  }
  return { entries, capped: false };
}
