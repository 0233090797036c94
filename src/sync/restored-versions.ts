// The documents a pass put back at their path because their file was missing locally (restore-local-delete: the
// base's own version), with that version. A file renamed away here then holds that version or an edit of it, which
// lets ReconcileView.ownFileByPlace take it as the document's when the service renames the folder alike later
// (black-box round 38c). Kept in the state DB, so that a restart in between changes nothing (it made the edit a
// keep-both conflict copy while this lived in memory); an entry lasts while the document's row is at that version
// and path.
import { z } from 'zod';
import { readMetaRecord, writeMetaRecord } from '../state/meta-record.js';
import type { StateStore } from '../state/store.js';

/** Meta key holding the record (JSON, see SavedSchema). */
const RESTORED_VERSIONS = 'restoredVersions';

/** documentId -> the version put back, and the path it was put back at. */
const SavedSchema = z.record(z.string(), z.object({ versionId: z.string(), relPath: z.string() }));
type Saved = z.infer<typeof SavedSchema>;
export type Restored = Saved[string];

// A damaged record is no record: such an edit is kept both ways, as without one.
const load = (store: StateStore): Saved => readMetaRecord(store, RESTORED_VERSIONS, SavedSchema);

/** The remembered documents and the version put back for each (ReconcileContext.restoredVersions). */
export function loadRestoredVersions(store: StateStore): Map<string, string> {
  return new Map(Object.entries(load(store)).map(([documentId, r]) => [documentId, r.versionId]));
}

/**
 * Adds `restored` (what this pass put back) and drops every entry whose document's row is gone, at another
 * version (a colleague's version came in, an edit went up) or at another path (the file followed its folder): the
 * rule no longer applies. Writes only when something changed.
 */
export function rememberRestoredVersions(store: StateStore, restored: ReadonlyMap<string, Restored>): void {
  const saved = load(store);
  if (restored.size === 0 && Object.keys(saved).length === 0) return;
  const next: Saved = {};
  for (const [documentId, r] of [...Object.entries(saved), ...restored]) {
    const row = store.getBase(documentId);
    if (row?.versionId === r.versionId && row.relPath === r.relPath) next[documentId] = r;
  }
  writeMetaRecord(store, RESTORED_VERSIONS, next);
}
