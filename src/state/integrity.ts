// Damage inside a state DB, found when it is opened rather than when a pass first reads the damaged pages
// (black-box round 37b, F5): garbage written over the pages of the `base` table while nothing ran left a file of
// the right length, which `status` showed healthy and a no-change `sync` reported "in sync" (exit 0), since the
// in-sync shortcut (sync/in-sync-mark.ts) never reads the base; only the first pass with a real change refused it.
//
// SQLite's `PRAGMA quick_check` walks every page of every table and index (structure, cell bounds, free list, each
// page used once; not whether each index matches its table, which integrity_check adds). Measured on a
// state DB of 100,000 base rows (39-41 MB, page cache 2 MB as StateStore.open sets it, the file in the OS cache):
// quick_check 50 ms, integrity_check 220-235 ms. A cheaper walk (count(*) of each table NOT INDEXED with
// cell_size_check on: 18 ms) is not sound: over 60 copies with one page damaged (whole-page garbage or 64 bytes),
// quick_check found 46, the walk 30 (it missed whole-page garbage 3 times), and none quick_check missed. In a
// no-op `sync` over 100k files the check runs while the digest worker starts and the binder's elements are asked
// for (openPair): 15 interleaved runs each on 2 cores, wall 0.86-0.88 s before and 0.87-0.89 s after (the lowest
// five), CPU median 1.41 s before, 1.42 s after.
import type Database from 'better-sqlite3';
import { BinderSyncError } from '../errors.js';

/** Findings of quick_check kept (it stops after this many): enough to say where, not a page of noise. */
const MAX_FINDINGS = 3;

/**
 * What SQLite's quick_check finds wrong in `db`: empty when nothing. A DB too damaged to be checked at all (its
 * first page or schema unreadable) gives SQLite's error as the one finding; other errors (busy, I/O) are thrown.
 */
export function quickCheckFindings(db: Database.Database): string[] {
  let rows: unknown[];
  try {
    rows = db.prepare(`PRAGMA quick_check(${MAX_FINDINGS})`).pluck(true).all();
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || (typeof code === 'string' && code.startsWith('SQLITE_CORRUPT_'))) {
      return [(err as Error).message];
    }
    throw err;
  }
  const found = rows.map(String);
  return found.length === 1 && found[0] === 'ok' ? [] : found;
}

/**
 * STATE_CORRUPT (exit 6) for a state DB whose quick_check found `findings`, naming the pair and the file. The hint
 * is the one docs/OPERATIONS.md ("A damaged or deleted state DB") gives for every damaged state DB.
 */
export function damagedStateDbError(pair: string, file: string, findings: readonly string[]): BinderSyncError {
  // The first finding starts with "*** in database main ***" on a line of its own: the DB is always main here.
  const said = findings.map((f) => f.replace(/^\*\*\* in database \w+ \*\*\*\s*/, '').replace(/\s+/g, ' ').trim()).join('; ');
  return new BinderSyncError(`pair ${pair}: its state DB ${file} is damaged (SQLite's quick_check: ${said}): the record of what was synced cannot be trusted, and no pass runs for this pair until the file is mended`, {
    code: 'STATE_CORRUPT',
    retryable: false,
    context: { pair, file, findings: [...findings] },
    hint: 'restore it from a backup, or move it aside (e.g. add .broken to its name, with its -wal and -shm if there are any) to rebuild the state: the next pass then compares content, and differences become conflicts, never overwrites',
  });
}
