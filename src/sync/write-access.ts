// What a pair knows about its write access. The spec has no "whoami": a slot request answered 403 says the
// client is read-only (probed once per process, one request, nothing sent). But a server may hand out slots
// to any authenticated client (spec 3) and refuse only the commit, which comes after the file's bytes were
// PUT. Such a refusal is kept in the state DB, so that the next process (the next `sync` of a cron job, a
// restarted daemon) does not send every changed file again to learn the same thing: it sends one upload first
// (the smallest: a trial), and the others only once that one is committed. A pass that went download-only
// looks again after a while (WRITE_ACCESS_RECHECK_MS), so access granted later is picked up without a restart.
import type { StateStore } from '../state/store.js';
import type { Action, Plan } from './model.js';

/** Meta key: when the service last refused a commit for lack of write access (ms since the epoch). */
const COMMITS_REFUSED_AT = 'commitsRefusedAt';

/** How long a process that found the client read-only stays download-only before it checks again: an hour. */
export const WRITE_ACCESS_RECHECK_MS = 60 * 60 * 1000;

/** When commits were last refused for lack of write access, or null (never, or one went through since). */
export function loadCommitsRefusedAt(store: StateStore): number | null {
  const raw = store.getMeta(COMMITS_REFUSED_AT);
  const at = raw === undefined ? NaN : Number(raw);
  return Number.isFinite(at) ? at : null;
}

export function saveCommitsRefusedAt(store: StateStore, at: number | null): void {
  if (at === null) store.deleteMeta(COMMITS_REFUSED_AT);
  else store.setMeta(COMMITS_REFUSED_AT, String(at));
}

/**
 * The trial of a plan: the group that is one upload alone, of the smallest file (its bytes are what a refusal
 * costs). Null when no group is a lone upload (a move or a conflict goes with it): then the plan runs as it is.
 */
export function pickTrialUpload(plan: Plan): Action[] | null {
  let best: Action[] | null = null;
  let bestSize = Infinity;
  for (const group of plan.groups) {
    const only = group.length === 1 ? group[0] : undefined;
    if (only?.kind !== 'upload' || only.local.size >= bestSize) continue;
    best = group;
    bestSize = only.local.size;
  }
  return best;
}

/** The plan without one of its groups (the trial, run on its own). */
export function withoutGroup(plan: Plan, group: Action[]): Plan {
  return { ...plan, groups: plan.groups.filter((g) => g !== group) };
}
