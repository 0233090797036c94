// A listing that shows a document at a version older than the one synced. The spec says nothing of when a commit
// shows in search (POST /documents): a search index that lags behind commits, as the search engines behind such
// services do, lists a document just committed at its version before, for seconds. Taken as a change, that sent
// our own edit's previous version back down over it, or made the next edit a conflict with a version that is
// older than ours, a conflict copy of the user's own work (black-box round 35a, F1). A document listed at a version
// its base row held before (the state DB records each one: migration 7) is taken as listed at the synced one.
// Its name and folder are kept as listed: a rename is a change whichever way it came. Pure.
import type { BaseEntry } from '../sync/model.js';
import type { RawDoc } from './listing.js';

/**
 * Puts back each document of `docs` listed at a version its base row held before its present one (`superseded`)
 * to the base row's version. Returns the ids of those documents.
 */
export function settleOlderThanSynced(
  docs: Map<string, RawDoc>,
  base: ReadonlyMap<string, Pick<BaseEntry, 'versionId'>>,
  superseded: ReadonlyMap<string, ReadonlySet<string>>,
): string[] {
  const settled: string[] = [];
  if (superseded.size === 0) return settled;
  for (const [id, doc] of docs) {
    const synced = base.get(id)?.versionId;
    if (synced === undefined || doc.versionId === synced || superseded.get(id)?.has(doc.versionId) !== true) continue;
    docs.set(id, { ...doc, versionId: synced });
    settled.push(id);
  }
  return settled;
}
