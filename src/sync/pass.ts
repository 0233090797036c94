// One full pass for one pair: check the root, finish interrupted uploads, scan local, list remote,
// reconcile (pure), then propagate. Used by `binder-sync sync` and by the daemon.
import fs from 'node:fs';
import path from 'node:path';
import { BinderSyncError, oneLineMessage } from '../errors.js';
import { ensureSyncedRootInPlace } from './moved-root.js';
import { cleanStaleTemps, removeDirIfEmpty, resolveInside } from '../local/fs-ops.js';
import { freeBytes } from '../local/fs-probe.js';
import { maxRelPathBytes } from '../local/name-limits.js';
import { coveringSubtrees, LAZY_HASH_FROM_BYTES, mergeScan, scanLocal, type ScanOptions } from '../local/scanner.js';
import { digestLocalTree } from '../local/tree-digest.js';
import { setLastError } from '../state/pair-meta.js';
import { fetchRemote, folderTreeUnchanged, observeRemote, searchDigestsOf, searchPagesUnchanged, type ListRemoteOptions, type RawDoc, type RawFolder, type RawListing, type RemoteListing } from '../remote/listing.js';
import { emptyExecution, executePlan, mergeExecutions, type ActionFailure, type ExecutionReport } from './executor.js';
import { LAST_PASS_STOPPED, stoppedByShutdown } from './stopped-steps.js';
import type { ExecutorDeps } from './executor-deps.js';
import { newLocalNotUploaded, type Action, type BaseEntry, type Issue, type LocalObservation, type Plan, type ReconcileContext, type RemoteObservation } from './model.js';
import { INFORMATIONAL_ISSUES } from './issue-groups.js';
import { transfersIn, type Pending } from './pending.js';
import { parentOf, pathKey } from './path-key.js';
import { reconcile } from './reconcile.js';
import { conflictTag } from './reconcile-builder.js';
import { recoverIntents } from './intents.js';
import { contentIdOf, deferFreshDeletes, deferRecentlyWritten, putBackLook, wantsUpload, withheldAsLookedAt, withheldAsRefused, withheldForAmbiguousNames, metadataHold, withheldForIgnoredOccupants, withheldForMetadata, withheldForUnfinishedUploads } from './plan-filters.js';
import { recoverOutbox, type OutboxRecovery } from './upload.js';
import { settleBuriedChecks } from './buried-edit.js';
import { loadFollowedFolders, rememberFollowedFolders } from './followed-folders.js';
import { loadRestoredVersions, rememberRestoredVersions, type Restored } from './restored-versions.js';
import { ensureRoot, keepStateDbInPlace, readMetadataElementsAgain, STATE_SERVICE } from './open-pair.js';
import type { PairRuntime } from './pair-runtime.js';
import { configDigest, encodeMark, IN_SYNC_MARK, listingMatchesBase, localMatchesBase, markHolds, readMark } from './in-sync-mark.js';
import { expireRefusals, saveRefusedUploads } from './refused-uploads.js';
import { checkOlderListings } from './older-listing-check.js';
import { settleNeverListed } from './never-listed.js';
import { loadWaitingMoves, rememberWaitingMoves } from './waiting-moves.js';
import { folderCheckIn, rememberUnreplaceable, withheldAsUnreplaceable, type TrashCheck } from './unreplaceable.js';
import { holdRanOut, rememberRefusedUrls, withheldAsRefusedUrls } from './refused-urls.js';
import { downloadOnly, noteWriteAccess, probeReadOnly, READ_ONLY_REASON, relPathOfTrial, pickTrialUpload, withoutGroup, WRITE_ACCESS_RECHECK_MS } from './write-access.js';

/**
 * How long a walked folder tree may stand in for a new walk (one request per folder: 85% of a poll's requests
 * in a binder of 1,100 folders): one second per folder, at most 10 minutes. A small tree (up to 60 folders with
 * the default poll interval of 60 s) is thus walked on every poll; a large one at most every 10 minutes, which
 * bounds the walk to about one request per second. Any change of the documents walks the tree again at once;
 * a change of folders alone (a rename, a new empty folder) is seen within this time.
 */
export function folderTreeMaxAgeMs(folders: number): number {
  return Math.min(10 * 60_000, folders * 1_000);
}

/**
 * While local files wait for a remote folder (one that may be created on the service for them, empty, which no
 * search shows), the tree is walked again when older than this, or than folderTreeMaxAgeMs when that is less.
 * Every poll walked it: one new local folder kept for good (the service cannot create folders) turned an idle
 * daemon's 25 requests a minute over 150 folders into 1,531 (black-box round 35a, F2). A file newly waiting
 * still has the tree walked at once (walkSoon).
 */
export const WAITING_WALK_MAX_AGE_MS = 60_000;

/** How old the tree may be while files wait: a minute, longer for a tree of over 240 folders (at most 4 requests a second). */
export function waitingTreeMaxAgeMs(folders: number): number {
  return Math.max(WAITING_WALK_MAX_AGE_MS, folders * 250);
}

/** Meta key: when the folder tree saved in the state DB was walked (ISO time). */
const TREE_WALKED_AT = 'folderTreeWalkedAt';


export interface PassOptions {
  /**
   * Scan only these local dirs (and those the previous pass wrote into) and merge with the previous pass's
   * observation; a full scan when unset or when there is none. The daemon passes watcher hints here.
   */
  localDirs?: string[];
  /** Reuse the previous remote listing when younger than this (ms) and the previous pass uploaded nothing. */
  reuseRemoteWithinMs?: number;
  /**
   * The daemon's first pass: the folder tree saved by an earlier process may stand in for a walk under the rule
   * that holds within one process (walked less than folderTreeMaxAgeMs ago, documents exactly as in the
   * base, all in known folders, nothing waiting for a folder). A restart then costs the search pages, not one
   * request per folder.
   *
   * `'when-costly'` (a one-shot `sync`): the same, but only for a tree whose walk alone would take more than a
   * second at the configured request rate (more folders than requestsPerSecond: 1,100 folders are 11 s at the
   * default 100 req/s, and 1,110 of the 1,212 requests of a no-op `sync` at 100,000 documents). A smaller tree
   * is walked by every `sync`, so a folder renamed on the service shows in the next run; `sync --walk-folders`
   * walks any tree.
   */
  reuseSavedFolderTree?: boolean | 'when-costly';
  /**
   * After a full pass that found nothing to do (the daemon's start over a tree in sync, a periodic rescan), drop
   * the observations as a quiet poll does (see quietPass): an idle daemon keeps only what a poll needs, from
   * its start on instead of from its first poll.
   */
  parkWhenQuiet?: boolean;
  /**
   * Settles when the local tree may be walked (the daemon's first pass: once its watcher is watching, so that
   * nothing written during the walk goes unseen). The remote listing does not wait for it.
   */
  localReady?: Promise<unknown>;
  /**
   * Leave a local file alone while it was modified less than this long ago (ms): a program may still be
   * writing it (tar, rsync, a download). The daemon uses it; PassReport.recheckInMs says when to look again.
   */
  minFileAgeMs?: number;
  /** How long a client found read-only stays so before write access is probed again (default: an hour). */
  writeAccessRecheckMs?: number;
  dryRun?: boolean;
  force?: boolean;
  now?: () => Date;
  signal?: AbortSignal;
  /**
   * The daemon is winding down (SIGTERM, a reload that stops the pair): what only looks (the scan, the listing,
   * the fast check) ends at once, as `signal` would end it; the plan starts no new group, and what is in flight
   * finishes (black-box round 28b, F7: a hung listing held a SIGTERM for the whole grace period).
   */
  windDown?: AbortSignal;
  concurrency?: number;
  /** Content bytes moved (both directions), as they stream. */
  onBytes?: (n: number) => void;
  /** The plan about to be executed (not called for a dry run or a blocked plan). For progress displays. */
  onPlan?: (plan: Plan) => void;
  /** One action of the plan finished (ok false: it failed). Actions skipped after a failure are not reported. */
  onActionDone?: (action: Action, ok: boolean) => void;
}

/** Progress callbacks of a pass plus its end; the daemon hands one per pair to its passes (terminal progress). */
export interface PassObserver {
  onPlan?: (plan: Plan) => void;
  onActionDone?: (action: Action, ok: boolean) => void;
  onBytes?: (n: number) => void;
  /** The pass ended: its report, or null when it threw. */
  onPassEnd?: (report: PassReport | null) => void;
}

export interface PassReport {
  pair: string;
  plan: Plan;
  execution: ExecutionReport | null;
  issues: Issue[];
  hashed: number;
  remoteRequests: number;
  listingMethod: string;
  durationMs: number;
  /** Both sides agree: nothing failed, nothing blocked, no open issues. */
  converged: boolean;
  /** Local files left for a later pass because they were still being written (see minFileAgeMs). */
  deferred: string[];
  /** The transfers of the steps deferred (pending.ts counts them as pending). */
  deferredTransfers?: Pending;
  /** When a deferred file is old enough to be looked at again (ms from the end of this pass), else null. */
  recheckInMs: number | null;
  /**
   * When the folder tree this pass went by was walked (ISO time), if this pass did not walk it (an earlier
   * walk stood in: see folderTreeMaxAgeMs and PassOptions.reuseSavedFolderTree); null when it walked it.
   */
  folderTreeFrom: string | null;
  /** A safety gate stopped this pass as it stopped the pass before (a daemon looks again every poll): said once. */
  blockedAgain: boolean;
  /** Uploads an earlier pass left unfinished (a crash, a failed commit) that this one committed, when any. */
  recoveredUploads?: number;
}

/**
 * "1 upload an earlier run left unfinished, committed": a pass that only finished those said "nothing to do"
 * (black-box round 29a, F6). Empty when there were none.
 */
export function recoveredText(r: Pick<PassReport, 'recoveredUploads'>): string {
  const n = r.recoveredUploads ?? 0;
  return n === 0 ? '' : `${n} upload${n === 1 ? '' : 's'} an earlier run left unfinished, committed`;
}

/** How soon a daemon's next pass comes when a waiting file may only need a fresh walk of the folder tree. */
const RECHECK_WALK_MS = 200;

/**
 * Conflicts older than the trash keeps their copies are dropped from the history `status` lists (it listed every
 * conflict ever, long after each was settled and its trash copy gone). Once a day per process: no write on
 * every poll.
 */
function pruneConflictHistory(rt: PairRuntime, at: Date): void {
  const day = at.toISOString().slice(0, 10);
  if (rt.historyPrunedOn === day) return;
  rt.historyPrunedOn = day;
  // A search index lags by seconds, maybe minutes: a day of superseded versions is plenty (older-than-synced.ts).
  rt.store.pruneSuperseded(Math.floor(at.getTime() / 1000) - 86_400);
  const removed = rt.store.pruneConflicts(new Date(at.getTime() - rt.pair.trashRetentionDays * 86_400_000).toISOString());
  if (removed > 0) rt.log.info({ removed, days: rt.pair.trashRetentionDays }, 'dropped conflicts older than trashRetentionDays from the history status lists');
}

export async function runPass(rt: PairRuntime, given: PassOptions = {}): Promise<PassReport> {
  // `opts.signal` (the looking) ends with the wind-down too; the executor's deps take `given`'s (see windDown).
  const lookSignal = given.windDown && given.signal ? AbortSignal.any([given.signal, given.windDown]) : (given.windDown ?? given.signal);
  const opts: PassOptions = lookSignal ? { ...given, signal: lookSignal } : given;
  const started = Date.now();
  const now = opts.now ?? (() => new Date());
  const dryRun = opts.dryRun === true;
  if (!dryRun) keepStateDbInPlace(rt);
  // A dry run does not create a missing root: it plans against an empty one.
  const rootMissing = !ensureRoot(rt.pair, rt.store, rt.log, !dryRun);
  if (!rootMissing) await ensureSyncedRootInPlace(rt.pair, rt.store, rt.log, !dryRun);
  // Before the executor's deps are made: they take rt.metadata as it is then (the stale resolver failed the first
  // upload after the elements could be read again with the old error).
  if (!dryRun && rt.metadataUnread !== null) await readMetadataElementsAgain(rt);
  const deps = executorDeps(rt, given, now);
  if (rt.readOnly === true && !dryRun && now().getTime() - rt.readOnlySince >= (opts.writeAccessRecheckMs ?? WRITE_ACCESS_RECHECK_MS)) {
    // Probed again below if this pass has something to upload; a quiet poll would plan nothing at all.
    rt.readOnly = null;
    rt.cache.quiet = false;
    rt.log.info('checking write access again (access granted since then is picked up now)');
  }
  // A download or upload held since storage refused its URLs is tried again once its hold runs out: planned again,
  // which a quiet poll (both sides as before) would skip (refused-urls.ts).
  if (!dryRun && holdRanOut(rt.refusedUrls, now().getTime())) rt.cache.quiet = false;
  const subtrees = localSubtrees(rt, opts);
  // A poll with no local hint while the local observation is parked: the tree is scanned (whole) only if the
  // remote side turns out to have changed.
  const parked = subtrees === undefined && rt.cache.localParked && opts.localDirs?.length === 0 && rt.cache.touchedDirs.size === 0 && !dryRun;
  // Uploads an earlier pass left unfinished and this one committed: work done, said in the pass's summary.
  let recovered = 0;
  // Uploads an earlier pass left unfinished whose commit cannot be settled now: their files sit this pass out.
  let heldUploads: OutboxRecovery['held'] = [];
  // What the recovery did before this pass's plan (conflicts kept from a buried-version check): in its report.
  const early = emptyExecution();
  const withRecovered = <R extends PassReport>(r: R): R => {
    if (early.conflicts.length > 0 || early.bytesUploaded > 0) r.execution = r.execution === null ? early : mergeExecutions(early, r.execution);
    return recovered > 0 ? Object.assign(r, { recoveredUploads: recovered }) : r;
  };
  if (!dryRun) {
    await rt.trash.purgeOlderThan(rt.pair.trashRetentionDays);
    pruneConflictHistory(rt, now());
    const steps = await recoverIntents(rt.store, rt.pair.localPath, rt.log);
    if (steps > 0) rt.log.info({ steps }, 'finished local steps interrupted by a restart');
    const rec = await recoverOutbox(deps);
    heldUploads = rec.held;
    recovered = rec.finished;
    if (rec.finished + rec.dropped > 0) rt.log.info(rec, 'finished or dropped the uploads an earlier pass left unfinished');
    // Edits committed by a pass that could not look for versions made during their upload (a crash, a lost
    // answer, a failed listing), and those just finished above: looked at now (buried-edit.ts).
    await settleBuriedChecks(deps, early);
    if (steps + rec.finished + rec.dropped > 0) {
      rt.cache.quiet = false; // the base changed: plan again
      rt.store.deleteMeta(IN_SYNC_MARK);
    }
  }
  // A process that holds no listing yet (just started, or idle since a fast check) checks both sides by the
  // in-sync mark's digests first. A poll while the local side is parked (the watcher saw nothing since a quiet
  // pass) checks the remote side only. Not after a watcher hint: the tree has changed, and the normal pass
  // would list and walk a second time.
  const fastLocal = subtrees === undefined && !parked;
  if (!dryRun && opts.force !== true && rt.cache.raw === null && (fastLocal || (parked && rt.cache.quiet)) && (opts.localDirs?.length ?? 0) === 0) {
    const fast = await fastInSyncCheck(rt, opts, fastLocal);
    if (fast !== null) return withRecovered(fastQuietPass(rt, fast, now, started));
  }
  // Temp files are left only by a run that was killed (this process removes its own), so the walk of the
  // whole tree that finds them runs once per start and with every full scan, not on each poll (and not when
  // the fast check's walk met none).
  if (!dryRun && ((subtrees === undefined && !parked) || !rt.tempsCleaned)) {
    const stale = await cleanStaleTemps(rt.pair.localPath);
    rt.tempsCleaned = true;
    if (stale > 0) rt.log.info({ removed: stale }, 'removed temp files left by an interrupted run');
  }
  let hashed = 0;
  // Nothing local to look at (the watcher saw nothing, the last pass wrote nothing): no scan, no base load yet.
  const noLocalWork = parked || (subtrees !== undefined && subtrees.length === 0);
  let baseMap: Map<string, BaseEntry> | null = null;
  const loadBase = () => (baseMap ??= rt.store.loadBase());
  let byKey: Map<string, BaseEntry> | null = null;
  // A new process compares its first listing with the state DB's (see resumeSavedListing and in-sync-mark.ts).
  const resumed = rt.cache.raw === null && !dryRun && resumeSavedListing(rt, loadBase(), opts.reuseSavedFolderTree);
  // Not when the last pass asked for a walk at once (a file waiting for a folder the walked tree may only not know).
  const walkNow = rt.cache.walkSoon;
  const reuse = opts.reuseRemoteWithinMs !== undefined && (rt.cache.remote !== null || rt.cache.raw !== null) && rt.cache.remoteFresh &&
    Date.now() - rt.cache.remoteAt <= opts.reuseRemoteWithinMs && !walkNow;
  // Reused for less long while files wait for a remote folder to appear (WAITING_WALK_MAX_AGE_MS).
  const waiting = rt.cache.issues.some((i) => i.code === 'waiting-for-remote-folder');
  const treeMaxAgeMs = rt.cache.raw === null ? 0 : Math.min(folderTreeMaxAgeMs(rt.cache.raw.folders.length), waiting ? waitingTreeMaxAgeMs(rt.cache.raw.folders.length) : Number.POSITIVE_INFINITY);
  const treeFresh = rt.cache.raw !== null && Date.now() - rt.cache.foldersAt < treeMaxAgeMs && opts.dryRun !== true && !walkNow;
  // The remote listing (bound by the service's request rate) runs while the local tree is walked (bound by the
  // disk; the walk yields now and then): the two observations are independent, and the executor checks every
  // local file again before it touches it.
  const listingAbort = new AbortController();
  const listing$ = reuse
    ? Promise.resolve(null)
    : fetchRemote(rt.client, {
        binderId: rt.pair.binderId,
        pageSize: rt.pair.pageSize,
        previous: rt.cache.raw,
        reuseFolders: treeFresh,
        skipSearch: Date.now() < rt.cache.searchSkippedUntil,
        signal: opts.signal ? AbortSignal.any([opts.signal, listingAbort.signal]) : listingAbort.signal,
      });
  listing$.catch(() => undefined); // awaited below; a failed scan must not leave an unhandled rejection behind
  const scan = (within: string[] | undefined) =>
    scanPair(rt, () => (byKey ??= new Map([...loadBase().values()].map((b) => [b.key, b]))), opts.signal, {
      onHash: () => hashed++,
      ...(within ? { subtrees: within } : {}),
    }).then((obs) => {
      rememberUnbasedHashes(rt, obs, within === undefined, byKey);
      return obs;
    }).catch((err: unknown) => {
      listingAbort.abort(err); // the pass is over: stop listing (a retry lists again)
      throw err;
    });
  if (!noLocalWork) await opts.localReady;
  const scanned = noLocalWork || rootMissing ? { files: new Map(), dirs: new Map(), problems: [] } : await scan(subtrees);
  const previousLocal = rt.cache.local;
  // Nothing rescanned: the previous observation stands as it is (merging would copy 100k entries per poll).
  let local = subtrees && previousLocal ? (noLocalWork ? previousLocal : mergeScan(previousLocal, scanned, subtrees)) : scanned;
  const raw = await listing$;
  if (raw) noteSearch(rt, raw);
  if (raw?.walkedTree) {
    rt.cache.foldersAt = Date.now();
    // The walk asked for is done, whatever this pass does next: a quiet pass returns before walkSoon is set again
    // below, which left it asked for, and every poll walked the whole tree (black-box round 35a, F2).
    rt.cache.walkSoon = false;
  }
  if (raw && noLocalWork && !dryRun && opts.force !== true && rt.cache.quiet && raw.unchanged) {
    // Quiet poll: the last pass planned nothing, nothing local changed, and the binder is exactly as listed
    // then. Every input of reconcile is the same, so its plan would be empty again: skip the work.
    return withRecovered(quietPass(rt, raw, now, started));
  }
  if (parked) local = await scan(undefined); // the remote changed: now the whole local tree is needed
  const base = loadBase();
  const baseByKey = () => (byKey ??= new Map([...base.values()].map((b) => [b.key, b])));
  const savedMark = rt.store.getMeta(IN_SYNC_MARK);
  if (raw && resumed && raw.unchanged && subtrees === undefined && opts.force !== true && rt.cache.issues.length === 0 &&
    markHolds(savedMark, rt.pair, rt.caseInsensitive, local) && localMatchesBase(local, base, baseByKey())) {
    // Both sides are exactly as when a full pass last found nothing to do, under the same config: that plan
    // would be empty again (in-sync-mark.ts), so mapping and reconciling 100k entries is skipped. This pass proves
    // what that one did, with this scan's and this listing's digests: a mark whose digests are not these (a build
    // that digested differently wrote it, or a pass without a whole scan) would send every start down this path
    // instead of the digest check, so it is written again.
    const fresh = encodeMark(rt.pair, rt.caseInsensitive, local, raw);
    if (!dryRun && fresh !== savedMark) rt.store.setMeta(IN_SYNC_MARK, fresh);
    rt.cache.local = local;
    rt.cache.localParked = false;
    rt.cache.touchedDirs = new Set();
    rt.cache.remoteFresh = true;
    rt.cache.quiet = true;
    return withRecovered(quietPass(rt, raw, now, started, true));
  }
  // A reused listing is the observation of the last pass, or (dropped after a quiet poll) rebuilt from the raw one.
  const reusedListing = raw === null && rt.cache.remote !== null;
  const rawNow = raw ?? { ...(rt.cache.raw as RawListing), requests: 0 };
  let listing: RemoteListing = reusedListing ? { ...rt.cache.remote!, requests: 0 } : await observeRemote(rt.client, rawNow, observeOptions(rt, base, opts.signal));
  // Listed older than synced for a while: the service is asked whether that is its latest after all (a version
  // made current again); such a document is a change, seen by observing the listing again.
  let lookAgainAtOlder = false;
  if (listing.olderThanSynced !== undefined && !reusedListing && !dryRun) {
    const checked = await checkOlderListings(rt, listing.olderThanSynced, rawNow.docs, now().getTime(), opts.signal);
    lookAgainAtOlder = checked.lookAgain;
    if (checked.confirmed.length > 0) listing = await observeRemote(rt.client, rawNow, observeOptions(rt, base, opts.signal));
  }
  if (!reusedListing && !dryRun) settleNeverListed(rt.store, listing.observation);
  // Said of a listing observed now; a reused one was said when it was (the same documents, again).
  if (listing.olderThanSynced !== undefined && !reusedListing) noteOlderThanSynced(rt, listing.olderThanSynced);
  if (raw) {
    rt.cache.remoteAt = Date.now();
    rt.cache.raw = raw;
  }
  // Until this pass has run, neither cache may be trusted (a throw below leaves them invalid).
  rt.cache.local = null;
  rt.cache.localParked = false;
  rt.cache.remote = null;
  rt.cache.quiet = false;
  const ctx = reconcileContext(rt, now, opts.force === true);
  if (expireRefusals(rt.refusedUploads, now().getTime())) saveRefused(rt);
  // Reconcile, then hold back what may not go yet: uploads without their metadata, onto an ambiguous name,
  // refused before, files still being written, and answers to a local delete seen a moment ago.
  const planFor = (c: ReconcileContext) => {
    const planned = withheldForIgnoredOccupants(reconcile(base, local, listing.observation, c), rt.ignore, (rel) => fs.lstatSync(path.join(rt.pair.localPath, rel), { throwIfNoEntry: false }) !== undefined);
    const held = withheldAsRefusedUrls(
      withheldAsUnreplaceable(
        withheldForUnfinishedUploads(withheldAsRefused(withheldForMetadata(withheldForAmbiguousNames(withheldAsLookedAt(planned, rt.putBackLookedAt), listing.observation), rt.metadata), rt.refusedUploads), heldUploads, rt.caseInsensitive),
        rt.unreplaceable,
        now().getTime(),
        trashCanTake(rt),
        folderCheckIn(rt.pair.localPath),
      ),
      rt.refusedUrls,
      now().getTime(),
    );
    const writing = deferRecentlyWritten(held, opts.minFileAgeMs ?? 0, now().getTime());
    const deleting = deferFreshDeletes(writing.plan, rt.missingSince, opts.minFileAgeMs ?? 0, now().getTime());
    const rechecks = [writing.recheckInMs, deleting.recheckInMs].filter((ms) => ms !== null);
    const before = transfersIn(held.groups);
    const after = transfersIn(deleting.plan.groups);
    return {
      plan: deleting.plan,
      deferred: [...writing.deferred, ...deleting.deferred],
      deferredTransfers: { uploads: before.uploads - after.uploads, downloads: before.downloads - after.downloads },
      recheckInMs: rechecks.length > 0 ? Math.min(...rechecks) : null,
    };
  };
  let deferral = planFor(ctx);
  if (rt.readOnly === null && !dryRun && deferral.plan.groups.some((g) => g.some(wantsUpload))) {
    rt.readOnly = await probeReadOnly(rt);
    if (rt.readOnly) rt.readOnlySince = now().getTime();
    if (rt.readOnly && ctx.direction === 'upload') {
      throw new BinderSyncError(`pair ${rt.pair.name}: direction is upload, but the API client has read-only access`, {
        code: 'SERVICE_READ_ONLY',
        retryable: false,
        context: { pair: rt.pair.name },
        hint: 'grant the API client read/write access, or set direction: download',
      });
    }
    if (rt.readOnly && ctx.direction === 'both') deferral = planFor(downloadOnly(ctx, READ_ONLY_REASON));
  }
  let plan = deferral.plan;
  // A local file in a folder that the folder tree this pass went by does not have (one walked a while ago: the
  // folder may have been created on the service since) is said as such, and the next pass comes at once, walking
  // the tree (a waiting file makes it), not at the next poll (black-box round 26, P2).
  // Only for files that were not waiting already: those a walk has confirmed (every poll walks while any waits).
  let recheckInMs = deferral.recheckInMs;
  const waitedBefore = new Set(rt.cache.issues.filter((i) => i.code === 'waiting-for-remote-folder').map((i) => i.relPath));
  const newlyWaiting = (i: Issue) => i.code === 'waiting-for-remote-folder' && !waitedBefore.has(i.relPath);
  const askWalk = raw?.walkedTree !== true && plan.issues.some(newlyWaiting);
  if (askWalk) {
    // A time, not an age: the line is shown until the file is synced, and an age would go stale in it.
    const walkedAt = rt.cache.foldersAt > 0 ? new Date(rt.cache.foldersAt).toISOString().slice(0, 19).replace('T', ' ') : null;
    const asOf = ` (by the folder tree as walked ${walkedAt === null ? 'before' : `at ${walkedAt} UTC`}: walked again at once, then every minute or so while files wait)`;
    plan = { ...plan, issues: plan.issues.map((i) => (newlyWaiting(i) ? { ...i, detail: i.detail + asOf } : i)) };
    recheckInMs = Math.min(recheckInMs ?? Number.POSITIVE_INFINITY, RECHECK_WALK_MS);
  }
  // Once: the pass it asks for walks, and says "no remote folder" plainly if there is none.
  rt.cache.walkSoon = !dryRun && askWalk;
  const report: PassReport = {
    pair: rt.pair.name,
    plan,
    execution: null,
    issues: plan.issues,
    hashed,
    remoteRequests: listing.requests,
    listingMethod: listing.method,
    folderTreeFrom: raw?.walkedTree === true ? null : (rt.store.getMeta(TREE_WALKED_AT) ?? null),
    durationMs: 0,
    converged: false,
    deferred: deferral.deferred,
    deferredTransfers: deferral.deferredTransfers,
    recheckInMs,
    blockedAgain: !dryRun && plan.blocked !== null && rt.lastGate === plan.blocked.code,
  };
  if (plan.blocked && rt.serviceChangedFrom !== null) {
    const blocked = { ...plan.blocked, message: `${plan.blocked.message} (the service changed since the last pass: was ${rt.serviceChangedFrom}, now ${rt.client.serviceIdentity}; if that is another server, point the config back to the old one, or give the pair a new name to start over there)` };
    plan = { ...plan, blocked };
    report.plan = plan;
  }
  if (dryRun) {
    report.durationMs = Date.now() - started;
    report.converged = plan.groups.length === 0 && plan.blocked === null && plan.issues.every((i) => INFORMATIONAL_ISSUES.has(i.code));
    return withRecovered(report);
  }
  let removedDirs: string[] = [];
  rt.lastGate = plan.blocked?.code ?? null;
  if (!plan.blocked && rt.serviceChangedFrom !== null) {
    rt.store.setMeta(STATE_SERVICE, rt.client.serviceIdentity);
    rt.serviceChangedFrom = null;
  }
  if (plan.blocked) {
    setLastError(rt.store, plan.blocked.message, rt.client.settingsIdentity);
    if (report.blockedAgain) rt.log.debug({ gate: plan.blocked.code }, plan.blocked.message);
    else rt.log.error({ gate: plan.blocked.code }, plan.blocked.message);
  } else {
    opts.onPlan?.(plan);
    // The base is about to change: a crash from here on must not leave the old in-sync mark behind.
    if (plan.groups.length > 0) rt.store.deleteMeta(IN_SYNC_MARK);
    const ran = await executeWithTrial(rt, plan, deps, now, (reason) => (ctx.direction === 'both' ? planFor(downloadOnly(ctx, reason)).plan : null));
    plan = ran.plan;
    report.plan = plan;
    report.issues = plan.issues;
    report.execution = ran.execution;
    // A download that failed may have left its temp file where this process cannot find it to remove it: its
    // folder was moved or renamed during the transfer (`mv` of the folder), so the temp went with it. The next
    // pass then walks the whole tree for temp files, as the first pass of a process does (black-box round 23, L3).
    if (report.execution.failures.some((f) => f.kind === 'download' || f.kind === 'conflict')) rt.tempsCleaned = false;
    recordEditsOfDeleted(rt, plan, report.execution, now());
    const refused = rememberRefused(rt, plan, report.execution, now().getTime());
    rememberUnreplaceable(rt.unreplaceable, plan, report.execution.failures, now().getTime(), folderCheckIn(rt.pair.localPath));
    const urlsRefused = rememberRefusedUrls(rt.refusedUrls, plan, report.execution, now().getTime(), rt.caseInsensitive);
    rememberRestoredVersions(rt.store, restoredBy(plan, report.execution));
    rememberWaitingMoves(rt.store, plan.issues, local, rt.caseInsensitive);
    const keptLocal = conflictCopiesKeptLocal(plan, report.execution, ctx, rt.metadata);
    const replaced = rememberPutBackLooks(rt, report.execution);
    if (replaced.size > 0) {
      // A file put back with an old time that took the latest (an earlier version) is no local change any more.
      plan = { ...plan, issues: plan.issues.filter((i) => !(i.code === 'local-change-not-uploaded' && replaced.has(i.relPath))) };
      report.plan = plan;
      report.issues = plan.issues;
    }
    // A file another program still writes waits for it: an item not synced yet, looked at again in a few seconds,
    // not the pair's error (black-box round 40c, F2: the pair flipped to `error` while a download or a logger wrote).
    const heldOpen = heldOpenIssues(report.execution);
    if (heldOpen.length > 0) report.recheckInMs = Math.min(report.recheckInMs ?? HELD_OPEN_RECHECK_MS, HELD_OPEN_RECHECK_MS);
    if (refused.length > 0 || keptLocal.length > 0 || urlsRefused.length > 0 || heldOpen.length > 0) {
      // Said this pass as every later pass says it (withheldAsRefused, planLocalFile): an item not synced, not the
      // pair's error. A download-only pair's conflict copy exited 0 in its pass and 1 in the next (round 11, F5).
      // A step held for its refused URLs (refused-urls.ts) stays "not synced" through each retry: said once.
      plan = { ...plan, issues: [...plan.issues, ...refused, ...keptLocal, ...urlsRefused, ...heldOpen] };
      report.plan = plan;
      report.issues = plan.issues;
    }
    const emptied = new Set([...report.execution.vacatedDirs, ...foldersGone(rt, raw, listing.observation)]);
    removedDirs = await removeVacatedDirs(rt, emptied, listing.observation);
    rememberFollowed(rt, report.execution.followedDirs, removedDirs, now().getTime());
  }
  rememberObservations(rt, plan, local, listing, dryRun, report.execution?.failures ?? []);
  // The local observation still holds them: the next partial scan looks at their parents again.
  for (const dir of removedDirs) rt.cache.touchedDirs.add(parentOf(dir));
  for (const p of deferral.deferred) rt.cache.touchedDirs.add(parentOf(p));
  // A held download is tried again once its file changes (`chattr -i` moves the ctime), which no watcher reports,
  // or once the folder that refused it lets it write (withheldAsUnreplaceable looks at every pass).
  for (const held of rt.unreplaceable.values()) rt.cache.touchedDirs.add(parentOf(held.relPath));
  // An edit written through one hard link is an edit of the file's other synced names too, which no watcher
  // reports (inotify names the path written to): their folders are scanned by a pass at once (black-box round
  // 29b, finding 4: they waited for the next whole rescan, an hour, while status said "in sync").
  const linkedDirs = dryRun ? [] : otherLinksOfEdited(rt, plan, base);
  for (const dir of linkedDirs) rt.cache.touchedDirs.add(dir);
  if (linkedDirs.length > 0) report.recheckInMs = Math.min(report.recheckInMs ?? RECHECK_WALK_MS, RECHECK_WALK_MS);
  // A document listed at an older version still to be asked about (older-listing-check.ts) keeps the polls looking.
  rt.cache.quiet = !dryRun && plan.blocked === null && plan.groups.length === 0 && deferral.deferred.length === 0 && removedDirs.length === 0 && !lookAgainAtOlder;
  if (rt.cache.quiet && opts.parkWhenQuiet === true && subtrees === undefined && rt.cache.raw !== null) park(rt);
  rt.cache.issues = plan.issues;
  const failures = report.execution?.failures ?? [];
  // A pass whose reconcile found nothing to do, with both sides exactly as the base says, leaves the in-sync
  // mark: proof that reconcile is empty for these inputs (in-sync-mark.ts). The inputs are checked as they were
  // given to reconcile (a partial scan's merged observation too), so any such pass may write it; it is deleted
  // only when the base changes (before a plan runs, on recovery).
  const unmapped = unmappedDocuments(listing.observation);
  const inSync = rt.cache.quiet && onlyInformational(plan.issues) && raw !== null && unmapped !== null &&
    listingMatchesBase(raw, base, listing.observation.folders, unmapped) && localMatchesBase(local, base, baseByKey());
  rt.store.transaction(() => {
    if (inSync) rt.store.setMeta(IN_SYNC_MARK, encodeMark(rt.pair, rt.caseInsensitive, local, raw));
    rt.store.replaceFolders([...listing.observation.folders.values()]);
    rt.store.replaceIssues(plan.issues);
    if (raw?.walkedTree) {
      // The saved folders are the mapped ones: the walked tree itself only when every folder could be mapped.
      if (listing.observation.unmappable.every((u) => u.folderId === undefined)) rt.store.setMeta(TREE_WALKED_AT, new Date(rt.cache.foldersAt).toISOString());
      else rt.store.deleteMeta(TREE_WALKED_AT);
    }
    rt.store.setMeta('lastPassAt', now().toISOString());
    if (subtrees === undefined) rt.store.setMeta('lastScanAt', now().toISOString()); // a full local scan
    // A fresh remote listing: as of when the pass began (it lists at once), not when it ended. A colleague's change made
    // during a long pass was shown as polled while it was not yet seen (black-box round 43c, notes).
    if (!reuse) rt.store.setMeta('lastPollAt', new Date(started).toISOString());
    // A refusal for good is an item not synced (its issue above), not an error of the pair; nor is a step a stop
    // (SIGTERM, a reload) cut short: `status` called a clean shutdown an error (black-box round 31a, F12).
    const errors = failures.filter((f) => !refusedForGood(f) && !stoppedByShutdown(f) && f.heldOpen === undefined);
    const stopped = failures.filter(stoppedByShutdown).length;
    // Uploads held back because the metadata rules do not fit (a daemon's pair, see openPair) are the pair's error too.
    // So are uploads whose commit the service keeps refusing for now (held in the outbox): 'idle' with no error
    // while every commit got a 401 hid it in a line of the "not synced" list (black-box round 33a, F4).
    const firstHeld = heldUploads[0];
    const heldSaid = firstHeld === undefined ? '' : oneLineMessage(firstHeld.error);
    // The error may name the file already (a 401 at the commit does): not twice (black-box round 34a, F7).
    const held = firstHeld === undefined ? '' : `${heldUploads.length} upload(s) left unfinished could not be committed; first: ${heldSaid.startsWith(`${firstHeld.relPath}: `) ? '' : `${firstHeld.relPath}: `}${heldSaid}`;
    const lastError = errors.length > 0 ? `${errors.length} action(s) failed; first: ${errors[0]?.message ?? ''}` : held !== '' ? held : (rt.metadata.blockedBecause ?? '');
    if (!plan.blocked) setLastError(rt.store, lastError, rt.client.settingsIdentity);
    rt.store.setMeta(LAST_PASS_STOPPED, stopped > 0 ? String(stopped) : '');
  });
  report.durationMs = Date.now() - started;
  // The service kept failing mid-pass: surface it as the pass's error so callers back off (sync exits 3).
  if (report.execution?.stoppedBy) throw report.execution.stoppedBy;
  report.converged =
    plan.blocked === null && failures.length === 0 && deferral.deferred.length === 0 && plan.issues.every((i) => INFORMATIONAL_ISSUES.has(i.code));
  return withRecovered(report);
}

/**
 * Runs the plan. When the service refused commits before (maybe in another process), one upload goes first and
 * the rest only if it is committed (write-access.ts): without that, every changed file would be PUT for nothing.
 * If the trial does not go through, the rest is `downloadOnlyPlan(reason)` (null: nothing, for an upload-only
 * pair) and waits for a pass whose trial goes through. Returns the plan as it ran and what it did.
 */
async function executeWithTrial(
  rt: PairRuntime,
  plan: Plan,
  deps: ExecutorDeps,
  now: () => Date,
  downloadOnlyPlan: (reason: string) => Plan | null,
): Promise<{ plan: Plan; execution: ExecutionReport }> {
  const trial = rt.readOnly === false && rt.commitsRefusedAt !== null ? pickTrialUpload(plan) : null;
  if (trial === null) {
    const execution = await executePlan(plan, deps);
    noteWriteAccess(rt, execution, now().getTime());
    return { plan, execution };
  }
  rt.log.info({ relPath: relPathOfTrial(trial), refusedAt: new Date(rt.commitsRefusedAt!).toISOString() }, 'the service refused to commit uploads before: uploading one file first to see whether it accepts them now');
  const first = await executePlan({ ...plan, groups: [trial] }, deps);
  noteWriteAccess(rt, first, now().getTime());
  let rest = withoutGroup(plan, trial);
  if ((first.done.upload ?? 0) === 0) {
    const reason = rt.readOnly === true ? READ_ONLY_REASON : 'the first upload of this pass did not go through, and the service refused commits before';
    rest = downloadOnlyPlan(reason) ?? { ...rest, groups: [] };
  }
  return { plan: { ...rest, groups: [trial, ...rest.groups] }, execution: mergeExecutions(first, await executePlan(rest, deps)) };
}

/**
 * After a `sync` pass that did work and sent nothing to the service (downloads, local moves, trash steps), leaves
 * the in-sync mark that lets the next process take the fast check (fastInSyncCheck) instead of a full pass. The
 * pass itself cannot leave it: the mark proves that reconcile planned nothing, and this pass planned work.
 * So the listing this pass made (the binder as this process last saw it: nothing was sent since) is reconciled
 * again with the new base and a fresh full scan, as a second pass would do without listing again. Only when that
 * plan is empty, with no issue, and both sides exactly as the new base (runPass's rule for the mark) is the
 * mark written with this listing's page digests and the scan's tree digest; a later check compares both with
 * the binder and the tree as they are then, so a change in between (here or remotely) only means a normal pass.
 * Costs one scan (nothing is hashed: the base holds the stats of what was written) and one reconcile; without
 * it, a daemon started after a `sync` that downloaded 100k files took the normal pass (3.4 s, 336 MiB peak).
 * Returns whether the mark was written. Nothing is executed.
 */
export async function settleInSyncMark(rt: PairRuntime, opts: { now?: () => Date; signal?: AbortSignal } = {}): Promise<boolean> {
  const raw = rt.cache.raw;
  // A listing made stale by an upload, or one that was not made by search pages, cannot describe the binder.
  if (raw === null || !rt.cache.remoteFresh || searchDigestsOf(raw, rt.pair.pageSize) === null || !onlyInformational(rt.store.listIssues())) return false;
  const base = rt.store.loadBase();
  const byKey = new Map([...base.values()].map((b) => [b.key, b]));
  const local = await scanPair(rt, () => byKey, opts.signal);
  if (!localMatchesBase(local, base, byKey)) return false;
  const listing = await observeRemote(rt.client, { ...raw, requests: 0 }, observeOptions(rt, base, opts.signal));
  const { folders } = listing.observation;
  const unmapped = unmappedDocuments(listing.observation);
  if (unmapped === null || !listingMatchesBase(raw, base, folders, unmapped)) return false;
  let plan = reconcile(base, local, listing.observation, reconcileContext(rt, opts.now ?? (() => new Date()), false));
  plan = withheldAsRefused(withheldForMetadata(plan, rt.metadata), rt.refusedUploads);
  if (plan.groups.length > 0 || plan.blocked !== null || !onlyInformational(plan.issues)) return false;
  rt.store.transaction(() => {
    rt.store.setMeta(IN_SYNC_MARK, encodeMark(rt.pair, rt.caseInsensitive, local, raw));
    rt.store.replaceFolders([...folders.values()]);
    rt.store.replaceIssues(plan.issues); // what the next process reports when the mark holds (fastQuietPass)
  });
  return true;
}

/**
 * Scans the pair's tree. A file is not hashed again while its stat is that of its base row (`baseByKey`, asked
 * for lazily: a scan that finds nothing loads no base) or, with no base row (new, or waiting for its remote
 * folder), of the hash remembered from the last scan; a large new file is not read (LAZY_HASH_FROM_BYTES).
 */
function scanPair(
  rt: PairRuntime,
  baseByKey: () => ReadonlyMap<string, BaseEntry>,
  signal: AbortSignal | undefined,
  extra: Pick<ScanOptions, 'onHash' | 'subtrees'> = {},
): Promise<LocalObservation> {
  return scanLocal({
    root: rt.pair.localPath,
    caseInsensitive: rt.caseInsensitive,
    ignore: rt.ignore,
    prior: (key) => baseByKey().get(key) ?? rt.unbasedHashes.get(key),
    lazyHashFromBytes: LAZY_HASH_FROM_BYTES,
    ...extra,
    ...(signal ? { signal } : {}),
  });
}

/** How a raw listing is mapped for this pair against a base (observeRemote). */
function observeOptions(rt: PairRuntime, base: ReadonlyMap<string, BaseEntry>, signal: AbortSignal | undefined): ListRemoteOptions {
  return {
    binderId: rt.pair.binderId,
    pageSize: rt.pair.pageSize,
    caseInsensitive: rt.caseInsensitive,
    base,
    ignoredBy: (p, isDir) => (rt.ignore.ignores(p, isDir) ? (rt.ignore.ruleFor(p, isDir) ?? 'of this pair') : undefined),
    maxPathBytes: maxRelPathBytes(rt.pair.localPath),
    supersededVersions: rt.store.supersededVersions(),
    ...(signal ? { signal } : {}),
  };
}

/**
 * The listing showed documents at versions older than the ones synced (older-than-synced.ts): taken as unchanged.
 * Said at info the first time in a process (an operator may want to know the service's search lags), then at debug.
 */
function noteOlderThanSynced(rt: PairRuntime, documentIds: readonly string[]): void {
  const first = documentIds[0];
  const said = { documents: documentIds.length, first: first === undefined ? undefined : rt.store.getBase(first)?.relPath };
  const msg = 'the listing showed documents at a version older than the one synced (the service\'s search lags behind its commits?): taken as unchanged until it catches up';
  if (rt.olderListingSaid) rt.log.debug(said, msg);
  else rt.log.info(said, msg);
  rt.olderListingSaid = true;
}

/** A pair set to `direction: both` runs download-only when the API client may not write; its issues say why. */
/** What reconcile needs besides the three observations: the pair's policies, as this process may apply them. */
function reconcileContext(rt: PairRuntime, now: () => Date, force: boolean): ReconcileContext {
  const readOnlyBoth = rt.readOnly === true && rt.pair.direction === 'both';
  return {
    direction: readOnlyBoth ? 'download' : rt.pair.direction,
    ...(readOnlyBoth ? { notUploadingBecause: READ_ONLY_REASON } : {}),
    conflictPolicy: rt.pair.conflictPolicy,
    localDeletePolicy: rt.pair.localDeletePolicy,
    caseInsensitive: rt.caseInsensitive,
    conflictTag: conflictTag(now()),
    maxDeleteShare: rt.pair.maxDeleteShare,
    force,
    forgotten: rt.store.loadForgotten(),
    forgottenContent: rt.store.loadForgottenContent(),
    ignoredLocally: (relPath) => rt.ignore.ignores(relPath, false),
    followedFolders: loadFollowedFolders(rt.store, now().getTime()),
    restoredVersions: loadRestoredVersions(rt.store),
    neverListed: rt.store.neverListed(),
    waitingMoves: loadWaitingMoves(rt.store, rt.caseInsensitive),
  };
}

/**
 * Remembers the directories this pass followed to their folder's new place that are still there (something new
 * kept them), and forgets the ones that are gone (followed-folders.ts).
 */
function rememberFollowed(rt: PairRuntime, followed: ReadonlyMap<string, string>, removed: readonly string[], now: number): void {
  const isDir = (relPath: string) => fs.lstatSync(path.join(rt.pair.localPath, relPath), { throwIfNoEntry: false })?.isDirectory() === true;
  const gone = new Set(removed);
  const kept = new Map([...followed].filter(([dir]) => !gone.has(dir) && isDir(dir)).map(([dir, folderId]) => [pathKey(dir, rt.caseInsensitive), folderId]));
  // Keys name directories as the base does (case-folded on a case-insensitive disk): the path looked up is the key.
  rememberFollowedFolders(rt.store, kept, (key) => isDir(key), now);
}

/**
 * Directories that moves and trash steps emptied, and that no remote folder maps to any more (the folder was
 * renamed, moved or deleted remotely), are removed, deepest first, walking up while they stay empty. rmdir
 * only ever removes an empty directory, so nothing the user put there can be lost.
 */
async function removeVacatedDirs(rt: PairRuntime, dirs: ReadonlySet<string>, remote: RemoteObservation): Promise<string[]> {
  const remoteDirKeys = new Set([...remote.folders.values()].map((f) => f.key));
  const ordered = [...dirs].sort((a, b) => b.split('/').length - a.split('/').length);
  const removed: string[] = [];
  for (let dir of ordered) {
    while (dir !== '' && !remoteDirKeys.has(pathKey(dir, rt.caseInsensitive)) && !rt.ignore.ignores(dir, true)) {
      let gone: boolean;
      try {
        gone = await removeDirIfEmpty(resolveInside(rt.pair.localPath, dir));
      } catch (err) {
        // Tidying only: a leftover that cannot go (a mount point: EBUSY; a symbolic link now: ENOTDIR; a read-only
        // parent) stays, said at debug; it failed the whole pass with "check the local disk" (round 36a, F5).
        rt.log.debug({ dir, err }, 'a directory left empty by a remote change could not be removed; left as it is');
        break;
      }
      if (!gone) break;
      rt.log.debug({ dir }, 'removed a directory left empty by a remote change');
      removed.push(dir);
      dir = parentOf(dir);
    }
  }
  return removed;
}

/**
 * Folders of the saved tree that a walk no longer found at their path (renamed, moved or deleted on the service):
 * their local directories go too once empty (removeVacatedDirs). A folder that held documents is emptied by
 * their moves and trash steps; an empty one would otherwise stay behind beside its new name. Only after a walk
 * (otherwise the tree is the saved one), and never in upload mode, where the local tree is the source.
 */
function foldersGone(rt: PairRuntime, raw: RawListing | null, remote: RemoteObservation): string[] {
  if (raw?.walkedTree !== true || rt.pair.direction === 'upload') return [];
  // A listing that placed documents under folders it did not list is not a picture of the tree: a folder missing
  // from it may be missing only from this answer (a top-level listing answered [] once: black-box round 11, F8).
  if (remote.unmappable.some((u) => u.inconsistent === true)) return [];
  const now = new Set([...remote.folders.values()].map((f) => f.key));
  return rt.store.loadFolders().filter((f) => !now.has(f.key)).map((f) => f.relPath);
}

/**
 * Stands the state DB in for the previous listing of a process that has just started: the saved folder tree
 * (when the last walk could map every folder), and the documents as the base last saw them. The next listing is
 * compared with it like with one of this process (RawListing.unchanged, which the in-sync mark relies on).
 * With `trustTree` (PassOptions.reuseSavedFolderTree) the saved tree may also stand in for a walk: only while it
 * is as fresh as a running daemon would trust it, and any document that differs from the base (a new version, a
 * rename, a document not synced yet) or sits in an unknown folder makes it walk the tree. Otherwise the tree is
 * walked and only compared. Returns whether a listing was resumed.
 */
function resumeSavedListing(rt: PairRuntime, base: ReadonlyMap<string, BaseEntry>, trustTree: PassOptions['reuseSavedFolderTree']): boolean {
  const tree = savedFolderTree(rt);
  if (tree === null) return false;
  const { folders, walkedAt } = tree;
  const issues = rt.store.listIssues();
  const docs = new Map<string, RawDoc>();
  for (const b of base.values()) docs.set(b.documentId, { documentId: b.documentId, fileName: b.fileName, folderId: b.folderId, versionId: b.versionId });
  rt.cache.raw = { folders, docs, method: 'search', requests: 0, unchanged: false, docsUnchanged: false, walkedTree: true, searchInconsistent: false, pages: null };
  rt.cache.issues = issues;
  const trusted = trustsSavedTree(rt, trustTree, tree) && !issues.some((i) => i.code === 'waiting-for-remote-folder');
  // 0: as old as can be, so the first listing walks the tree (see treeFresh in runPass).
  rt.cache.foldersAt = trusted ? walkedAt : 0;
  if (trusted) rt.log.debug({ folders: folders.length, walkedAt: new Date(walkedAt).toISOString() }, 'the saved folder tree may stand in for a walk');
  return true;
}

/** Whether a saved tree may stand in for a walk: fresh, and asked for (PassOptions.reuseSavedFolderTree). */
function trustsSavedTree(rt: PairRuntime, asked: PassOptions['reuseSavedFolderTree'], tree: { folders: RawFolder[]; fresh: boolean }): boolean {
  if (!tree.fresh) return false;
  return asked === true || (asked === 'when-costly' && tree.folders.length > rt.client.requestsPerSecond);
}

/**
 * The folder tree the state DB holds and when it was walked (null when the last walk could not be saved), and
 * whether it is still young enough to stand in for a walk (folderTreeMaxAgeMs).
 */
function savedFolderTree(rt: PairRuntime): { folders: RawFolder[]; walkedAt: number; fresh: boolean } | null {
  const walkedAt = Date.parse(rt.store.getMeta(TREE_WALKED_AT) ?? '');
  if (Number.isNaN(walkedAt)) return null;
  const folders = rt.store.loadFolders().map((f) => ({ id: f.folderId, name: f.name, parentId: f.parentId }));
  const age = Date.now() - walkedAt;
  return { folders, walkedAt, fresh: age >= 0 && age < folderTreeMaxAgeMs(folders.length) };
}

/** What fastInSyncCheck found: both sides as the mark says, after this many requests, the tree walked or not. */
interface FastCheck {
  requests: number;
  walkedTree: boolean;
  /** The local tree was walked (a full pass), not taken as parked. */
  scanned: boolean;
}

/**
 * A pass of a process that holds no listing (a daemon start, a `sync` run, a poll of a daemon idle since then)
 * over a pair whose last full pass left an in-sync mark with digests (in-sync-mark.ts): walks the local tree for
 * its digest (unless `walkLocal` is false: a poll while the watcher saw nothing) while asking for every search
 * page with the digest of its earlier body, and the folder tree when the saved one may not stand in (see
 * resumeSavedListing). Nothing is hashed, no base row is loaded, no page is parsed. Returns null as soon as
 * either side differs (the other is stopped), and the normal pass then runs; errors are the listing's own.
 */
async function fastInSyncCheck(rt: PairRuntime, opts: PassOptions, walkLocal: boolean): Promise<FastCheck | null> {
  const mark = readMark(rt.store.getMeta(IN_SYNC_MARK), rt.pair, rt.caseInsensitive);
  if (mark?.tree === undefined || mark.search === undefined || !onlyInformational(rt.store.listIssues())) return null;
  const tree = savedFolderTree(rt);
  if (tree === null) return null;
  // A poll of this process (parked: no local walk) trusts the tree for as long as a poll with a listing in memory
  // would (treeFresh); a new process, as the caller asked.
  const trusted = walkLocal ? trustsSavedTree(rt, opts.reuseSavedFolderTree, tree) : tree.fresh;
  const walkTree = !trusted;
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  const counter = { requests: 0 };
  // The first check to answer "different" or to fail stops the others: a search the service refuses must not
  // leave a walk of every folder (or of every local file) running for an answer nobody will read.
  const failures: unknown[] = [];
  const settle = (p: Promise<boolean>) =>
    p.then(
      (same) => (same ? true : (stop.abort(), false)),
      (err: unknown) => {
        if (!stop.signal.aborted) failures.push(err);
        stop.abort();
        throw err;
      },
    );
  // The pages and the folder tree side by side (see fetchRemote): the first difference stops all three checks.
  const query = { binderId: rt.pair.binderId, pageSize: rt.pair.pageSize, signal };
  const pages = settle(searchPagesUnchanged(rt.client, query, mark.search, counter));
  const folders = walkTree ? settle(folderTreeUnchanged(rt.client, rt.pair.binderId, tree.folders, counter, signal)) : Promise.resolve(true);
  const local = settle(
    (async () => {
      if (!walkLocal) return true; // parked: unchanged since the last quiet pass, by the watcher's word
      await opts.localReady;
      signal.throwIfAborted();
      const expectedFiles = mark.files ?? rt.store.countBase(); // the mark's count is the base's: it is unchanged
      return (await digestLocalTree({ root: rt.pair.localPath, caseInsensitive: rt.caseInsensitive, ignoreGlobs: rt.pair.ignore, expectedFiles, signal })) === mark.tree;
    })(),
  );
  await Promise.allSettled([pages, folders, local]);
  // The first failure is the pass's error; a check stopped because another differed leaves it to the normal pass.
  if (failures.length > 0) throw failures[0];
  if (stop.signal.aborted) {
    opts.signal?.throwIfAborted();
    return null;
  }
  return { requests: counter.requests, walkedTree: walkTree, scanned: walkLocal };
}

/**
 * The report of a pass that fastInSyncCheck confirmed. Nothing is kept in memory: the next poll checks the
 * digests again, and a pass that has something to do resumes the listing from the state DB
 * (resumeSavedListing) and scans the whole tree, as after a quiet poll.
 */
function fastQuietPass(rt: PairRuntime, check: FastCheck, now: () => Date, started: number): PassReport {
  if (check.scanned) rt.tempsCleaned = true; // the walk met no file of the daemon's own
  rt.cache.local = null;
  rt.cache.localParked = true;
  rt.cache.touchedDirs = new Set();
  rt.cache.quiet = true;
  // The informational issues of the pass that left the mark (the same inputs give the same issues).
  rt.cache.issues = rt.store.listIssues();
  rt.log.debug({ requests: check.requests, walkedTree: check.walkedTree }, 'both sides are as the in-sync mark says');
  return nothingToDo(rt, { now, started, requests: check.requests, method: 'search', scanned: check.scanned, treeWalkedAt: check.walkedTree ? now() : null });
}

/** How long the documents are listed per folder once search answered inconsistent pages (then it is asked again). */
export const SEARCH_SKIPPED_FOR_MS = 10 * 60_000;
/**
 * Listings in a row whose search was inconsistent (twice each) before search is skipped. Not at the first: a
 * binder that changed during both walks of one listing (colleagues busy) says so too, and listing a big binder per
 * folder costs two requests a folder (2,218 at 100k documents in 1,109 folders against 100 search pages).
 */
export const SEARCH_SKIPPED_AFTER = 2;

/** What this listing said of search (FetchRemoteOptions.skipSearch). */
function noteSearch(rt: PairRuntime, raw: RawListing): void {
  if (raw.method === 'search') rt.cache.searchInconsistentRuns = 0;
  if (!raw.searchInconsistent) return;
  rt.cache.searchInconsistentRuns++;
  if (rt.cache.searchInconsistentRuns < SEARCH_SKIPPED_AFTER) return;
  if (rt.cache.searchSkippedUntil === 0) {
    rt.log.info(
      { minutes: SEARCH_SKIPPED_FOR_MS / 60_000 },
      "the service's search answered pages that do not add up, listing after listing (its order changes between requests, or the binder keeps changing while it is read): documents are listed folder by folder, search is tried again later",
    );
  }
  rt.cache.searchSkippedUntil = Date.now() + SEARCH_SKIPPED_FOR_MS;
}

/**
 * Drops what an idle daemon does not need. The mapped remote observation (~25 MB at 100k documents): a pass
 * that reuses the listing rebuilds it from `cache.raw`, which holds the same documents. And the local one
 * (~25 MB), when the last pass found nothing to do and wrote nothing: nothing has happened on either side
 * since, and the next local or remote change costs one whole scan (0.6 s at 100k files, nothing re-hashed)
 * instead of a partial one.
 */
function park(rt: PairRuntime): void {
  rt.cache.remote = null;
  if (rt.cache.touchedDirs.size === 0) {
    rt.cache.local = null;
    rt.cache.localParked = true;
  }
}

/**
 * The report of a pass that found nothing new anywhere (see runPass): a quiet poll, or (`scanned`) a full pass
 * whose both sides are as the in-sync mark says.
 */
function quietPass(rt: PairRuntime, raw: RawListing, now: () => Date, started: number, scanned = false): PassReport {
  rt.cache.remoteAt = Date.now();
  rt.cache.raw = raw;
  park(rt);
  // The folders are exactly as saved by the last full pass (raw.unchanged): only the walk's time is new.
  const treeWalkedAt = raw.walkedTree && rt.store.getMeta(TREE_WALKED_AT) !== undefined ? new Date(rt.cache.foldersAt) : null;
  return nothingToDo(rt, { now, started, requests: raw.requests, method: raw.method, scanned, treeWalkedAt });
}

/**
 * The report of a pass that found nothing to do (with the issues already known), and its times in the state
 * DB: the poll's, the folder walk's when there was one, and the pass's and scan's when the local tree was
 * looked at.
 */
function nothingToDo(
  rt: PairRuntime,
  o: { now: () => Date; started: number; requests: number; method: RawListing['method']; scanned: boolean; treeWalkedAt: Date | null },
): PassReport {
  rt.store.transaction(() => {
    if (rt.serviceChangedFrom !== null) rt.store.setMeta(STATE_SERVICE, rt.client.serviceIdentity); // nothing to do there: the same binder
    if (o.treeWalkedAt !== null) rt.store.setMeta(TREE_WALKED_AT, o.treeWalkedAt.toISOString());
    const at = o.now().toISOString();
    rt.store.setMeta('lastPollAt', new Date(o.started).toISOString()); // as of when it listed (see runPass)
    if (o.scanned) {
      rt.store.setMeta('lastPassAt', at);
      rt.store.setMeta('lastScanAt', at);
      setLastError(rt.store, '', rt.client.settingsIdentity);
    }
  });
  rt.serviceChangedFrom = null;
  const issues = rt.cache.issues;
  rt.lastGate = null;
  return {
    pair: rt.pair.name,
    plan: { groups: [], issues, blocked: null },
    execution: null,
    issues,
    hashed: 0,
    remoteRequests: o.requests,
    listingMethod: o.method,
    durationMs: Date.now() - o.started,
    converged: issues.every((i) => INFORMATIONAL_ISSUES.has(i.code)),
    deferred: [],
    recheckInMs: null,
    blockedAgain: false,
    folderTreeFrom: o.treeWalkedAt !== null ? null : (rt.store.getMeta(TREE_WALKED_AT) ?? null),
  };
}

/** How soon a pass looks again at a file another program held open for writing. */
const HELD_OPEN_RECHECK_MS = 5_000;

/** A 'changing' issue for each step postponed because another program holds its file open for writing. */
function heldOpenIssues(execution: ExecutionReport): Issue[] {
  return execution.failures.flatMap((f) => (f.heldOpen === undefined ? [] : [{ relPath: f.relPath, code: 'changing' as const, detail: `held: ${f.heldOpen}` }]));
}

/** The documents this pass put back at their path (restore-local-delete downloads that went through), by version. */
function restoredBy(plan: Plan, execution: ExecutionReport): Map<string, Restored> {
  const failed = new Set(execution.failures.map((f) => f.relPath));
  const restored = new Map<string, Restored>();
  for (const g of plan.groups) {
    for (const a of g) if (a.kind === 'download' && a.reason === 'restore-local-delete' && !failed.has(a.relPath)) restored.set(a.doc.documentId, { versionId: a.doc.versionId, relPath: a.relPath });
  }
  return restored;
}

/**
 * Which local subtrees to scan: undefined for the whole tree (the default, and whenever there is no previous
 * observation to merge into), else the hinted dirs plus every dir the previous pass changed, each lifted to
 * its nearest existing directory (a hinted dir may have been deleted or replaced by a file).
 */
function localSubtrees(rt: PairRuntime, opts: PassOptions): string[] | undefined {
  if (opts.localDirs === undefined || rt.cache.local === null) return undefined;
  const lifted = [...opts.localDirs, ...rt.cache.touchedDirs].map((d) => {
    let dir = d;
    while (dir !== '') {
      try {
        if (fs.lstatSync(resolveInside(rt.pair.localPath, dir)).isDirectory()) break;
      } catch {
        /* missing (or not a safe path): try the parent */
      }
      dir = parentOf(dir);
    }
    return dir;
  });
  return coveringSubtrees(lifted);
}

/**
 * Keeps this pass's observations for the next one. The local one is kept with the dirs this pass wrote
 * into (rescanned next time: their stats changed); the remote one only while nothing was sent to the
 * service (an upload makes it stale at once).
 */
function rememberObservations(rt: PairRuntime, plan: Plan, local: LocalObservation, listing: RemoteListing, dryRun: boolean, failures: readonly ActionFailure[]): void {
  if (dryRun) return;
  const touched = new Set<string>();
  let wroteRemote = false;
  // An upload held back while another program writes the file sent nothing: the listing is still fresh. Read as
  // stale, each recheck of a logger's file (every 5 s) listed the whole binder (black-box round 41b).
  const heldOpen = new Set(failures.filter((f) => f.heldOpen !== undefined).map((f) => `${f.kind}\0${f.relPath}`));
  for (const group of plan.groups) {
    for (const a of group) {
      // A moved directory's parents: the rescan of a directory's subtree takes in everything moved with it.
      if (a.kind === 'move-local' || a.kind === 'move-dir-local') {
        touched.add(parentOf(a.from));
        touched.add(parentOf(a.to));
      } else if (a.kind === 'adopt') for (const row of [a.base, ...(a.alongside ?? [])]) touched.add(parentOf(row.relPath));
      else {
        touched.add(parentOf(a.relPath));
        if (a.kind === 'mkdir-local') touched.add(a.relPath);
        if (a.kind === 'upload' && a.thenMoveTo !== undefined) touched.add(parentOf(a.thenMoveTo.relPath));
      }
      if (a.kind === 'conflict') touched.add(parentOf(a.conflictPath));
      if (wantsUpload(a) && !heldOpen.has(`${a.kind}\0${'relPath' in a ? a.relPath : ''}`)) wroteRemote = true;
    }
  }
  rt.cache.local = local;
  rt.cache.touchedDirs = touched;
  rt.cache.remote = listing;
  rt.cache.remoteFresh = !wroteRemote;
}

/**
 * Keeps the hash of every scanned file that has no base row, by key with its stat: files waiting for a remote
 * folder (or withheld) would otherwise be hashed again on every pass. A large one the scan left unread keeps
 * its null hash, so it stays unread while unchanged. A full scan rebuilds the map, so it holds only files that
 * exist and are still unbased.
 */
function rememberUnbasedHashes(rt: PairRuntime, obs: LocalObservation, full: boolean, byKey: Map<string, BaseEntry> | null): void {
  if (full) rt.unbasedHashes = new Map();
  for (const f of obs.files.values()) {
    if (byKey?.has(f.key) === true) continue;
    rt.unbasedHashes.set(f.key, { size: f.size, mtimeMs: f.mtimeMs, inode: f.inode, ctimeMs: f.ctimeMs, sha256: f.sha256 });
  }
}

/**
 * What the executor found of a download-only pair's files put back with an old time (checkPutBack): one that was
 * none of its document's earlier versions is not looked at again while it and the document stay as they are; one
 * that was took the latest. Returns the paths of those replaced.
 */
function rememberPutBackLooks(rt: PairRuntime, ex: ExecutionReport): Set<string> {
  const replaced = new Set<string>();
  for (const look of ex.putBackChecked ?? []) {
    if (look.replaced) {
      rt.putBackLookedAt.delete(look.key);
      replaced.add(look.relPath);
    } else rt.putBackLookedAt.set(look.key, putBackLook(look.sha256, look.versionId));
  }
  return replaced;
}

/**
 * Uploads refused for good this pass are remembered with their content (see withheldAsRefused). Returns them as
 * the 'upload-refused' issues that later passes report for them.
 */
function rememberRefused(rt: PairRuntime, plan: Plan, execution: ExecutionReport, at: number): Issue[] {
  const issues: Issue[] = [];
  const refused = execution.failures.filter(refusedForGood);
  if (refused.length === 0) return issues;
  // The plan's uploads by path, once: a service that refuses every commit of a large first sync refuses thousands.
  const uploads = new Map<string, Array<Extract<Action, { kind: 'upload' }>>>();
  for (const g of plan.groups) {
    for (const a of g) if (a.kind === 'upload') uploads.set(a.relPath, [...(uploads.get(a.relPath) ?? []), a]);
  }
  for (const f of refused) {
    for (const a of uploads.get(f.relPath) ?? []) {
      rt.refusedUploads.set(a.key, { content: contentIdOf(a.local), detail: f.message, at });
      issues.push({ relPath: a.relPath, code: 'upload-refused', detail: f.message });
    }
  }
  if (issues.length > 0) saveRefused(rt);
  return issues;
}

/**
 * A document deleted on the service while its file was edited here: the edit won and became a new document
 * (reconcile's remoteDeleted). That is a conflict in every sync tool's terms, and it goes into the history
 * `status` lists, with a warning, so that whoever deleted it learns why it is back (black-box round 26, P1).
 * Not in upload mode, where every remote delete is answered by the local file, edited or not.
 */
function recordEditsOfDeleted(rt: PairRuntime, plan: Plan, execution: ExecutionReport, at: Date): void {
  if (rt.pair.direction !== 'both' || (execution.done.upload ?? 0) === 0) return;
  for (const g of plan.groups) {
    for (const a of g) {
      // Done when its path has a base row again (a new document's): a failed or unstarted upload has none. (At the
      // path it was moved to after the upload, when it went into a folder renamed on the service: thenMoveTo.)
      if (a.kind !== 'upload' || a.reason !== 'recreate-remote-deleted') continue;
      if (rt.store.getBaseByKey(a.key) === undefined && (a.thenMoveTo === undefined || rt.store.getBaseByKey(a.thenMoveTo.key) === undefined)) continue;
      const detail = 'deleted on the service while edited here; the edit was uploaded as a new document';
      rt.store.addConflict({ relPath: a.relPath, conflictPath: null, documentId: null, policy: 'edit-kept', detail, at: at.toISOString() });
      rt.log.warn({ relPath: a.relPath }, `conflict: ${a.relPath} was ${detail}`);
    }
  }
}

/** An upload the service refused as such (a name, the metadata, another document): sending it again would not help. */
function refusedForGood(f: ActionFailure): boolean {
  return f.kind === 'upload' && (f.code === 'COMMIT_REFUSED' || f.code === 'COMMIT_MISDIRECTED') && !f.retryable;
}

function saveRefused(rt: PairRuntime): void {
  saveRefusedUploads(rt.store, configDigest(rt.pair, rt.caseInsensitive), rt.refusedUploads);
}

function executorDeps(rt: PairRuntime, opts: PassOptions, now: () => Date): ExecutorDeps {
  return {
    pair: rt.pair.name,
    root: rt.pair.localPath,
    binderId: rt.pair.binderId,
    caseInsensitive: rt.caseInsensitive,
    client: rt.client,
    store: rt.store,
    trash: rt.trash,
    log: rt.log,
    metadata: rt.metadata,
    // An upload-only pair never changes local files: a version found buried under ours is recorded, not copied
    // down (black-box round 31a, F4), as its other conflicts are settled local-wins (conflictPolicyFor).
    conflictPolicy: rt.pair.direction === 'upload' ? 'local-wins' : rt.pair.conflictPolicy,
    uploadOnly: rt.pair.direction === 'upload',
    versionLabelScheme: rt.pair.versionLabel.scheme,
    now,
    // Files in flight through the executor (download, fsync, commit): more than the client's request (8) and
    // transfer (4) slots, so the local fsyncs of some files overlap the network time of others.
    concurrency: opts.concurrency ?? 16,
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.windDown ? { windDown: opts.windDown } : {}),
    ...(opts.onBytes ? { onBytes: opts.onBytes } : {}),
    ...(opts.onActionDone ? { onActionDone: opts.onActionDone } : {}),
    failuresLogged: rt.failuresLogged,
    commitHolds: rt.commitHolds,
  };
}

/**
 * The conflict copies this pass kept locally without uploading them (a pair that does not upload): local files
 * with no document, reported as the next pass reports them (planLocalFile).
 */
function conflictCopiesKeptLocal(plan: Plan, execution: ExecutionReport, ctx: ReconcileContext, metadata: PairRuntime['metadata']): Issue[] {
  const kept = new Set(execution.conflicts.flatMap((c) => (c.conflictPath !== null ? [c.conflictPath] : [])));
  // Why it stays local, as the next pass will say it: the pair does not upload, or the copy's metadata cannot be given
  // (withheldForMetadata kept it local).
  const why = (copy: string): Issue =>
    (ctx.direction === 'both' ? metadataHold(copy, true, metadata) : null) ?? { relPath: copy, code: 'local-change-not-uploaded', detail: newLocalNotUploaded(ctx) };
  return plan.groups.flat().flatMap((a) => (a.kind === 'conflict' && a.policy === 'keep-both' && !a.uploadConflictCopy && kept.has(a.conflictPath) ? [why(a.conflictPath)] : []));
}

/** Issues that leave a pass converged (INFORMATIONAL_ISSUES), and so may stand beside the in-sync mark. */
function onlyInformational(issues: readonly Issue[]): boolean {
  return issues.every((i) => INFORMATIONAL_ISSUES.has(i.code));
}

/**
 * The folders of the other synced names of files this plan uploaded as edits, where those files have hard links
 * (st_nlink > 1): same inode in the base, another path. Costs one lstat per edit, and a walk of the base only
 * when a hard-linked file was edited.
 */
function otherLinksOfEdited(rt: PairRuntime, plan: Plan, base: ReadonlyMap<string, BaseEntry>): string[] {
  const inodes = new Set<number>();
  const edited = new Set<string>();
  for (const g of plan.groups) {
    for (const a of g) {
      if (a.kind !== 'upload' || a.reason !== 'local-modified') continue;
      edited.add(a.key);
      try {
        if (fs.lstatSync(path.join(rt.pair.localPath, a.relPath)).nlink > 1) inodes.add(a.local.inode);
      } catch {
        /* gone since: nothing to follow */
      }
    }
  }
  if (inodes.size === 0) return [];
  const dirs = new Set<string>();
  for (const b of base.values()) if (inodes.has(b.inode) && !edited.has(b.key)) dirs.add(parentOf(b.relPath));
  return [...dirs];
}

/**
 * Whether the pair's trash can take a file again after it could not (held downloads, unreplaceable.ts): it is
 * writable, and after a full disk, has room for the file and a margin.
 */
function trashCanTake(rt: PairRuntime): TrashCheck {
  return (dir, errno, bytes) => rt.trash.writable() && ((errno !== 'ENOSPC' && errno !== 'EDQUOT') || (freeBytes(dir) ?? 0) > bytes + TRASH_ROOM_MARGIN);
}

/** Room kept free beside a file a full trash is to take again (see trashCanTake). */
const TRASH_ROOM_MARGIN = 16 * 1024 * 1024;

/**
 * The ids of the remote documents the listing could not place locally (an ignored name, say): the in-sync mark
 * may stand beside them, as their issues are the same for the same inputs. Null when a folder could not be placed:
 * the saved folder tree then lacks it, and the mark's checks would compare against a tree that is not the binder's.
 */
function unmappedDocuments(observation: RemoteObservation): Set<string> | null {
  const ids = new Set<string>();
  for (const u of observation.unmappable) {
    if (u.folderId !== undefined || u.documentId === undefined) return null;
    ids.add(u.documentId);
  }
  return ids;
}
