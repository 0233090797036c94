// Where synced files wait that the user moved into a folder the service does not have yet (reconcile's
// movedToWaitingFolder: the row stays, the file waits as its document's). Found by inode, or by the place its
// folder's other files went; a `sed -i` of every file there leaves neither, and the next pass forgot the rows
// (black-box round 41b, B3). What each pass found is kept in the state DB, so the next one still knows where each
// document's file waits (ReconcileContext.waitingMoves): its path, and the file there then (inode, birth time,
// content), by which it is found again where the user moved it on (the folder renamed a second time during the
// wait, after every file was saved by `sed -i`: black-box round 42b, F1), and the directory it waits in (its inode),
// which the place follows when no pass saw the files between a `sed -i` of all and the folder's next rename (black-box
// round 43a, F1). Rewritten after each pass: an entry lasts while its file waits.
import { z } from 'zod';
import { readMetaRecord, writeMetaRecord } from '../state/meta-record.js';
import type { StateStore } from '../state/store.js';
import { IN_DOUBT_PREFIX, type Issue, type LocalObservation, type WaitingPlace } from './model.js';
import { parentOf, pathKey } from './path-key.js';

/** Meta key holding the record (JSON: documentId -> where its file waits). */
const WAITING_MOVES = 'waitingMoves';
// dirInode: the directory it waits in (absent in a record of an earlier build).
const FileSchema = z.object({
  path: z.string(),
  inode: z.number().int().nonnegative(),
  bornMs: z.number().nullable(),
  sha256: z.string().nullable(),
  dirInode: z.number().int().nonnegative().optional(),
});
// A path alone: the record of a build that kept no more.
const SavedSchema = z.record(z.string(), z.union([z.string(), FileSchema]));

export function loadWaitingMoves(store: StateStore, caseInsensitive: boolean): Map<string, WaitingPlace> {
  // A damaged record is no record: the files are found by inode or place, as without one.
  const saved = readMetaRecord(store, WAITING_MOVES, SavedSchema);
  return new Map(
    Object.entries(saved).map(([id, at]) => {
      const file = typeof at === 'string' ? { path: at, inode: 0, bornMs: null, sha256: null } : at;
      return [id, { key: pathKey(file.path, caseInsensitive), inode: file.inode, bornMs: file.bornMs, sha256: file.sha256, dirInode: file.dirInode ?? 0 }];
    }),
  );
}

/** Records the synced files this pass found waiting for a remote folder (the issues that name their document), as the scan saw them. */
export function rememberWaitingMoves(store: StateStore, issues: readonly Issue[], local: LocalObservation, caseInsensitive: boolean): void {
  const next: Record<string, z.infer<typeof FileSchema>> = {};
  for (const i of issues) {
    // A file kept in doubt (reconcile keptInDoubt) keeps its place, not its identity: whose it is is the doubt.
    const inDoubt = i.code === 'unknown-state' && i.detail.startsWith(IN_DOUBT_PREFIX);
    if ((i.code !== 'waiting-for-remote-folder' && !inDoubt) || i.documentId === undefined) continue;
    const key = pathKey(i.relPath, caseInsensitive);
    const file = inDoubt ? undefined : local.files.get(key);
    const dirInode = local.dirInodes?.get(parentOf(key)) ?? 0;
    next[i.documentId] = { path: i.relPath, inode: file?.inode ?? 0, bornMs: file?.bornMs || null, sha256: file?.sha256 ?? null, dirInode };
  }
  writeMetaRecord(store, WAITING_MOVES, next);
}
