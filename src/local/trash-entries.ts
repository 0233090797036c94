// What a pair's trash holds, file by file (for `binder-sync trash`), and where each file came from. The trash is
// `<stateDir>/<pair>/trash/<YYYY-MM-DD>/<relPath>` (local/fs-ops.ts Trash): a name taken that day gets "~N"
// before its extension, a path whose parent is a file that day goes under a "~N/" side folder, and a path too
// long to mirror is kept as `~long/<id>/<basename>` with its original path in `~long/<id>.path`.
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError } from '../errors.js';

export interface TrashEntry {
  /** `<day>/<path inside that day>`: what `trash restore` takes. */
  entry: string;
  day: string;
  /** Where it most likely was in the sync root (see originalPathOf): where `trash restore` puts it back. */
  originalPath: string;
  size: number;
  /** When its content was last modified (ISO), as kept. */
  mtime: string;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The folder of a day that holds the files whose mirrored path was too long (see Trash.longPathCandidate). */
export const LONG_PATHS_DIR = '~long';
const LONG_ENTRY = /^~long\/([0-9a-f]{16})\/[^/]+$/;
const LONG_SIDECAR = /^~long\/[0-9a-f]{16}\.path$/;

/** The in-day path of the file naming where the long-path entry `id` came from. */
export function longEntrySidecar(id: string): string {
  return `${LONG_PATHS_DIR}/${id}.path`;
}

/**
 * Where the file at `inDay` inside the day folder `dayDir` came from: a long-path entry's recorded path (when its
 * record is there and reads as a relative path), else by the trash's naming (originalPathOf).
 */
export function originalPathIn(dayDir: string, inDay: string): string {
  const m = LONG_ENTRY.exec(inDay);
  if (m !== null) {
    let recorded: string | null = null;
    try {
      recorded = fs.readFileSync(path.join(dayDir, longEntrySidecar(m[1]!)), 'utf8');
    } catch {
      /* no record (a crash between the two writes, or a folder of the user's own named ~long): named as it is */
    }
    if (recorded !== null && recorded !== '' && !recorded.startsWith('/') && !recorded.includes('\0') && recorded.split('/').every((p) => p !== '' && p !== '.' && p !== '..')) return recorded;
  }
  return originalPathOf(inDay);
}

/**
 * The trash's files, newest day first and by path within a day, at most `limit` of them (`capped` when there
 * are more). A missing trash is empty; one that cannot be read is an error (LOCAL_IO); an unreadable folder inside
 * it is skipped.
 */
export function listTrashEntries(dir: string, limit = 100_000): { entries: TrashEntry[]; capped: boolean } {
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
        if (e.isDirectory()) stack.push(child);
        else if (e.isFile()) {
          // A long-path entry's record is not content of its own.
          if (LONG_SIDECAR.test(child) && fs.existsSync(path.join(dir, day, child.slice(0, -'.path'.length)))) continue;
          const st = fs.lstatSync(path.join(dir, day, child), { throwIfNoEntry: false });
          if (st === undefined) continue;
          inDay.push({ entry: `${day}/${child}`, day, originalPath: originalPathIn(path.join(dir, day), child), size: st.size, mtime: st.mtime.toISOString() });
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

/**
 * The sync-root path a file kept in the trash came from, by the trash's naming: a leading "~N/" side folder and
 * a "~N" before the extension are the trash's own. A file whose real name ends in "~N" is read as such a
 * suffix: `trash restore --to` names the path then.
 */
export function originalPathOf(inDay: string): string {
  const parts = inDay.split('/');
  if (parts.length > 1 && /^~\d+$/.test(parts[0]!)) parts.shift();
  const base = parts[parts.length - 1]!;
  const m = /^(.+)~\d+(\.[^.]*)?$/.exec(base);
  if (m) parts[parts.length - 1] = `${m[1]}${m[2] ?? ''}`;
  return parts.join('/');
}
