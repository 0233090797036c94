// Writing a few meta keys (lastError, pending counts) for `status`, whether or not the pair's state DB is open:
// a pass that failed before (or while) opening it still leaves its note.
import fs from 'node:fs';
import path from 'node:path';
import { StateStore } from './store.js';

/**
 * Sets (null: deletes) meta keys in `open`, or else in the state DB at `dbFile` through a short-lived handle.
 * `create`: make the DB (and its folder) when there is none; otherwise a missing DB is left missing.
 * Returns the error when the DB could not be written (callers only report it: these are notes, not state).
 */
export function writePairMeta(open: StateStore | undefined, dbFile: string, values: Record<string, string | null>, opts: { create: boolean }): unknown {
  let store = open;
  try {
    if (store === undefined) {
      if (!opts.create && !fs.existsSync(dbFile)) return null;
      fs.mkdirSync(path.dirname(dbFile), { recursive: true, mode: 0o700 });
      store = StateStore.open(dbFile);
    }
    const s = store;
    s.transaction(() => {
      for (const [k, v] of Object.entries(values)) {
        if (v === null) s.deleteMeta(k);
        else s.setMeta(k, v);
      }
    });
    return null;
  } catch (err) {
    return err;
  } finally {
    if (open === undefined) store?.close();
  }
}

/** Meta key: the pair's last error ('' or absent: none), what `status` shows. */
export const LAST_ERROR = 'lastError';
/**
 * Meta key: the service settings that error was met with (settingsIdentityOf). `status` under a config naming
 * others (the typo'd address just fixed) says the error was another setting's instead of showing it as the pair's
 * (black-box round 42c, P1-e). Absent in a state DB of an older build: the error is then shown as it is.
 */
export const LAST_ERROR_WITH = 'lastErrorWith';

/** The meta values that record `message` as the last error met with `settings` ('' clears both). */
export function lastErrorMeta(message: string, settings: string): Record<string, string> {
  return { [LAST_ERROR]: message, [LAST_ERROR_WITH]: message === '' ? '' : settings };
}

/** Records (in an open state DB) the pair's last error, met with `settings`; '' clears it. */
export function setLastError(store: Pick<StateStore, 'setMeta'>, message: string, settings: string): void {
  for (const [k, v] of Object.entries(lastErrorMeta(message, settings))) store.setMeta(k, v);
}
