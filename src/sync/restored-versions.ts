// The documents a pass put back at their path because their file was missing locally (restore-local-delete: the
// base's own version), with that version. A file renamed away here then holds that version or an edit of it, which
// lets ReconcileView.ownFileByPlace take it as the document's when the service renames the folder alike later
// (black-box round 38c). Kept in the state DB, so that a restart in between changes nothing (it made the edit a
// keep-both conflict copy while this lived in memory); an entry lasts while the document's row is at that version
// and is that file (its inode), wherever a remote rename moved it: the copy followed the service's folder through
// a first rename, and the folder's next rename to where the user's renamed files were then made each edit a
// conflict copy (black-box round 43c, F1). A record of an earlier build (no inode) lasts while the path is the same.
import { z } from 'zod';
import { readMetaRecord, writeMetaRecord } from '../state/meta-record.js';
import type { StateStore } from '../state/store.js';

/** Meta key holding the record (JSON, see SavedSchema). */
const RESTORED_VERSIONS = 'restoredVersions';

/** documentId -> the version put back, the path it is at, and the file put back (its inode; absent: not known). */
const SavedSchema = z.record(z.string(), z.object({ versionId: z.string(), relPath: z.string(), inode: z.number().int().nonnegative().optional() }));
type Saved = z.infer<typeof SavedSchema>;
/** What a pass put back: the version and the path. */
export type Restored = Pick<Saved[string], 'versionId' | 'relPath'>;

// A damaged record is no record: such an edit is kept both ways, as without one.
const load = (store: StateStore): Saved => readMetaRecord(store, RESTORED_VERSIONS, SavedSchema);

/** The remembered documents and the version put back for each (ReconcileContext.restoredVersions). */
export function loadRestoredVersions(store: StateStore): Map<string, string> {
  return new Map(Object.entries(load(store)).map(([documentId, r]) => [documentId, r.versionId]));
}

/**
 * Adds `restored` (what this pass put back, with the file's inode as its row has it now) and drops every entry
 * whose document's row is gone, at another version (a colleague's version came in, an edit went up), or another
 * file (the user's, taken by the place rule): the rule no longer applies. Writes only when something changed.
 */
export function rememberRestoredVersions(store: StateStore, restored: ReadonlyMap<string, Restored>): void {
  const saved = load(store);
  if (restored.size === 0 && Object.keys(saved).length === 0) return;
  const next: Saved = {};
  for (const [documentId, r] of Object.entries(saved)) {
    const row = store.getBase(documentId);
    if (row === undefined || row.versionId !== r.versionId) continue;
    const same = r.inode !== undefined && r.inode !== 0 ? row.inode === r.inode : row.relPath === r.relPath;
    if (same) next[documentId] = { ...r, relPath: row.relPath };
  }
  for (const [documentId, r] of restored) {
    const row = store.getBase(documentId);
    if (row?.versionId === r.versionId && row.relPath === r.relPath) next[documentId] = { ...r, ...(row.inode !== 0 ? { inode: row.inode } : {}) };
  }
  writeMetaRecord(store, RESTORED_VERSIONS, next);
}
