// What a pair's first opening creates in the stateDir, taken back when the opening fails. openPair creates the
// pair's folder and an empty state DB before its gates (a missing root's parent, a wrong binder, rules that do not
// fit), whose hints say "Nothing was changed." (black-box round 31b, F8): a failed first opening (of `sync`, `check`
// or the daemon) leaves the stateDir as it found it. A state DB that existed before is never touched.
import fs from 'node:fs';
import path from 'node:path';

/** SQLite's files of a state DB: the DB, and what its journal modes leave beside it. */
const DB_FILES = ['', '-wal', '-shm', '-journal'];

export interface FreshDir {
  dir: string;
  existed: boolean;
}

/** Notes whether `dir` exists now (before something may create it). */
export function noteDir(dir: string): FreshDir {
  return { dir, existed: fs.existsSync(dir) };
}

/** Removes `dir` when it did not exist when noted and is empty now; anything in it keeps it. */
export function removeIfCreatedEmpty(note: FreshDir): void {
  if (note.existed) return;
  try {
    fs.rmdirSync(note.dir);
  } catch {
    // not empty (another pair's state, a file someone put there) or already gone: kept as it is
  }
}

export interface FreshPairState {
  db: string;
  dbExisted: boolean;
  folder: FreshDir;
}

/** Notes the pair's state folder and DB before openPair. */
export function notePairState(stateDir: string, pair: string): FreshPairState {
  const folder = path.join(stateDir, pair);
  const db = path.join(folder, 'state.db');
  return { db, dbExisted: fs.existsSync(db), folder: noteDir(folder) };
}

/**
 * After openPair failed (its store is closed): removes the state DB it created, and the pair's folder when that
 * is new and empty. The DB is fresh, so it held no record of anything synced. Nothing when the DB existed before.
 */
export function undoFreshPairState(note: FreshPairState): void {
  if (note.dbExisted) return;
  for (const suffix of DB_FILES) fs.rmSync(`${note.db}${suffix}`, { force: true });
  removeIfCreatedEmpty(note.folder);
}
