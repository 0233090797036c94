// Uploads through the three-step flow with a crash-safe outbox: each stage is recorded before it is taken,
// so a restart finishes a verified upload with the same uploadId (no duplicate version) and drops one
// that was never verified (nothing was committed for it).
import fs, { createReadStream } from 'node:fs';
import { Transform, Writable, type Readable } from 'node:stream';
import { BinderSyncError } from '../errors.js';
import { resolveInside, toFileStat } from '../local/fs-ops.js';
import { NotTheFileError, openSameFileSync } from '../local/open-for-read.js';
import { failpoint } from '../failpoints.js';
import { answersRepeatedCommit, COMMIT_REQUEST, ServiceError } from '../service/index.js';
import type { Document, DocumentVersion, MetadataValue } from '../service/schemas.js';
import type { OutboxRow } from '../state/store.js';
import { sameStat, type BaseEntry, type LocalFile, type UploadTarget } from './model.js';
import { FolderRecheck } from './name-recheck.js';
import { baseNameOf } from './path-key.js';
import { nextVersionLabel } from './version-label.js';
import type { ExecutorDeps } from './executor-deps.js';
import { versionsBetween } from './version-order.js';

export interface UploadRequest {
  relPath: string;
  key: string;
  abs: string;
  local: LocalFile;
  target: UploadTarget;
  reason: string;
}

/**
 * Size of the reads feeding an upload of a large file (the default is 64 KiB): 16x fewer reads, hash updates
 * and socket writes, each a round trip through the event loop (reads through the thread pool too). Not for
 * small files: the stream allocates a buffer of this size for every read, whatever the file's size.
 */
const READ_BUFFER = 1 << 20;

function readBufferFor(size: number): number {
  return size > READ_BUFFER ? READ_BUFFER : 64 * 1024;
}

/** How often a large file being uploaded is looked at for a change (its stat): at most once a second. */
const CHANGE_LOOK_MS = 1000;
/** Files from this size on are looked at while they are sent; a smaller one is sent in well under a second. */
const GUARD_FROM_BYTES = 8 * 1024 * 1024;

/**
 * The file's bytes for the PUT. A large one is looked at (lstat, as the scanner does) at most once a second while
 * it is sent, and the PUT ends as soon as it changed: its content could not be committed anyway, and a 200 MiB
 * file saved every few seconds was sent whole each time, 5 PUTs for 2 versions (black-box round 28a, T5).
 */
function readForUpload(abs: string, expect: LocalFile, root: string): Readable {
  // Opened only when it is still the file the plan was made for, inside the root (open-for-read.ts): the upload
  // may have waited in the queue while a program put a symbolic link or a FIFO there.
  const source = createReadStream(abs, { fd: openForUpload(abs, expect, root), highWaterMark: readBufferFor(expect.size) });
  if (expect.size < GUARD_FROM_BYTES) return source;
  let lookedAt = Date.now();
  const guard = new Transform({
    transform(chunk: Buffer, _enc, done) {
      const now = Date.now();
      if (now - lookedAt >= CHANGE_LOOK_MS) {
        lookedAt = now;
        try {
          assertUnchanged(abs, expect, 'while uploading: the rest of it was not sent');
        } catch (err) {
          done(err as Error);
          return;
        }
      }
      done(null, chunk);
    },
  });
  source.once('error', (err) => guard.destroy(err));
  guard.once('close', () => source.destroy());
  return source.pipe(guard);
}

/** Uploads one local file as planned. Returns the new base entry (already stored). */
export async function uploadLocalFile(d: ExecutorDeps, req: UploadRequest): Promise<{ base: BaseEntry; bytes: number }> {
  assertUnchanged(req.abs, req.local, 'before upload');
  // Before its bytes are sent: a new document no metadata rule gives the required values fails here
  // (METADATA_MISSING). A new version carries its document's own values too: only when the rules alone do not
  // cover every required element is the document read first, to see whether its values do.
  if (req.target.documentId === null) d.metadata.forPath(req.relPath);
  else if (d.metadata.missingFor(req.relPath).length > 0) {
    const doc = await d.client.getDocument(req.target.documentId);
    if (doc !== null) assertMetadataComplete(d, req.relPath, req.target.documentId, doc.metadata ?? []);
  }
  const labels = req.target.documentId ? (await versionsOrGone(d, req)).map((v) => v.version ?? '') : [];
  const versionLabel = nextVersionLabel(labels.filter((l) => l !== ''), d.versionLabelScheme, d.now());
  // Each outbox stage is group committed (transactionSoon) with the other uploads' and awaited before the
  // step it records is taken: as durable as a transaction of its own, for a fraction of the commits.
  const id = await d.store.transactionSoon(() => d.store.addOutbox({
    relPath: req.relPath,
    key: req.key,
    documentId: req.target.documentId,
    folderId: req.target.folderId,
    fileName: req.target.fileName,
    // Not known yet for a file the scan did not read (sha256 null): the row is trusted only from stage
    // 'committing', which records the hash of what was actually PUT.
    sha256: req.local.sha256 ?? '',
    size: req.local.size,
    mtimeMs: req.local.mtimeMs,
    inode: req.local.inode,
    ctimeMs: req.local.ctimeMs,
    ...(req.local.bornMs ? { bornMs: req.local.bornMs } : {}),
    versionLabel,
    reason: req.reason,
  }));
  let sent;
  try {
    sent = await d.client.uploadContent(() => readForUpload(req.abs, req.local, d.root), req.local.size, {
      onSlot: async (uploadId) => {
        await d.store.transactionSoon(() => d.store.setOutboxStage(id, 'slot', { uploadId }));
        failpoint('upload-after-slot');
      },
      ...(d.onBytes ? { onBytes: d.onBytes } : {}),
      ...(d.signal ? { signal: d.signal } : {}),
      ...(d.windDown ? { windDown: d.windDown } : {}),
    });
    // What was PUT must be exactly what was planned: a file that changed while uploading is never committed.
    // Content not read by the scan is checked by its stat around the PUT (as the scanner trusts it).
    if ((req.local.sha256 !== null && sent.sha256 !== req.local.sha256) || sent.bytes !== req.local.size) {
      throw changedError(req.abs, 'its content changed while uploading');
    }
    assertUnchanged(req.abs, req.local, 'while uploading');
    failpoint('upload-after-put');
  } catch (err) {
    d.store.deleteOutbox(id);
    throw err;
  }
  // An edit is committed only onto the version it was made from. The plan may rest on a listing up to one poll
  // old (a pass after a local save reuses the last one), and someone may have added a version since: committing
  // then would bury their edit under ours without a conflict. Checked as late as possible, after the PUT.
  // The commit goes by name (4.9): an edit's document must still hold its name, and a new document's name must
  // still be free, in a listing of the folder at most a second older than the end of the PUT (name-recheck.ts).
  const putEndedAt = Date.now();
  let current: Document | null | undefined;
  try {
    current = await assertCommitFits(d, { relPath: req.relPath, reason: req.reason, ...req.target }, putEndedAt);
    if (current && req.target.documentId !== null) assertMetadataComplete(d, req.relPath, req.target.documentId, current.metadata ?? []);
  } catch (err) {
    d.store.deleteOutbox(id);
    throw err;
  }
  const row = await d.store.transactionSoon(() => {
    d.store.setOutboxStage(id, 'committing', { uploadId: sent.uploadId, sha256: sent.sha256 });
    return d.store.getOutbox(id);
  });
  failpoint('upload-before-commit');
  if (!row) throw new Error(`outbox row ${id} vanished`);
  // The document as just read (absent metadata: none); undefined for a new document (nothing to keep).
  const outcome = await commitOutbox(d, row, current === undefined ? undefined : (current?.metadata ?? []));
  failpoint('upload-after-commit');
  if (outcome.kind === 'refused') {
    d.store.deleteOutbox(id);
    throw refusedError(d, row, outcome.error);
  }
  if (misdirected(d, outcome.row, outcome.version)) {
    d.store.deleteOutbox(id); // committed: never again
    throw misdirectedError(d, outcome.row, outcome.version);
  }
  return { base: await d.store.transactionSoon(() => finishOutbox(d, outcome.row, outcome.version)), bytes: sent.bytes };
}

/** An upload left in the outbox this pass: its own commit's error, or (behind) the first held row's. */
export interface HeldUpload {
  relPath: string;
  key: string;
  error: unknown;
  behind?: string;
}

/** What the outbox recovery did: rows finished and dropped, and those left for the next pass (with why). */
export interface OutboxRecovery {
  finished: number;
  dropped: number;
  /**
   * Rows whose commit could not be settled now (a 5xx, the network): kept; their files wait for the next pass.
   * `behind`: the row not tried, the first held row's path (its error is that row's).
   */
  held: HeldUpload[];
}

/**
 * A commit refused in its own pass is tried again at the next pass (the outbox recovery); refused there too, after
 * 1 min doubling to 15. (The first recovery refusal once waited 0, a third try before the first minute: black-box
 * round 40b, A5.)
 */
export const COMMIT_HOLD_FIRST_MS = 60_000;
export const COMMIT_HOLD_MAX_MS = 15 * 60_000;

function holdCommit(d: ExecutorDeps, rowId: number, error: unknown): void {
  if (d.commitHolds === undefined) return;
  const tries = (d.commitHolds.get(rowId)?.tries ?? 0) + 1;
  const wait = Math.min(COMMIT_HOLD_MAX_MS, COMMIT_HOLD_FIRST_MS * 2 ** (tries - 1));
  d.commitHolds.set(rowId, { until: d.now().getTime() + wait, tries, error });
}

/**
 * Finishes or drops the uploads a previous run left in the outbox. Stages 'planned' and 'slot' were never
 * verified (the PUT may be partial or torn), so they are dropped and the next plan uploads again; 'committing'
 * (content PUT and verified) is committed with the same uploadId, which the service makes idempotent.
 * A row the service refuses for good is dropped with a warning (the local file is still there: the next plan
 * uploads it again): one bad row must never block every later pass. A row whose file changed since is not
 * committed (its content is one the user has discarded: black-box round 31a, F14): finished only if the service
 * already has it, else dropped, and the file goes as it is now. Retryable trouble keeps the row, and this and the
 * rows after it are held: their files are left out of this pass (nothing may be planned for a file before its
 * first commit is settled), the rest of the pair syncs (round 31a, F6: one commit the service kept failing with
 * a 500 stopped every download and upload of the binder). A bug (not the service's answer) still fails the pass.
 */
export async function recoverOutbox(given: ExecutorDeps): Promise<OutboxRecovery> {
  // One folder listing serves the name checks of every row of a folder (a crash with many uploads in flight).
  const d: ExecutorDeps = given.folderRecheck ? given : { ...given, folderRecheck: new FolderRecheck(given.client, given.binderId) };
  const out: OutboxRecovery = { finished: 0, dropped: 0, held: [] };
  for (const row of d.store.listOutbox()) {
    if (row.stage === 'planned' || row.stage === 'slot' || row.uploadId === null) {
      d.store.deleteOutbox(row.id);
      out.dropped++;
      continue;
    }
    // After one retryable failure the service is not asked again this pass: the rest wait with it.
    const first = out.held[0];
    if (first !== undefined) {
      out.held.push({ relPath: row.relPath, key: row.key, error: first.error, behind: first.behind ?? first.relPath });
      continue;
    }
    // Refused again and again (a service that answers every commit 401, even with a fresh token): not asked on
    // every poll, but after a minute, doubling to 15 (black-box round 33a F4: two commits and a token per poll).
    // A file changed since is looked at at once (its row may go).
    const changed = fileChangedSince(d, row);
    const hold = d.commitHolds?.get(row.id);
    if (hold !== undefined && d.now().getTime() < hold.until && !changed) {
      out.held.push({ relPath: row.relPath, key: row.key, error: hold.error });
      continue;
    }
    let outcome: CommitOutcome | { kind: 'dropped' };
    try {
      outcome = changed ? await committedAlready(d, row) : await resumeCommit(d, row);
    } catch (err) {
      if (err instanceof BinderSyncError && err.code === 'REMOTE_CHANGED') {
        // Nothing was committed: the file is planned again against the binder as it is now.
        d.commitHolds?.delete(row.id);
        d.store.deleteOutbox(row.id);
        out.dropped++;
        d.log.info({ relPath: row.relPath, err }, 'dropped an upload an earlier pass left unfinished (a restart, or a failed commit request): the service changed since; the file is planned again');
        continue;
      }
      // Only the service's own final answer drops the row; a retryable one keeps it, a bug fails the pass.
      if (!(err instanceof ServiceError)) throw err;
      if (err.retryable) {
        out.held.push({ relPath: row.relPath, key: row.key, error: err });
        holdCommit(d, row.id, err);
        // Said at warn once; the same refusal on every later pass (a service that answers every commit 401) at
        // debug, as a repeated failed step is: it is the pair's lastError meanwhile (black-box round 33a, F4).
        const signature = `held commit ${err.code}`;
        const again = d.failuresLogged?.get(row.relPath) === signature;
        if (!again) d.failuresLogged?.set(row.relPath, signature);
        d.log[again ? 'debug' : 'warn']({ relPath: row.relPath, err }, again ? 'an upload an earlier pass left unfinished could not be committed again' : 'an upload an earlier pass left unfinished could not be committed now: kept; its file waits for the next pass, the rest of the pair syncs');
        continue;
      }
      outcome = { kind: 'refused', error: err };
    }
    d.commitHolds?.delete(row.id);
    if (outcome.kind === 'dropped') {
      d.store.deleteOutbox(row.id);
      out.dropped++;
      d.log.info({ relPath: row.relPath }, 'dropped an upload an earlier pass left unfinished: the file changed since, and the service does not have that content; the file goes as it is now');
    } else if (outcome.kind === 'refused') {
      d.store.deleteOutbox(row.id);
      out.dropped++;
      const e = refusedError(d, row, outcome.error);
      d.log.warn({ relPath: row.relPath, code: e.code, err: e }, 'dropped an upload an earlier pass left unfinished (a restart, or a failed commit request): the service refused its commit');
    } else if (misdirected(d, outcome.row, outcome.version)) {
      d.store.deleteOutbox(row.id);
      out.dropped++;
      const e = misdirectedError(d, outcome.row, outcome.version);
      d.log.warn({ relPath: row.relPath, code: e.code, err: e }, 'an upload an earlier pass left unfinished (a restart, or a failed commit request) was committed onto another document');
    } else {
      finishOutbox(d, outcome.row, outcome.version);
      out.finished++;
      // Found by its content: our commit whose answer was lost, or a colleague's version of the same bytes; the
      // two cannot be told apart, and either way the service holds this content now (black-box round 30a, F5).
      const msg = outcome.found === true
        ? 'an upload an earlier pass left unfinished (a restart, or a failed commit request) was already on the service: a version with its content was made since the edit; recorded, nothing sent'
        : 'finished an upload an earlier pass left unfinished (a restart, or a failed commit request)';
      d.log.info({ relPath: row.relPath, documentId: outcome.version.documentId }, msg);
    }
  }
  return out;
}

/** The row's file is not as it was when its content was sent (edited again, put back, deleted). */
function fileChangedSince(d: ExecutorDeps, row: OutboxRow): boolean {
  const st = fs.lstatSync(resolveInside(d.root, row.relPath), { throwIfNoEntry: false });
  return st === undefined || !sameStat(toFileStat(st), row);
}

/** A row whose file changed since: ours if the service has its content already (a commit whose answer was lost), else dropped. */
async function committedAlready(d: ExecutorDeps, row: OutboxRow): Promise<CommitOutcome | { kind: 'dropped' }> {
  const found = await findCommittedVersion(d, row).catch((err: unknown) => {
    // A document or folder gone (404) holds nothing of ours.
    if (err instanceof ServiceError && !err.retryable) return null;
    throw err;
  });
  return found ? { kind: 'committed', version: found, row, found: true } : { kind: 'dropped' };
}

/** `found`: the version was found on the service by its content (committed before, or someone's identical one), not made now. */
type CommitOutcome = { kind: 'committed'; version: DocumentVersion; row: OutboxRow; found?: boolean } | { kind: 'refused'; error: unknown };

/**
 * Settles a row an earlier pass left in stage 'committing'. Its commit may have been applied (the answer was lost:
 * a crash, a timeout), or never (a 503, a crash before the request left). The row may be an hour old, and a
 * colleague may have added a version, renamed the document or created one under the name since: committed
 * blindly, the edit was buried under theirs without a conflict, or became a version of their new document
 * (black-box round 29a, F1). So the checks made before any commit come first (assertCommitFits). When they pass,
 * the binder is as the row expects, and the commit is made (its answer checked: it may be a repeat). When they
 * fail, the change may be our own commit: a version holding our content is looked for; found, it is ours;
 * else nothing is committed (REMOTE_CHANGED) and the file is planned again.
 */
async function resumeCommit(d: ExecutorDeps, row: OutboxRow): Promise<CommitOutcome> {
  let current: Document | null | undefined;
  try {
    current = await assertCommitFits(d, row, Date.now());
  } catch (err) {
    if (!(err instanceof BinderSyncError && err.code === 'REMOTE_CHANGED')) throw err;
    const found = await findCommittedVersion(d, row).catch((lookErr: unknown) => {
      // A document or folder gone (404) holds nothing of ours.
      if (lookErr instanceof ServiceError && !lookErr.retryable) return null;
      throw lookErr;
    });
    if (found) return { kind: 'committed', version: found, row, found: true };
    throw err;
  }
  return commitOutbox(d, row, current === undefined ? undefined : (current?.metadata ?? []), true);
}

/**
 * Commits row.uploadId. 'refused' when nothing was created for it (and the error that said so). The spec
 * does not show what a repeated commit answers (4.9) nor any error (7): a 2xx that is not a version, a 409
 * ("already committed", or "that label is taken"), a 400/404/422 to a repeat... each is settled by looking
 * for the version our upload created, verified by its content (findCommittedVersion). A 409 whose label is
 * taken by someone else's version is committed once more under a fresh label, with the same uploadId (the
 * service keys commits by uploadId: no duplicate can come of it). A 403 means no write access; a 401, credentials
 * not taken (tried again).
 */
async function commitOutbox(d: ExecutorDeps, row: OutboxRow, documentMetadata?: MetadataValue[], repeat = false): Promise<CommitOutcome> {
  let current = row;
  // A new version keeps its document's metadata (see versionMetadata); a repeat after a restart reads it again.
  let docMetadata = documentMetadata;
  if (row.documentId !== null && docMetadata === undefined) docMetadata = (await d.client.getDocument(row.documentId))?.metadata ?? [];
  for (let attempt = 0; ; attempt++) {
    let version: DocumentVersion;
    try {
      version = await commitAs(d, current, docMetadata ?? []);
    } catch (err) {
      if (!(err instanceof ServiceError) || err.retryable) throw err;
      if (err.status === 401) throw unauthorizedCommit(row, err);
      if (err.status === 403) return { kind: 'refused', error: err };
      const found = await findCommittedVersion(d, current);
      if (found) return { kind: 'committed', version: found, row: current, found: true };
      const accepted = err.status !== undefined && err.status >= 200 && err.status <= 299;
      // Accepted, but no version with our content anywhere: someone replaced it at once. Nothing to finish;
      // the file is planned again (at worst a second copy of the same bytes, never a loss).
      if (accepted || err.status !== 409 || attempt > 0) return { kind: 'refused', error: err };
      const relabelled = await freshLabel(d, current);
      if (relabelled === null) return { kind: 'refused', error: err };
      current = relabelled;
      continue;
    }
    // Outside the try: a failure of the check is its own (a retryable one keeps the row), not the commit's.
    if (!repeat && !answersRepeatedCommit(version)) return { kind: 'committed', version, row: current };
    return checkedRepeatAnswer(d, current, version);
  }
}

/**
 * The answer to a commit that may have gone out before (retried, or resumed after a restart): a repeated commit
 * of an uploadId may answer any version (spec 4.9: not shown), e.g. the document's latest, which may be a
 * colleague's. Taken as ours, it would become the base: the colleague's edit never downloaded, the next local
 * edit stacked on it (black-box round 22, K1). So the version must hold our content; else the one our upload
 * created is looked for as after a 409 (findCommittedVersion); else nothing is recorded and the file is planned
 * again (at worst a second copy of the same bytes, never a loss).
 */
async function checkedRepeatAnswer(d: ExecutorDeps, row: OutboxRow, version: DocumentVersion): Promise<CommitOutcome> {
  const documentId = version.documentId || row.documentId;
  // An answered version the service then says it does not have (its link 404s) holds nothing of ours.
  const ours = documentId
    ? await versionHolds(d, documentId, version.id, row).catch((err: unknown) => {
        if (err instanceof ServiceError && !err.retryable) return false;
        throw err;
      })
    : false;
  if (ours) return { kind: 'committed', version: { ...version, documentId: documentId! }, row };
  const found = await findCommittedVersion(d, row);
  if (found) return { kind: 'committed', version: found, row };
  d.log.warn({ relPath: row.relPath, answered: version.id, label: version.version }, 'a repeated commit answered a version that does not hold the uploaded content, and none was found that does: nothing recorded, the file is planned again');
  return {
    kind: 'refused',
    error: new ServiceError(`the repeated commit answered version ${version.id}, which does not hold the uploaded content`, {
      code: 'SERVICE_INVALID_RESPONSE',
      retryable: false,
      request: COMMIT_REQUEST,
      status: 200,
      context: { uploadId: row.uploadId },
    }),
  };
}

function commitAs(d: ExecutorDeps, row: OutboxRow, documentMetadata: MetadataValue[]): Promise<DocumentVersion> {
  const { values, retired } = versionMetadata(d, row.relPath, row.documentId, documentMetadata);
  for (const m of retired) {
    d.log.info({ relPath: row.relPath, metadataElementId: m.metadataElementId, value: m.value }, `${row.relPath}: the document's ${m.metadataElementId} value "${m.value}" is no longer one the binder takes: not carried into the new version${values.some((r) => r.metadataElementId === m.metadataElementId) ? " (the pair's metadata rules give its value)" : ''}`);
  }
  return d.client.commitUpload(d.binderId, row.folderId, {
    fileName: row.fileName,
    versionLabel: row.versionLabel,
    uploadId: row.uploadId as string,
    metadata: values,
  });
}

/**
 * A new version of documentId must carry a value for every required element, from the document's own values
 * or the pair's rules (versionMetadata); else METADATA_MISSING, before anything is committed. Says which own
 * values were left out because the binder no longer takes them (a retired value needs a rule or a new value set
 * on the service: black-box round 25, N3).
 */
function assertMetadataComplete(d: ExecutorDeps, relPath: string, documentId: string, documentMetadata: MetadataValue[]): void {
  if (d.metadata.missingFor(relPath).length === 0) return;
  const { values, retired } = versionMetadata(d, relPath, documentId, documentMetadata);
  const missing = d.metadata.missingFor(relPath, new Set(values.map((v) => v.metadataElementId)));
  if (missing.length === 0) return;
  const why = retired.length > 0
    ? ` (the document's ${retired.map((m) => `${m.metadataElementId} value "${m.value}"`).join(', ')} is no longer one the binder takes)`
    : '';
  throw new BinderSyncError(`${relPath}: not uploaded: required metadata without a value: ${missing.join(', ')}: neither its document nor the pair's metadata rules give one${why}`, {
    code: 'METADATA_MISSING',
    retryable: false,
    context: { pair: d.pair, relPath, documentId, missing },
    hint: 'add a metadata rule whose glob matches this file, or set the value on the document in the service; the file is tried again every pass',
  });
}

/**
 * The metadata sent with a commit. A new document takes the pair's rules. A new version of an existing document
 * keeps the document's own values (spec 4.9 attaches the commit's metadata to the new version: sending the
 * rules' values would reclassify a document on every edit), and the rules only fill elements it has none for.
 * GLOBAL_ elements are the service's own and never sent. An own value the binder no longer takes (a retired
 * value, an element since removed) is left out, so that a rule may fill it: sent, the service refused every later
 * edit of that document, and no rule could replace it (black-box round 24, M2).
 */
function versionMetadata(
  d: ExecutorDeps,
  relPath: string,
  documentId: string | null,
  documentMetadata: MetadataValue[],
): { values: Array<{ metadataElementId: string; value: string }>; retired: Array<{ metadataElementId: string; value: string }> } {
  // The rules' values even where they do not cover every required element: a new version's own values may.
  const rules = metadataOrNone(d, relPath);
  if (documentId === null) return { values: rules, retired: [] };
  const retired: Array<{ metadataElementId: string; value: string }> = [];
  const own = documentMetadata
    .filter((m) => !m.metadataElementId.startsWith('GLOBAL_'))
    .flatMap((m) => {
      const value = m.valueId ?? m.value;
      if (value === undefined || value === null) return [];
      if (!d.metadata.accepts(m.metadataElementId, value)) {
        retired.push({ metadataElementId: m.metadataElementId, value });
        return [];
      }
      return [{ metadataElementId: m.metadataElementId, value }];
    });
  const have = new Set(own.map((m) => m.metadataElementId));
  return { values: [...own, ...rules.filter((r) => !have.has(r.metadataElementId))], retired };
}

/**
 * The versions of the document an edit goes to. A 404 is the document deleted on the service since the listing
 * (an edit racing a delete): REMOTE_CHANGED, which the executor postpones, and the next pass lists the binder and
 * keeps the edit as a new document, instead of an "action failed" warning with a 404 (black-box round 26, P1).
 */
async function versionsOrGone(d: ExecutorDeps, req: UploadRequest) {
  const documentId = req.target.documentId as string;
  try {
    return await d.client.listVersions(documentId);
  } catch (err) {
    if (!(err instanceof ServiceError) || err.code !== 'SERVICE_NOT_FOUND') throw err;
    throw new BinderSyncError(`${req.relPath}: not uploaded: its document was deleted on the service since the last listing; the next pass lists the binder again and keeps the edit as a new document`, {
      code: 'REMOTE_CHANGED',
      retryable: true,
      context: { pair: d.pair, relPath: req.relPath, documentId },
      cause: err,
    });
  }
}

/** Throws REMOTE_CHANGED unless the document still points at the version the edit was made from. */
/** What a commit goes onto: the document (null: a new one) in its folder under its name, and why it is uploaded. */
type CommitTarget = Pick<OutboxRow, 'relPath' | 'reason' | 'documentId' | 'folderId' | 'fileName'>;

/**
 * The checks made just before a commit, after the PUT: an edit goes only onto the version it was made from, its
 * document must still hold its name with no other document beside it under that name, and a new document's name
 * must still be free, in a listing of the folder made at `listedSince` or later (name-recheck.ts). Throws
 * REMOTE_CHANGED (nothing is committed; the next pass plans the file anew, a conflict keeps both edits). Returns
 * the document as read (undefined for a new one). Also made before an upload an earlier pass left unfinished is
 * committed (recoverOutbox): its commit may have failed an hour before, and the service moved on since.
 */
async function assertCommitFits(d: ExecutorDeps, t: CommitTarget, listedSince: number): Promise<Document | null | undefined> {
  const recheck = d.folderRecheck ?? new FolderRecheck(d.client, d.binderId);
  const named = { pair: d.pair, relPath: t.relPath, folderId: t.folderId, fileName: t.fileName };
  const documentId = t.documentId;
  if (documentId === null) {
    await recheck.assertNameFree(named, listedSince);
    return undefined;
  }
  // Both requested side by side: neither waits for the other.
  const [doc, noTwin] = await Promise.allSettled([d.client.getDocument(documentId), recheck.assertNoTwin({ ...named, documentId }, listedSince)]);
  if (doc.status === 'rejected') throw doc.reason;
  // A deleted document or a new version says more than the name checks that follow from it.
  if (t.reason === 'local-modified') assertStillBase(d, t, documentId, doc.value);
  assertStillNamed(d, t, documentId, doc.value);
  if (noTwin.status === 'rejected') throw noTwin.reason;
  return doc.value;
}

function assertStillBase(d: ExecutorDeps, t: CommitTarget, documentId: string, current: Document | null): void {
  const base = d.store.getBase(documentId);
  if (current !== null && base !== undefined && current.latestVersionId === base.versionId) return;
  throw new BinderSyncError(
    `${t.relPath}: not uploaded: the document ${current === null ? 'was deleted' : 'got a new version'} on the service since the last listing; the next pass lists the binder again and resolves it (a conflict keeps both edits)`,
    { code: 'REMOTE_CHANGED', retryable: true, context: { pair: d.pair, relPath: t.relPath, documentId } },
  );
}

/**
 * The commit goes by name (4.9): an edit's document must still be in the planned folder under exactly the
 * planned name, as the document itself says after the PUT. A rename during the upload made the commit create
 * a stray document under the old name.
 */
function assertStillNamed(d: ExecutorDeps, t: CommitTarget, documentId: string, current: Document | null): void {
  if (current !== null && current.fileName === t.fileName && current.folderId === t.folderId) return;
  const why = current === null
    ? 'was deleted on the service during the upload'
    : current.folderId === t.folderId
      ? `was renamed or moved on the service during the upload: it is now named "${current.fileName}", not "${t.fileName}"`
      : 'was renamed or moved on the service during the upload: it is no longer in its remote folder';
  throw new BinderSyncError(`${t.relPath}: not uploaded: its document (${documentId}) ${why}; nothing was committed, the next pass lists the binder again and plans it anew`, {
    code: 'REMOTE_CHANGED',
    retryable: true,
    context: { pair: d.pair, relPath: t.relPath, folderId: t.folderId, documentId },
  });
}

/** The row under a label no version of its document carries now (persisted first); null when ours is free. */
async function freshLabel(d: ExecutorDeps, row: OutboxRow): Promise<OutboxRow | null> {
  if (row.documentId === null) return null;
  const labels = (await d.client.listVersions(row.documentId)).map((v) => v.version ?? '').filter((l) => l !== '');
  if (!labels.includes(row.versionLabel)) return null;
  const versionLabel = nextVersionLabel(labels, d.versionLabelScheme, d.now());
  await d.store.transactionSoon(() => d.store.setOutboxLabel(row.id, versionLabel));
  d.log.info({ relPath: row.relPath, taken: row.versionLabel, versionLabel }, 'version label taken meanwhile: committing under the next one');
  return { ...row, versionLabel };
}

/**
 * A commit answered 401 even after the client fetched a fresh token and sent it again: the service did not take
 * the credentials, which says nothing about write access (spec 7 shows no error codes; in HTTP and OAuth a
 * refused permission is 403, insufficient_scope). It was read as "read-only" and turned the pair download-only
 * for an hour after one flaky answer (black-box round 32b, F2). Now it is an authentication failure that is tried
 * again: the upload (its uploadId, in the outbox) is kept and only its commit is sent again, by a later pass.
 */
function unauthorizedCommit(row: OutboxRow, cause: ServiceError): ServiceError {
  return new ServiceError(`${row.relPath}: the service did not accept the credentials for the commit (HTTP 401), even with a fresh token: ${cause.message}`, {
    code: 'SERVICE_UNAUTHORIZED',
    retryable: true,
    request: cause.request,
    status: 401,
    context: { relPath: row.relPath },
    hint: 'the upload is kept and its commit is tried again by the next pass; if every commit is refused this way, check that the API client is still active and has read/write access (a read-only client should get direction: download)',
    cause,
  });
}

/** The service refused a commit: why, and whether trying again can help. */
function refusedError(d: ExecutorDeps, row: OutboxRow, cause: unknown): BinderSyncError {
  const status = cause instanceof ServiceError ? cause.status : undefined;
  const reason = cause instanceof Error ? cause.message : String(cause);
  if (status === 403) {
    return new BinderSyncError(`${row.relPath}: the service refused the commit (HTTP ${status}): the API client may not write`, {
      code: 'SERVICE_READ_ONLY',
      retryable: false,
      context: { pair: d.pair, relPath: row.relPath, status },
      hint: 'grant the API client read/write access, or set direction: download for this pair',
      cause,
    });
  }
  // 400/422: the service refuses this commit as such (a name, the metadata): the same upload would be refused again.
  const permanent = status === 400 || status === 422;
  // A local name that stands for a remote name no file can carry (`a／b.txt` for "a/b.txt", `_` for ""): the
  // commit names the document by its remote name, which this service will not take in an upload. The user sees
  // a harmless local name, so the message says which name it was.
  const encodedName = baseNameOf(row.relPath).normalize('NFC') !== row.fileName.normalize('NFC');
  const what = encodedName ? `the upload under its document's remote name ${JSON.stringify(row.fileName)} (the local name stands for it)` : 'the upload';
  return new BinderSyncError(`${row.relPath}: the service refused to commit ${what}: ${reason}`, {
    code: 'COMMIT_REFUSED',
    retryable: !permanent,
    context: { pair: d.pair, relPath: row.relPath, ...(encodedName ? { remoteName: row.fileName } : {}), ...(status !== undefined ? { status } : {}) },
    hint: permanent
      ? encodedName
        ? `rename the document on the service to a name a file can have (the next pass renames the local file to match); until then this content is not sent again unless the file changes`
        : "a file name or metadata the service does not accept? The same content is not sent again until the file or the pair's config changes, or for a day"
      : 'the next pass uploads it again',
    cause,
  });
}

/**
 * An edit's version that the service put on another document: the commit names a folder and a file name (4.9),
 * and what the service found under that name was not our document (it was renamed or moved after the name check
 * before the commit, or another document took a name like it, or the service compares names loosely). The
 * version is not recorded as this document's: the next pass sees it as the other document's.
 */
function misdirected(d: ExecutorDeps, row: OutboxRow, version: DocumentVersion): boolean {
  if (row.documentId !== null) return version.documentId !== row.documentId;
  // A new file's answer naming a document another synced file is: recorded, the other file was overwritten with
  // this content at the next pass and this one trashed (black-box round 41c, F2b: a commit answer naming another
  // document).
  const other = d.store.getBase(version.documentId);
  return other !== undefined && other.key !== row.key;
}

function misdirectedError(d: ExecutorDeps, row: OutboxRow, version: DocumentVersion): BinderSyncError {
  const other = row.documentId === null ? d.store.getBase(version.documentId)?.relPath : undefined;
  return new BinderSyncError(
    row.documentId === null
      ? `${row.relPath}: the service attached this new file's upload to document ${version.documentId}, which is ${other === undefined ? 'another synced file' : `"${other}"`}: not recorded as this file's document`
      : `${row.relPath}: the service attached this upload to another document (${version.documentId}, not ${row.documentId}), probably because the document was renamed or moved on the service during the upload, or another document in its remote folder has a name like "${row.fileName}"`,
    {
      code: 'COMMIT_MISDIRECTED',
      retryable: false,
      context: { pair: d.pair, relPath: row.relPath, documentId: row.documentId, committedTo: version.documentId },
      hint: `look at document ${version.documentId} on the service: it holds this content now (the document keeps its earlier versions, nothing is lost); this content is not sent again until the file changes`,
    },
  );
}

/**
 * The metadata of a commit being repeated after a restart. Rules may have changed since: a repeat of a done
 * commit needs none (nothing new is created), and a commit that never happened is refused for missing
 * metadata (400), dropped, and planned again under the current rules.
 */
function metadataOrNone(d: ExecutorDeps, relPath: string): Array<{ metadataElementId: string; value: string }> {
  try {
    return d.metadata.valuesFor(relPath);
  } catch {
    return []; // a resolver that holds every upload (never reached: such uploads are withheld from the plan)
  }
}

/**
 * The version our upload created, if the service has one. Candidates: the versions carrying our label, and
 * the document's latest version (a server that dropped the label); for a new document, those of the folder's
 * documents with our file name. A candidate counts only if its content has our size and SHA-256: a label says
 * nothing about who uploaded (another user may have taken the same one), and adopting someone else's version
 * as ours would lose our edit. Downloads at most a few candidates; only repeated or refused commits get here.
 */
async function findCommittedVersion(d: ExecutorDeps, row: OutboxRow): Promise<DocumentVersion | null> {
  const docs: Array<{ id: string; latestVersionId: string | null }> = row.documentId !== null
    ? [{ id: row.documentId, latestVersionId: null }]
    : (await d.client.listFolderDocuments(d.binderId, row.folderId)).filter((x) => x.fileName === row.fileName);
  let downloads = 0;
  for (const doc of docs.slice(0, MAX_CANDIDATE_DOCS)) {
    const versions = await madeSinceBase(d, row, doc.id, await d.client.listVersions(doc.id));
    const labelled = versions.filter((v) => v.version === row.versionLabel);
    // The latest: the document's pointer when known, else (order not specified, spec 4.11) both ends of the list.
    const latest = doc.latestVersionId !== null ? versions.filter((v) => v.id === doc.latestVersionId) : [versions[0], versions[versions.length - 1]];
    const seen = new Set<string>();
    for (const v of [...labelled.reverse(), ...latest]) {
      if (v === undefined || seen.has(v.id)) continue;
      seen.add(v.id);
      if (++downloads > MAX_CANDIDATE_DOWNLOADS) return null;
      if (await versionHolds(d, doc.id, v.id, row)) return { ...v, documentId: v.documentId || doc.id };
    }
  }
  return null;
}

/**
 * The versions an edit's commit can have made: only those listed after the one the edit was made from. An edit
 * that put back an older version's content (an undo, `git checkout old -- f`) matches that old version, which is
 * not ours: taken as "committed", nothing was sent and the latest came down over the edit (black-box round 30a,
 * F1). The document's latest says which side of the base is newer (version-order.ts). With no base version in
 * the list (a new document, a history the service pruned) every version stays a candidate.
 */
async function madeSinceBase(d: ExecutorDeps, row: OutboxRow, documentId: string, versions: DocumentVersion[]): Promise<DocumentVersion[]> {
  const baseVersion = row.documentId === documentId ? d.store.getBase(documentId)?.versionId : undefined;
  if (baseVersion === undefined || !versions.some((v) => v.id === baseVersion)) return versions;
  const latest = (await d.client.getDocument(documentId))?.latestVersionId;
  if (latest === baseVersion) return [];
  const between = latest === undefined ? null : versionsBetween(versions, baseVersion, latest);
  if (between === null) return versions.filter((v) => v.id !== baseVersion);
  return [versions.find((v) => v.id === latest)!, ...between];
}

const MAX_CANDIDATE_DOCS = 3;
const MAX_CANDIDATE_DOWNLOADS = 4;

/** Whether a version's content is `want` (size and SHA-256), streamed through the hash: nothing is written. */
export async function versionHolds(d: ExecutorDeps, documentId: string, versionId: string, want: { size: number; sha256: string }): Promise<boolean> {
  let seen = 0;
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      // More bytes than ours: not our content, no need to read the rest.
      cb(seen > want.size ? new Error('larger than the content looked for') : null);
    },
  });
  try {
    const got = await d.client.downloadVersionTo(documentId, versionId, sink, d.signal ? { signal: d.signal } : {});
    return got.bytes === want.size && got.sha256 === want.sha256;
  } catch (err) {
    if (seen > want.size) return false;
    throw err;
  }
}

/** Records the committed version as the new base and clears the outbox row, in one transaction (nests). */
function finishOutbox(d: ExecutorDeps, row: OutboxRow, version: DocumentVersion): BaseEntry {
  const base: BaseEntry = {
    documentId: version.documentId,
    versionId: version.id,
    versionLabel: row.versionLabel,
    folderId: row.folderId,
    fileName: row.fileName,
    relPath: row.relPath,
    key: row.key,
    size: row.size,
    mtimeMs: row.mtimeMs,
    inode: row.inode,
    ctimeMs: row.ctimeMs,
    ...(row.bornMs ? { bornMs: row.bornMs } : {}),
    sha256: row.sha256,
  };
  d.store.transaction(() => {
    const previous = d.store.getBaseByKey(row.key);
    if (previous && previous.documentId !== base.documentId) d.store.deleteBase(previous.documentId);
    // An edit: the versions between the one it was made from and ours are read after the commit, for one someone
    // made during the upload (buried-edit.ts). Due from here on, whatever happens next (a crash, a failed listing).
    const editedFrom = row.reason === 'local-modified' && row.documentId === base.documentId ? d.store.getBase(base.documentId)?.versionId : undefined;
    if (editedFrom !== undefined && editedFrom !== base.versionId) {
      d.store.addBuriedCheck({ documentId: base.documentId, relPath: row.relPath, folderId: row.folderId, editedFrom, ours: base.versionId, oursSha256: row.sha256 });
    }
    d.store.putBase(base);
    // A new document: until a listing shows it, a "does not exist" is not a colleague's delete (never-listed.ts).
    if (row.documentId === null) d.store.addNeverListed(base.documentId);
    d.store.deleteOutbox(row.id);
  });
  return base;
}

/** Synchronous lstat, like the scanner's: microseconds, cheaper than a thread-pool round trip. */
function assertUnchanged(abs: string, expect: LocalFile, when: string): void {
  let st: fs.Stats | undefined;
  try {
    st = fs.lstatSync(abs, { throwIfNoEntry: false });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOTDIR') throw err;
  }
  if (st === undefined || !st.isFile() || !sameStat(toFileStat(st), expect)) throw changedError(abs, `it changed ${when}`);
}

function openForUpload(abs: string, expect: LocalFile, root: string): number {
  try {
    return openSameFileSync(abs, expect, root);
  } catch (err) {
    if (err instanceof NotTheFileError) throw changedError(abs, err.why);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw changedError(abs, 'it was removed');
    if (code === 'ELOOP') throw changedError(abs, 'it is a symbolic link now');
    throw err;
  }
}

function changedError(abs: string, why: string): BinderSyncError {
  return new BinderSyncError(`${abs}: not uploaded, ${why}; the next pass uploads the new content`, {
    code: 'LOCAL_CHANGED',
    retryable: true,
    context: { path: abs },
  });
}
