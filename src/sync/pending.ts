// What a pass left to do, for `status`: written by the daemon after every pass and by `sync` after its pass.
import type { Action, ActionKind } from './model.js';
import type { PassReport } from './pass.js';

export interface Pending {
  uploads: number;
  downloads: number;
}

/** A download-only pair's look at a file put back with an old time is no transfer (done or not, none is left). */
function isLook(a: Action): boolean {
  return a.kind === 'download' && a.reason === 'earlier-version-put-back';
}

/** The transfers in these groups. A conflict counts as a download: resolving it always starts by fetching. */
export function transfersIn(groups: readonly (readonly Action[])[]): Pending {
  const out: Pending = { uploads: 0, downloads: 0 };
  for (const group of groups) {
    for (const a of group) {
      if (a.kind === 'upload') out.uploads++;
      else if ((a.kind === 'download' && !isLook(a)) || a.kind === 'conflict') out.downloads++;
    }
  }
  return out;
}

/**
 * Planned transfers not done by the pass (all of them when a gate blocked it), and those it held back for a later
 * pass (files still being written, answers to a local delete seen a moment ago: a folder deleted waits 10 s), which
 * are pending as well: `status` said "0 downloads" while a deleted folder's files waited to be put back (black-box
 * round 38a, F3). A conflict not done counts as a pending download: resolving it always starts by fetching the
 * remote content.
 */
export function pendingOf(r: Pick<PassReport, 'plan' | 'execution' | 'deferredTransfers'>): Pending {
  const planned: Partial<Record<ActionKind, number>> = { ...r.plan.blocked?.held };
  for (const group of r.plan.groups) for (const a of group) if (!isLook(a)) planned[a.kind] = (planned[a.kind] ?? 0) + 1;
  const done = r.execution?.done ?? {};
  const left = (k: ActionKind) => Math.max(0, (planned[k] ?? 0) - (done[k] ?? 0));
  // Uploads that turned out to be earlier versions put back from a backup are done too, though not as uploads.
  const restored = r.execution?.restoredStale ?? 0;
  const later = r.deferredTransfers ?? { uploads: 0, downloads: 0 };
  // A conflict that failed at its upload (storage refused the URLs) has fetched the remote side: what is left of it
  // is an upload (black-box round 38b, F5c: status said "1 download" for a document already downloaded).
  const uploadLeft = (r.execution?.failures ?? []).filter((f) => f.kind === 'conflict' && f.code === 'STORAGE_SLOT_EXPIRED').length;
  return {
    uploads: Math.max(0, left('upload') - restored) + later.uploads + uploadLeft,
    downloads: Math.max(0, left('download') + left('conflict') - uploadLeft) + later.downloads,
  };
}
