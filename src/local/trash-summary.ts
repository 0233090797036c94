// What a pair's trash holds (for `status`): how many files, how many bytes, which days. Read-only, and bounded:
// a trash of more files than the limit is counted up to it (said as "N+"), so status stays quick.
import { listTrashEntries } from './trash-entries.js';

export interface TrashSummary {
  /** <stateDir>/<pair>/trash */
  dir: string;
  files: number;
  bytes: number;
  /** The oldest and newest day folders (YYYY-MM-DD) holding something; null when empty. */
  oldestDay: string | null;
  newestDay: string | null;
  /** More files than were counted (the walk stopped at its limit). */
  capped: boolean;
}

/**
 * Counts the files under dir's day folders, at most `limit` of them, newest days first (listTrashEntries); a
 * missing or unreadable trash is empty here (status says what it can, and `binder-sync trash` says why).
 */
export function summarizeTrash(dir: string, limit = 10_000): TrashSummary {
  let listed: ReturnType<typeof listTrashEntries>;
  try {
    listed = listTrashEntries(dir, limit);
  } catch {
    return { dir, files: 0, bytes: 0, oldestDay: null, newestDay: null, capped: false };
  }
  const { entries, capped } = listed;
  return {
    dir,
    files: entries.length,
    bytes: entries.reduce((n, e) => n + e.size, 0),
    oldestDay: entries.at(-1)?.day ?? null,
    newestDay: entries[0]?.day ?? null,
    capped,
  };
}
