// Where synced files wait that the user moved into a folder the service does not have yet (reconcile's
// movedToWaitingFolder: the row stays, the file waits as its document's). Found by inode, or by the place its
// folder's other files went; a `sed -i` of every file there leaves neither, and the next pass forgot the rows
// (black-box round 41b, B3). What each pass found is kept in the state DB, so the next one still knows where each
// document's file waits (ReconcileContext.waitingMoves). Rewritten after each pass: an entry lasts while its file
// waits.
import { z } from 'zod';
import { readMetaRecord, writeMetaRecord } from '../state/meta-record.js';
import type { StateStore } from '../state/store.js';
import type { Issue, PathKey } from './model.js';
import { pathKey } from './path-key.js';

/** Meta key holding the record (JSON: documentId -> relPath where its file waits). */
const WAITING_MOVES = 'waitingMoves';
const SavedSchema = z.record(z.string(), z.string());

export function loadWaitingMoves(store: StateStore, caseInsensitive: boolean): Map<string, PathKey> {
  // A damaged record is no record: the files are found by inode or place, as without one.
  const saved = readMetaRecord(store, WAITING_MOVES, SavedSchema);
  return new Map(Object.entries(saved).map(([id, relPath]) => [id, pathKey(relPath, caseInsensitive)]));
}

/** Records the synced files this pass found waiting for a remote folder (the issues that name their document). */
export function rememberWaitingMoves(store: StateStore, issues: readonly Issue[]): void {
  const next: Record<string, string> = {};
  for (const i of issues) if (i.code === 'waiting-for-remote-folder' && i.documentId !== undefined) next[i.documentId] = i.relPath;
  writeMetaRecord(store, WAITING_MOVES, next);
}
