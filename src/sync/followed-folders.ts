// Local directories that a pass emptied by following their remote folder to its new place (a folder renamed or
// moved on the service), but that something new kept alive: a file saved there while the pass moved its
// neighbours away. Such a file has no remote folder at its path, and no synced neighbour left to show where its
// folder went (ReconcileView.followedFolderKey looks at the base), so it waited as "waiting-for-remote-folder"
// for good, where the README promises it goes into the renamed folder (black-box round 26). These directories
// are remembered, with their folder's id, for FOLLOWED_KEEP_MS, or until the directory is gone.
import { z } from 'zod';
import { readMetaRecord, writeMetaRecord } from '../state/meta-record.js';
import type { StateStore } from '../state/store.js';
import type { PathKey } from './model.js';

/** Meta key holding the record (JSON, see SavedSchema). */
const FOLLOWED_FOLDERS = 'followedFolders';

/** How long a followed directory is remembered: a week. */
export const FOLLOWED_KEEP_MS = 7 * 24 * 60 * 60 * 1000;

const SavedSchema = z.record(z.string(), z.object({ folderId: z.string(), at: z.number() }));
type Saved = z.infer<typeof SavedSchema>;

// A damaged record is no record: such a file waits, as before.
const load = (store: StateStore): Saved => readMetaRecord(store, FOLLOWED_FOLDERS, SavedSchema);

/** The remembered directories (by path key) and their folder ids, younger than FOLLOWED_KEEP_MS at `now`. */
export function loadFollowedFolders(store: StateStore, now: number): Map<PathKey, string> {
  return new Map(Object.entries(load(store)).filter(([, r]) => Math.abs(now - r.at) < FOLLOWED_KEEP_MS).map(([key, r]) => [key, r.folderId]));
}

/**
 * Adds `followed` (directory key -> folder id, the directories a pass followed that are still there) and drops
 * the entries that expired or whose directory `stillThere` says is gone. Writes only when something changed.
 */
export function rememberFollowedFolders(store: StateStore, followed: ReadonlyMap<PathKey, string>, stillThere: (key: PathKey) => boolean, now: number): void {
  const saved = load(store);
  if (followed.size === 0 && Object.keys(saved).length === 0) return;
  const next: Saved = {};
  for (const [key, r] of Object.entries(saved)) if (Math.abs(now - r.at) < FOLLOWED_KEEP_MS && stillThere(key)) next[key] = r;
  for (const [key, folderId] of followed) next[key] = { folderId, at: now };
  writeMetaRecord(store, FOLLOWED_FOLDERS, next);
}
