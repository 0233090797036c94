// What a pair knows about its write access. The spec has no "whoami": a slot request answered 403 says the
// client is read-only (probed once per process, one request, nothing sent). But a server may hand out slots
// to any authenticated client (spec 3) and refuse only the commit, which comes after the file's bytes were
// PUT. Such a refusal is kept in the state DB, so that the next process (the next `sync` of a cron job, a
// restarted daemon) does not send every changed file again to learn the same thing: it sends one upload first
// (the smallest: a trial), and the others only once that one is committed. A pass that went download-only
// looks again after a while (WRITE_ACCESS_RECHECK_MS), so access granted later is picked up without a restart.
import { ServiceError } from '../service/index.js';
import type { StateStore } from '../state/store.js';
import type { ExecutionReport } from './executor.js';
import type { Action, Plan, ReconcileContext } from './model.js';
import type { PairRuntime } from './pair-runtime.js';

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

/** Why a `both` pair does not upload when its client is read-only (said in the plan's issues). */
export const READ_ONLY_REASON = 'the API client has read-only access';

/**
 * What an execution showed about write access. A server may hand out upload slots to any authenticated client
 * (spec 3: "caller authenticated") and refuse only the commit: a commit answered 403 turns the pair
 * download-only exactly as a refused slot does, so later passes stop sending bytes that can never be
 * committed, and the refusal is kept in the state DB for the next process (write-access.ts). A commit that
 * goes through forgets it.
 */
export function noteWriteAccess(rt: PairRuntime, execution: ExecutionReport, nowMs: number): void {
  const refused = execution.failures.some((f) => f.code === 'SERVICE_READ_ONLY');
  if (!refused) {
    if ((execution.done.upload ?? 0) > 0 && rt.commitsRefusedAt !== null) {
      rt.commitsRefusedAt = null;
      saveCommitsRefusedAt(rt.store, null);
      rt.log.info('the service accepted a commit again: uploads resume');
    }
    return;
  }
  rt.commitsRefusedAt = nowMs;
  saveCommitsRefusedAt(rt.store, nowMs);
  if (rt.readOnly === true) return;
  rt.readOnly = true;
  rt.readOnlySince = nowMs;
  rt.log.warn(
    'the service refused to commit an upload for lack of write access: this pair runs download-only from now on and local changes are not uploaded (grant read/write access to sync both ways)',
  );
}

/** The context of a `both` pair that may not upload (read-only client): download-only, saying why. */
export function downloadOnly(ctx: ReconcileContext, reason: string): ReconcileContext {
  return { ...ctx, direction: 'download', notUploadingBecause: reason };
}

export function relPathOfTrial(trial: Action[]): string {
  const a = trial[0];
  return a?.kind === 'upload' ? a.relPath : '';
}

export async function probeReadOnly(rt: PairRuntime): Promise<boolean> {
  try {
    await rt.client.getPresignedUpload();
    return false;
  } catch (err) {
    if (err instanceof ServiceError && err.status === 403) {
      rt.log.warn(
        'the API client has read-only access: this pair runs download-only and local changes are not uploaded (grant read/write access to sync both ways)',
      );
      return true;
    }
    throw err;
  }
}
