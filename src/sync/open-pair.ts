// Opening a pair: the root lock, the state DB, and every check that can be made before the first pass (same
// binder, same root, the binder exists, the root is there); and, before each pass, that both are still in place.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { PairConfig } from '../config/schema.js';
import { BinderSyncError } from '../errors.js';
import { ensureSameRoot, STATE_ROOT } from './moved-root.js';
import { renamedPairError, STATE_BINDER, swappedNamesError } from './pair-identity.js';
import { Trash } from '../local/fs-ops.js';
import { detectCaseInsensitive, detectCaseInsensitiveWithoutWriting } from '../local/fs-probe.js';
import { holdRoot } from '../local/root-lock.js';
import { createIgnoreMatcher } from '../local/ignore.js';
import { PARALLEL_FROM_FILES, prewarmDigestWorker } from '../local/tree-digest.js';
import { ServiceError, type ServiceClient } from '../service/index.js';
import { notePairState, undoFreshPairState } from '../state/fresh-state.js';
import { openForReading } from '../state/sibling-states.js';
import { StateStore } from '../state/store.js';
import { compileMetadataRules, uploadsHeldResolver, type MetadataResolver } from './metadata-rules.js';
import { configDigest, IN_SYNC_MARK, markedTreeFiles } from './in-sync-mark.js';
import { loadRefusedUploads } from './refused-uploads.js';
import { loadCommitsRefusedAt } from './write-access.js';
import type { PairRuntime } from './pair-runtime.js';

/**
 * Opens the pair's state and checks what can be checked before the first pass.
 *
 * `dryRun`: for a pair that only plans (`sync --dry-run`), nothing is created or changed on disk: the state DB is
 * an in-memory copy (StateStore.openScratchCopy), a missing sync root is not created (the pass sees it empty), and
 * the case probe writes no file.
 */
export async function openPair(
  pair: PairConfig,
  stateDir: string,
  client: ServiceClient,
  log: Logger,
  opts: {
    dryRun?: boolean;
    /**
     * Metadata rules that do not fit the binder: 'refuse' the pair (`sync`, `check`: a config error, exit 2), or
     * 'hold-uploads' (the daemon: downloads go on, every upload is held back and listed with the reason).
     */
    badRules?: 'refuse' | 'hold-uploads';
    /**
     * The binder's metadata elements could not be read (a 500, not a 404) for a pair that uploads: 'refuse' the
     * pair (the error stops it), or 'hold-uploads': downloads go on, uploads wait, and each pass asks again.
     */
    unreadableElements?: 'refuse' | 'hold-uploads';
    /** Ends the requests of the opening (a daemon winding down); nothing is written before they answer. */
    signal?: AbortSignal;
  } = {},
): Promise<PairRuntime> {
  const dryRun = opts.dryRun === true;
  // The binder's metadata elements (and the token before them) are asked for first: two round trips that run
  // while the root lock is taken and the state opened, instead of after. Read-only, and awaited below; the
  // client's close() ends it if this pair stops before then.
  const elements$ = client.getMetadataElements(pair.binderId, opts.signal);
  elements$.catch(() => undefined); // a failure is handled where it is awaited, never an unhandled rejection
  // Before anything is opened: another process syncing this folder with another stateDir is refused.
  if (!dryRun) await holdRoot(pair.localPath, { pair: pair.name, stateDir });
  const pairStateDir = path.join(stateDir, pair.name);
  const stateFile = path.join(pairStateDir, 'state.db');
  const stateLost = lostStateDb(pairStateDir, stateFile);
  // Refused before anything is made: a state DB (and its directory) left by a refused renamed pair was where
  // the hint's `mv old new` then moved the record into, and the pair started over (black-box round 31a, F3).
  const stateIsNew = !fs.existsSync(stateFile);
  if (stateIsNew) ensureNotRenamed(pair, stateDir, true);
  const fresh = dryRun ? null : notePairState(stateDir, pair.name);
  if (!dryRun) fs.mkdirSync(pairStateDir, { recursive: true, mode: 0o700 });
  const store = dryRun ? StateStore.openScratchCopy(stateFile) : StateStore.open(stateFile);
  try {
    // A large tree that the first pass will digest on two threads: the worker starts now, beside the rest of
    // the start (metadata, root checks), instead of when the walk begins.
    if (!dryRun && markedTreeFiles(store.getMeta(IN_SYNC_MARK)) >= PARALLEL_FROM_FILES) prewarmDigestWorker();
    // Damage anywhere in the file is refused now, before any pass: a pass with nothing to do reads no base row and
    // said "in sync" over a damaged record (black-box round 37b, F5). ~50 ms at 100k files (state/integrity.ts),
    // while the worker above starts and the binder's elements are asked for.
    if (!stateIsNew) store.assertIntact(pair.name);
    if (stateLost !== null) {
      // A pair directory without its state DB: the record of what was synced is gone (deleted, moved aside). Said
      // once, as the empty DB is refused with these words (black-box round 29a, F3); the pass then rebuilds it.
      log.warn({ pair: pair.name, file: stateFile, left: stateLost }, `pair ${pair.name}: its state DB ${stateFile} is missing, but the pair has synced before (${stateLost}): the record of what was synced is rebuilt by comparing content; a file holding one of the versions just before its document's latest takes the latest, other files that differ on the two sides become conflicts (both kept), and a document deleted on the service since the last sync comes back from the local copy`);
    }
    // An empty state of an older version's refused start (or a state DB made but never synced) is asked too.
    if (!stateIsNew && store.countBase() === 0) ensureNotRenamed(pair, stateDir, true);
    ensureSameBinder(pair, store, stateDir);
    ensureSameRootOrSwapped(pair, store, stateDir, log);
    // The binder first: a wrong binderId is said (as such) before the sync root is created.
    let elementsRead = true;
    let elementsUnread: BinderSyncError | null = null;
    const elements = await elements$.catch(async (err: unknown) => {
      const said = await binderNotFoundOrListed(pair, err, client);
      // Cancelled by a stop (SIGTERM, a reload): not a failure of the endpoint, nothing to warn about.
      if (!(said instanceof BinderSyncError && said.retryable) || said.code === 'ABORTED') throw said;
      // Only a 404 says the binder is wrong. Anything else (a 500 of that one endpoint) is no reason to stop
      // downloads: a download-only pair never needs the elements; a two-way pair (of the daemon, or of `sync`,
      // which then exits 3) holds its uploads back, since their metadata cannot be checked, and reads the
      // elements again before each pass (black-box round 25, N1).
      if (pair.direction === 'download') {
        log.warn({ pair: pair.name, code: said.code }, `pair ${pair.name}: could not read the binder's metadata elements (${said.message}); not needed by a download-only pair`);
        elementsRead = false;
        return [];
      }
      if (opts.unreadableElements !== 'hold-uploads') throw said;
      // Whether downloads go on is not said: a 500 of this endpoint alone lets them, the service failing or not
      // reached at all (the same 503s, 429s or refused connections everywhere) does not, and the pass then says
      // so itself (black-box rounds 42c, P1-b and 43a, F7: "downloads go on" was said before a pass that did none).
      log.warn({ pair: pair.name, code: said.code }, `pair ${pair.name}: could not read the binder's metadata elements (${said.message}); uploads wait until they can be read (asked again at the next pass)`);
      elementsUnread = said;
      return [];
    });
    ensureRoot(pair, store, log, !dryRun);
    const caseInsensitive = dryRun ? detectCaseInsensitiveWithoutWriting(pair.localPath) : detectCaseInsensitive(pair.localPath);
    const serviceChangedFrom = serviceChange(store, client);
    if (serviceChangedFrom !== null) {
      log.warn({ pair: pair.name, from: serviceChangedFrom, to: client.serviceIdentity }, `pair ${pair.name}: the service changed since the last pass (was ${serviceChangedFrom}, now ${client.serviceIdentity}); if it is another server, its documents are not the synced ones, and the safety gates stop a pass that would trash them`);
    }
    // A download-only pair that could not read the elements (above) never uploads: its rules are not checked
    // against an empty list, which would call every element unknown.
    const metadata = elementsUnread !== null
      ? uploadsHeldResolver(elementsUnread, UNREAD_ELEMENTS_REASON)
      : rulesOrHeld(pair, elementsRead ? pair.metadata : [], elements, log, opts.badRules);
    const trash = new Trash(path.join(pairStateDir, 'trash'), pair.localPath);
    return {
      pair,
      pairStateDir,
      client,
      store,
      trash,
      log: log.child({ pair: pair.name }),
      ignore: createIgnoreMatcher(pair.ignore),
      metadata,
      metadataUnread: elementsUnread,
      caseInsensitive,
      serviceChangedFrom,
      readOnly: null,
      readOnlySince: 0,
      missingSince: new Map(),
      commitsRefusedAt: loadCommitsRefusedAt(store),
      historyPrunedOn: null,
      tempsCleaned: false,
      lastGate: null,
      failuresLogged: new Map(),
      commitHolds: new Map(),
      refusedUploads: loadRefusedUploads(store, configDigest(pair, caseInsensitive), Date.now()),
      unreplaceable: new Map(),
      refusedUrls: new Map(),
      putBackLookedAt: new Map(),
      olderListingSaid: false,
      olderListingChecks: new Map(),
      unbasedHashes: new Map(),
      cache: { local: null, touchedDirs: new Set(), remote: null, remoteAt: 0, remoteFresh: false, raw: null, foldersAt: 0, searchSkippedUntil: 0, searchInconsistentRuns: 0, walkSoon: false, quiet: false, localParked: false, issues: [] },
    };
  } catch (err) {
    store.close();
    // A first opening that failed: the state DB it made holds nothing synced; it goes, with the folder if new.
    if (fresh !== null) undoFreshPairState(fresh);
    throw err;
  }
}

/**
 * What a daemon checks before it takes a changed or new pair from a reloaded config, with nothing opened for
 * writing: the pair's state is bound to the same binder, the binder exists, and its metadata rules fit the binder's
 * elements. Each of these would otherwise stop the pair after the reload tore down the one that was running
 * (black-box round 24, M4), where `sync` and `check` refuse the same config with exit 2. Throws the error that
 * openPair would throw; a service that cannot be reached just now (retryable) is not a reason to refuse.
 */
export async function preflightPair(pair: PairConfig, stateDir: string, client: ServiceClient): Promise<void> {
  const bound = stateBoundToOtherBinder(pair, stateDir);
  if (bound !== null) throw bound;
  ensureNotRenamed(pair, stateDir);
  let elements;
  try {
    elements = await client.getMetadataElements(pair.binderId);
  } catch (err) {
    const said = await binderNotFoundOrListed(pair, err, client);
    if (said instanceof BinderSyncError && said.retryable) return;
    throw said;
  }
  compileMetadataRules(pair.metadata, elements, pair.name);
}

const UNREAD_ELEMENTS_REASON = "the binder's metadata elements could not be read, so no upload's metadata can be checked; uploads wait until they can (tried again every pass)";

/** The pair's compiled rules; rules that do not fit, with 'hold-uploads', a resolver that holds every upload. */
function rulesOrHeld(
  pair: PairConfig,
  rules: PairConfig['metadata'],
  elements: Awaited<ReturnType<ServiceClient['getMetadataElements']>>,
  log: Logger,
  badRules: 'refuse' | 'hold-uploads' | undefined,
): MetadataResolver {
  try {
    return compileMetadataRules(rules, elements, pair.name);
  } catch (err) {
    if (badRules !== 'hold-uploads' || !(err instanceof BinderSyncError) || err.code !== 'METADATA_RULES_INVALID') throw err;
    log.error({ pair: pair.name, code: err.code }, `${err.message}\n  no upload goes until the rules are fixed (downloads go on); hint: ${err.hint ?? ''}`);
    return uploadsHeldResolver(err);
  }
}

/**
 * A daemon's two-way pair that could not read its binder's metadata elements when it opened (metadataUnread)
 * asks for them again, before a pass: once read, its rules are checked as at open and uploads go (or stay held,
 * with the reason, if the rules do not fit). Still failing (retryable), uploads stay held; a 404 now stops the
 * pair as it would have at open.
 */
export async function readMetadataElementsAgain(rt: PairRuntime): Promise<void> {
  let elements;
  try {
    elements = await rt.client.getMetadataElements(rt.pair.binderId);
  } catch (err) {
    const said = await binderNotFoundOrListed(rt.pair, err, rt.client);
    if (said instanceof BinderSyncError && said.retryable) {
      rt.log.debug({ code: said.code }, `the binder's metadata elements still cannot be read (${said.message}); uploads wait`);
      rt.metadataUnread = said;
      return;
    }
    throw said;
  }
  rt.metadata = rulesOrHeld(rt.pair, rt.pair.metadata, elements, rt.log, 'hold-uploads');
  rt.metadataUnread = null;
  // The uploads held until now were left out of the last plan, which was therefore empty: a quiet poll (both sides
  // unchanged since) would skip planning, and they would wait for an unrelated change. This pass plans again.
  rt.cache.quiet = false;
  if (rt.metadata.blockedBecause === undefined) rt.log.info("read the binder's metadata elements: uploads go again");
}

/** Meta key: the service (API address and tenant) this pair's state was last synced with. */
export const STATE_SERVICE = 'service';

/** The recorded service when it differs from the client's; a state with none (new, or older) records it. */
function serviceChange(store: StateStore, client: ServiceClient): string | null {
  const recorded = store.getMeta(STATE_SERVICE);
  if (recorded === undefined || recorded === '') {
    store.setMeta(STATE_SERVICE, client.serviceIdentity); // new, or a state from before this check: taken as is
    return null;
  }
  return recorded === client.serviceIdentity ? null : recorded;
}

/**
 * The error openPair would throw because the pair's state was synced with another binder than the config names
 * (read-only: for a reload's preflight and for `check`), or null. A state DB that does not exist yet, or has no
 * binder recorded, is bound to nothing.
 */
export function stateBoundToOtherBinder(pair: PairConfig, stateDir: string): BinderSyncError | null {
  const stateFile = path.join(stateDir, pair.name, 'state.db');
  if (!fs.existsSync(stateFile)) return null;
  const store = openForReading(stateFile);
  try {
    const recorded = store.getMeta(STATE_BINDER);
    return recorded !== undefined && recorded !== '' && recorded !== pair.binderId ? binderChanged(pair, store, stateDir) : null;
  } finally {
    store.close();
  }
}

/**
 * A pair's state (base, outbox, folders) belongs to one binder. If the config now names another binder for the
 * same pair, every base document would look deleted remotely and its local file would go to the trash: the pair
 * is refused instead. A state DB from before this check learns its binder from the first pass.
 */
function ensureSameBinder(pair: PairConfig, store: StateStore, stateDir: string): void {
  const recorded = store.getMeta(STATE_BINDER);
  if (recorded === undefined || recorded === '') {
    store.setMeta(STATE_BINDER, pair.binderId);
    return;
  }
  if (recorded === pair.binderId) return;
  throw binderChanged(pair, store, stateDir);
}

/**
 * ensureSameRoot, but a folder refused as another one than the state's may be that of another pair whose name
 * this one took (two names swapped, both pairs on one binder): said as such (swappedNamesError).
 */
function ensureSameRootOrSwapped(pair: PairConfig, store: StateStore, stateDir: string, log: Logger): void {
  try {
    ensureSameRoot(pair, store, path.join(stateDir, pair.name), log);
  } catch (err) {
    if (!(err instanceof BinderSyncError) || err.code !== 'CONFIG_PAIR_ROOT_CHANGED') throw err;
    throw swappedNamesError(pair, stateDir, { binder: store.getMeta(STATE_BINDER), root: store.getMeta(STATE_ROOT) }) ?? err;
  }
}

/** The state (`store`, of pair's name) records another binder: two pairs' names swapped, or the binderId changed. */
function binderChanged(pair: PairConfig, store: StateStore, stateDir: string): BinderSyncError {
  const recorded = store.getMeta(STATE_BINDER) ?? '';
  const pairStateDir = path.join(stateDir, pair.name);
  return swappedNamesError(pair, stateDir, { binder: recorded, root: store.getMeta(STATE_ROOT) }) ?? new BinderSyncError(`pair ${pair.name}: its state was synced with binder ${recorded}, but the config now says binder ${pair.binderId}`, {
    code: 'CONFIG_PAIR_BINDER_CHANGED',
    retryable: false,
    context: { pair: pair.name, recorded, configured: pair.binderId, state: pairStateDir },
    hint: `to sync another binder, give the pair a new name and an empty localPath (a new pair on this folder would upload its files into binder ${pair.binderId}); to go on with binder ${recorded}, set binderId back. Nothing was changed.`,
  });
}

/**
 * The state DB this process has open must still be the file at its path. Deleted under a running daemon (an
 * `rm -rf` of the stateDir), every later pass would record its work in a file nobody can open again, and the
 * next start would begin with no record of what was synced (black-box round 10, F4): it is written back from
 * the open connection, which still holds all of it, and reopened. Replaced by another file, the pair stops.
 */
export function keepStateDbInPlace(rt: PairRuntime): void {
  const where = rt.store.whereabouts();
  if (where === 'in-place') return;
  const file = rt.store.file;
  if (where === 'truncated') {
    // Unlike a deleted file, a cut one is lost to this connection too: only a new state can go on (round 11, F4).
    throw new BinderSyncError(`pair ${rt.pair.name}: the state DB ${file} was cut short by another program while this process had it open; it is damaged`, {
      code: 'STATE_CORRUPT',
      retryable: false,
      context: { pair: rt.pair.name, file },
      hint: `stop binder-sync and move ${file} (with its -wal and -shm) aside; the next start syncs this pair as new: files equal on both sides are taken as synced, different ones are kept both ways. Nothing more was synced for this pair.`,
    });
  }
  if (where === 'replaced') {
    throw new BinderSyncError(`pair ${rt.pair.name}: the state DB ${file} was replaced by another file while this process had it open`, {
      code: 'STATE_REPLACED',
      retryable: false,
      context: { pair: rt.pair.name, file },
      hint: 'restart binder-sync to use the new file (a restored backup, say); nothing more was synced for this pair.',
    });
  }
  rt.store.writeBack();
  // Closed before the new file is opened: closing a WAL connection removes `state.db-wal` and `-shm` by their
  // names, which would then be the new connection's.
  rt.store.close();
  rt.store = StateStore.open(file);
  rt.log.warn({ file }, `the state DB ${file} was deleted while binder-sync ran: written back from the copy it had open, nothing of it is lost (the trash and conflict copies that were deleted with it are gone)`);
}

/**
 * The sync root must exist and be a directory. A missing root is created only for a pair that has never
 * synced (no base); once there is a base, a missing root is an error (an unmounted disk), never a mass delete.
 * Returns whether the root exists; with `create` false (a dry run) a missing one is left missing.
 */
export function ensureRoot(pair: PairConfig, store: StateStore, log: Logger, create: boolean): boolean {
  let st: fs.Stats | null = null;
  try {
    st = fs.statSync(pair.localPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw rootError(pair, `cannot be read (${(err as Error).message})`);
  }
  if (st === null) {
    if (store.countBase() > 0) throw rootError(pair, 'is missing, but this pair has synced before');
    // Only the root itself is created, never a chain of folders: a missing parent is more often a disk not
    // mounted yet or a typo than a wish, and the whole binder would land on the wrong disk (Syncthing refuses too).
    const parent = path.dirname(pair.localPath);
    if (!fs.statSync(parent, { throwIfNoEntry: false })?.isDirectory()) {
      throw rootError(pair, `does not exist, and neither does its parent folder ${parent}`, `if the path is right, create it (mkdir -p ${pair.localPath}); a missing parent is often a disk that is not mounted. Nothing was changed.`);
    }
    if (!create) return false;
    fs.mkdirSync(pair.localPath);
    // Said, so that a mistyped localPath is noticed before the whole binder lands there.
    log.info({ localPath: pair.localPath }, `created the sync root ${pair.localPath}: it did not exist (this pair has not synced before)`);
    return true;
  }
  if (!st.isDirectory()) throw rootError(pair, 'is not a directory');
  return true;
}

/**
 * A 404 for the pair's binder, said with the pair and binder it is about (the service error's own hint names
 * the binderId, see service/errors.ts BINDER_REQUESTS). Other errors pass through.
 */
function binderNotFound(pair: PairConfig, err: unknown): unknown {
  if (!(err instanceof ServiceError) || err.code !== 'SERVICE_NOT_FOUND') return err;
  return new BinderSyncError(`pair ${pair.name}: the service has no binder ${pair.binderId} (${err.message})`, {
    code: err.code,
    retryable: err.retryable,
    context: { pair: pair.name, binderId: pair.binderId },
    ...(err.hint !== undefined ? { hint: err.hint } : {}),
    cause: err,
  });
}

/**
 * What shows that the pair synced before although its state DB is not there: the pair's directory, empty or holding
 * anything else (its trash, a DB moved aside, a write-ahead log). Null when it does not exist (a new pair).
 */
function lostStateDb(pairStateDir: string, stateFile: string): string | null {
  if (fs.existsSync(stateFile)) return null;
  let names: string[];
  try {
    names = fs.readdirSync(pairStateDir);
  } catch {
    return null;
  }
  const left = names.filter((n) => !n.startsWith('state.db.creating-')).sort();
  // The directory itself is made only by a pair that opened its state here: an empty one is a DB deleted with
  // its -wal and -shm by a pair that never trashed anything (it was silent: black-box round 30a, F2). Only a
  // crash between making the directory and creating the DB leaves one too (a false warning, once).
  if (left.length === 0) return names.length === 0 ? 'its directory is still there, empty' : null;
  return `its directory still holds ${left.slice(0, 3).join(', ')}${left.length > 3 ? `, and ${left.length - 3} more` : ''}`;
}

/** Throws renamedPairError's error; `ownStateEmpty`: the pair's own state is missing or has nothing synced. */
function ensureNotRenamed(pair: PairConfig, stateDir: string, ownStateEmpty = false): void {
  const err = renamedPairError(pair, stateDir, ownStateEmpty);
  if (err !== null) throw err;
}

/** Said for a 404 of a listed binder's metadata elements, by openPair and by `check`. */
export const LISTED_BINDER_404_HINT =
  "the binder is listed, so the binderId is right: the service (or this client's access to that binder) answers 404 for its metadata elements; the daemon tries again with back-off, ask the service's administrator if it lasts";

/**
 * binderNotFound, unless GET /binders lists the binder: then the 404 of its metadata elements is the service's
 * (or this client's permissions on that binder), and sending the operator to check a right binderId misleads
 * (black-box round 24, M8). Asked only on this failure path. If GET /binders answers 404 too, the address is
 * wrong (baseUrlWrong); if the listing fails otherwise, binderNotFound stands.
 */
async function binderNotFoundOrListed(pair: PairConfig, err: unknown, client: ServiceClient): Promise<unknown> {
  const said = binderNotFound(pair, err);
  if (said === err) return err;
  let listing: Awaited<ReturnType<ServiceClient['listBinders']>> | ServiceError | null;
  try {
    listing = await client.listBinders();
  } catch (listErr) {
    listing = listErr instanceof ServiceError ? listErr : null;
  }
  // GET /binders is the one path every server has: a 404 there too says the base address is wrong (a missing or
  // wrong API prefix), not the binderId, which every API path would answer 404 to (black-box round 26, Q3).
  if (listing instanceof ServiceError && listing.code === 'SERVICE_NOT_FOUND') return baseUrlWrong(pair, client, err, listing);
  const listed = Array.isArray(listing) ? listing.find((b) => b.id === pair.binderId) : undefined;
  if (listed === undefined) return said;
  return new BinderSyncError(`pair ${pair.name}: binder ${pair.binderId} ("${listed.name}") is listed by the service, but its metadata elements answered 404 (${(err as Error).message})`, {
    code: 'SERVICE_NOT_FOUND',
    retryable: true,
    context: { pair: pair.name, binderId: pair.binderId },
    hint: LISTED_BINDER_404_HINT,
    cause: err,
  });
}

/** Said when GET /binders answers 404 as well: the service's address, not the binder, is wrong. */
export const BASE_URL_404_HINT = 'check service.baseUrl: it must include the API path prefix, if the service has one (e.g. https://host/v1)';

function baseUrlWrong(pair: PairConfig, client: ServiceClient, err: unknown, listing: ServiceError): BinderSyncError {
  return new BinderSyncError(`pair ${pair.name}: the service answers 404 to GET /binders as well as to binder ${pair.binderId}'s metadata elements: its address ${client.baseUrl} looks wrong (${listing.message})`, {
    code: 'SERVICE_NOT_FOUND',
    retryable: false,
    context: { pair: pair.name, binderId: pair.binderId, baseUrl: client.baseUrl },
    hint: BASE_URL_404_HINT,
    cause: err,
  });
}

function rootError(pair: PairConfig, what: string, hint = 'is the disk mounted and the path right? Nothing was changed.'): BinderSyncError {
  return new BinderSyncError(`pair ${pair.name}: the local root ${pair.localPath} ${what}`, {
    code: 'LOCAL_ROOT',
    retryable: true,
    context: { pair: pair.name, localPath: pair.localPath },
    hint,
  });
}
