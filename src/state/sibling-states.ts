// The other pairs' states in a stateDir, read without writing anything: a pair's checks on open look at them to
// tell a swapped or renamed folder (moved-root.ts, open-pair.ts).
import fs from 'node:fs';
import path from 'node:path';
import { StateStore } from './store.js';

/**
 * A state DB opened to read it only. With no -wal file beside it, nobody has it open and the file holds
 * everything: it is read into memory, since a read-only open would leave a -wal and a -shm behind.
 */
export function openForReading(file: string): StateStore {
  return StateStore.openReadOnly(file, { inMemory: !fs.existsSync(`${file}-wal`) });
}

/**
 * The name of the first pair directory of stateDir other than `except` whose state DB `matches`; null when none
 * does. A state that cannot be read is no evidence either way and is passed over.
 */
export function findSiblingState(stateDir: string, except: string, matches: (state: StateStore) => boolean): string | null {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(stateDir, { withFileTypes: true });
  } catch {
    return null;
  }
  for (const e of entries) {
    const file = path.join(stateDir, e.name, 'state.db');
    if (!e.isDirectory() || e.name === except || !fs.existsSync(file)) continue;
    let state: StateStore | undefined;
    try {
      state = openForReading(file);
      if (matches(state)) return e.name;
    } catch {
      // unreadable: no evidence either way
    } finally {
      state?.close();
    }
  }
  return null;
}
