// What a pass left to do, for `status`: written by the daemon after every pass and by `sync` after its pass.
import type { ActionKind } from './model.js';
import type { PassReport } from './pass.js';

export interface Pending {
  uploads: number;
  downloads: number;
}

/**
 * Planned transfers not done by the pass (all of them when a gate blocked it). A conflict not done counts as a
 * pending download: resolving it always starts by fetching the remote content.
 */
export function pendingOf(r: Pick<PassReport, 'plan' | 'execution'>): Pending {
  const planned: Partial<Record<ActionKind, number>> = { ...r.plan.blocked?.held };
  // A download-only pair's look at a file put back with an old time is no transfer (done or not, none is left).
  for (const group of r.plan.groups) for (const a of group) if (!(a.kind === 'download' && a.reason === 'earlier-version-put-back')) planned[a.kind] = (planned[a.kind] ?? 0) + 1;
  const done = r.execution?.done ?? {};
  const left = (k: ActionKind) => Math.max(0, (planned[k] ?? 0) - (done[k] ?? 0));
  // Uploads that turned out to be earlier versions put back from a backup are done too, though not as uploads.
  const restored = r.execution?.restoredStale ?? 0;
  return { uploads: Math.max(0, left('upload') - restored), downloads: left('download') + left('conflict') };
}
