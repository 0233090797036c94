// The commit step (upload step 3) against answers the spec leaves open (4.9 "what the second call returns: not
// shown", 7 "error status codes: not shown"), over real HTTP against the emulator with a real state DB: the
// client is the real one, wrapped so that its commit answers as such a server would (the emulator itself cannot
// answer 409 to a label another user took). What must hold: a version is adopted as ours only when it holds our
// bytes; a refused commit says why and leaves no outbox row that could block later passes.
import { compileMetadataRules } from '../../src/sync/metadata-rules.js';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { toFileStat } from '../../src/local/fs-ops.js';
import { ServiceClient, ServiceError } from '../../src/service/index.js';
import { StateStore } from '../../src/state/store.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { executePlan } from '../../src/sync/executor.js';
import type { LocalFile, Plan } from '../../src/sync/model.js';
import { recoverOutbox } from '../../src/sync/upload.js';
import type { Emulator } from '../../src/emulator/index.js';
import { captureLog, executorFixture } from './executor-fixture.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

type CommitUpload = ServiceClient['commitUpload'];
type CommitArgs = Parameters<CommitUpload>;

interface Setup {
  emu: Emulator;
  d: ExecutorDeps;
  root: string;
  store: StateStore;
  folderId: string;
  /** Replaces the client's commit for this test: gets the real one and the arguments. */
  answerCommit(fn: (real: CommitUpload, ...args: CommitArgs) => ReturnType<CommitUpload>): void;
  commits: CommitArgs[];
}

async function setup(): Promise<Setup> {
  const { emu, client, d, root, store, folderId } = await executorFixture(cleanups, 'exec-commit-', { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20 });
  const real: CommitUpload = client.commitUpload.bind(client);
  const commits: CommitArgs[] = [];
  let answer: (real: CommitUpload, ...args: CommitArgs) => ReturnType<CommitUpload> = (r, ...a) => r(...a);
  client.commitUpload = (...args: CommitArgs) => {
    commits.push(args);
    return answer(real, ...args);
  };
  return { emu, d, root, store, folderId, answerCommit: (fn) => (answer = fn), commits };
}

function writeLocal(root: string, name: string, content: string): LocalFile {
  const abs = path.join(root, 'Docs', name);
  fs.writeFileSync(abs, content);
  fs.utimesSync(abs, 1_700_000_000, 1_700_000_000);
  return { relPath: `Docs/${name}`, key: `Docs/${name}`, ...toFileStat(fs.lstatSync(abs)), sha256: sha(content) };
}

/** The base row of a synced document: an edit is committed only onto the version it was made from. */
function synced(s: Setup, doc: { id: string; latestVersionId: string; fileName: string }): void {
  s.store.putBase({
    documentId: doc.id, versionId: doc.latestVersionId, versionLabel: '1', folderId: s.folderId, fileName: doc.fileName,
    relPath: `Docs/${doc.fileName}`, key: `Docs/${doc.fileName}`, size: 8, mtimeMs: 1, inode: 1, ctimeMs: 1, sha256: sha('original'),
  });
}

function uploadPlan(local: LocalFile, folderId: string, documentId: string | null): Plan {
  const fileName = path.posix.basename(local.relPath);
  return {
    groups: [[{ kind: 'upload', relPath: local.relPath, key: local.key, local, target: { documentId, folderId, fileName }, reason: documentId ? 'local-modified' : 'new-local', replacesBase: null }]],
    issues: [],
    blocked: null,
  };
}

function conflict409(args: CommitArgs): ServiceError {
  return new ServiceError('POST /documents/drives/{domain}/{id}/{folderId}/upload failed with HTTP 409: version label already exists', {
    code: 'COMMIT_CONFLICT',
    retryable: false,
    request: 'POST /documents/drives/{domain}/{id}/{folderId}/upload',
    status: 409,
    context: { uploadId: args[2].uploadId },
  });
}

function statusError(status: number, detail: string): ServiceError {
  return new ServiceError(`POST /documents/drives/{domain}/{id}/{folderId}/upload failed with HTTP ${status}: ${detail}`, {
    code: status === 403 ? 'SERVICE_FORBIDDEN' : 'SERVICE_BAD_REQUEST',
    retryable: false,
    request: 'POST /documents/drives/{domain}/{id}/{folderId}/upload',
    status,
  });
}

describe('commit answers the spec leaves open', () => {
  it("409 because another user took our label meanwhile: their version is not adopted, ours is committed under the next label", async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    const local = writeLocal(s.root, 'a.txt', 'MY local edit');
    let first = true;
    s.answerCommit(async (real, ...args) => {
      if (!first) return real(...args);
      first = false;
      // Someone else uploads version "2" just before our commit reaches the server, which then refuses ours.
      c.addVersion(doc.id, 'THEIR content', { versionLabel: args[2].versionLabel });
      throw conflict409(args);
    });
    const report = await executePlan(uploadPlan(local, s.folderId, doc.id), s.d);
    expect(report.failures).toEqual([]);
    const versions = c.listVersions(doc.id);
    expect(versions.map((v) => [v.version, c.readContent(doc.id, v.id).toString()])).toEqual([
      ['1', 'original'],
      ['2', 'THEIR content'],
      ['3', 'MY local edit'],
    ]);
    // Both commits of a.txt used the same uploadId: the service could not have made two versions of it.
    const ofA = s.commits.filter((a) => a[2].fileName === 'a.txt');
    expect(ofA.map((a) => a[2].uploadId)).toEqual([ofA[0]![2].uploadId, ofA[0]![2].uploadId]);
    const base = s.store.loadBase().get(doc.id);
    expect(base?.versionId).toBe(versions[2]!.id);
    expect(base?.versionLabel).toBe('3');
    expect(s.store.listOutbox()).toEqual([]);
    // Theirs is under ours now: kept as a conflict copy, beside the file and as its own document (buried-edit.ts).
    expect(report.conflicts).toEqual([expect.objectContaining({ relPath: 'Docs/a.txt', conflictPath: expect.stringMatching(/^Docs\/a \(conflict .*\)\.txt$/) })]);
    const copy = c.listDocuments(s.d.binderId).find((x) => x.fileName.startsWith('a (conflict '))!;
    expect(c.readContent(copy.id).toString()).toBe('THEIR content');
  });

  it('a 400 for a document whose remote name the local name only stands for names that remote name, and says to rename it on the service', async () => {
    const s = await setup();
    const local = writeLocal(s.root, 'a\uff0fb.txt', 'content');
    s.answerCommit(async () => {
      throw statusError(400, 'invalid fileName');
    });
    const plan = uploadPlan(local, s.folderId, null);
    const upload = plan.groups[0]![0]!;
    if (upload.kind !== 'upload') throw new Error('not an upload');
    plan.groups[0]![0] = { ...upload, target: { ...upload.target, fileName: 'a/b.txt' } };
    const report = await executePlan(plan, s.d);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]).toMatchObject({ code: 'COMMIT_REFUSED', retryable: false });
    expect(report.failures[0]!.message).toContain('remote name "a/b.txt"');
    expect(report.failures[0]!.message).toContain('rename the document on the service');
    // A plain name keeps the plain message.
    const plainLocal = writeLocal(s.root, 'plain.txt', 'content 2');
    const plain = await executePlan(uploadPlan(plainLocal, s.folderId, null), s.d);
    expect(plain.failures[0]!.message).not.toContain('remote name');
  });

  it('a 409 that persists is a refused, retryable commit: nothing adopted, no outbox row left', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    const local = writeLocal(s.root, 'a.txt', 'MY local edit');
    s.answerCommit(async (_real, ...args) => {
      // Every commit: someone else's version appears under the label we sent, and ours is refused.
      c.addVersion(doc.id, `THEIRS under ${args[2].versionLabel}`, { versionLabel: args[2].versionLabel });
      throw conflict409(args);
    });
    const report = await executePlan(uploadPlan(local, s.folderId, doc.id), s.d);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]).toMatchObject({ code: 'COMMIT_REFUSED', retryable: true });
    expect(report.failures[0]!.message).toContain('version label already exists');
    expect(s.store.getBase(doc.id)?.versionId).toBe(doc.latestVersionId); // no one else's version recorded as ours
    expect(s.store.listOutbox()).toEqual([]);
  });

  it('a 2xx without a version, from a server that dropped our label: the version is found by its content', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    const local = writeLocal(s.root, 'a.txt', 'edited');
    s.answerCommit(async (real, binderId, folderId, body, domain) => {
      await real(binderId, folderId, { ...body, versionLabel: 'server-chosen' }, domain);
      throw new ServiceError('POST upload answered 204 without a version', { code: 'SERVICE_INVALID_RESPONSE', retryable: false, request: 'POST upload', status: 204 });
    });
    const report = await executePlan(uploadPlan(local, s.folderId, doc.id), s.d);
    expect(report.failures).toEqual([]);
    const versions = c.listVersions(doc.id);
    expect(versions).toHaveLength(2);
    expect(s.store.loadBase().get(doc.id)?.versionId).toBe(versions[1]!.id);
  });

  it('a new document whose repeated commit is answered 404: found by folder, name and content, not refused', async () => {
    const s = await setup();
    const c = s.emu.control;
    const local = writeLocal(s.root, 'n.txt', 'mine');
    s.answerCommit(async (real, ...args) => {
      await real(...args);
      throw statusError(404, 'upload not found'); // the first answer was lost; the repeat says "unknown uploadId"
    });
    const report = await executePlan(uploadPlan(local, s.folderId, null), s.d);
    expect(report.failures).toEqual([]);
    const [doc] = c.listDocuments(s.d.binderId);
    expect(s.store.loadBase().get(doc!.id)?.sha256).toBe(sha('mine'));
  });

  it('a version with our label but other bytes is never taken for ours (2xx without a version)', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    const local = writeLocal(s.root, 'a.txt', 'mine');
    s.answerCommit(async (_real, ...args) => {
      c.addVersion(doc.id, 'not mine', { versionLabel: args[2].versionLabel }); // ours never arrived
      throw new ServiceError('POST upload answered 204 without a version', { code: 'SERVICE_INVALID_RESPONSE', retryable: false, request: 'POST upload', status: 204 });
    });
    const report = await executePlan(uploadPlan(local, s.folderId, doc.id), s.d);
    expect(report.failures).toHaveLength(1);
    expect(s.store.getBase(doc.id)?.versionId).toBe(doc.latestVersionId);
    expect(s.store.listOutbox()).toEqual([]);
  });

  it('a 400 says the server\'s reason, is not retryable, and leaves no outbox row', async () => {
    const s = await setup();
    const local = writeLocal(s.root, 'b.txt', 'content');
    s.answerCommit(async () => {
      throw statusError(400, 'fileName contains a character that is not allowed');
    });
    const report = await executePlan(uploadPlan(local, s.folderId, null), s.d);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]).toMatchObject({ code: 'COMMIT_REFUSED', retryable: false });
    expect(report.failures[0]!.message).toContain('fileName contains a character that is not allowed');
    expect(s.store.listOutbox()).toEqual([]);
  });

  it('a 403 at the commit (slots were handed out) is a read-only client', async () => {
    const s = await setup();
    const local = writeLocal(s.root, 'b.txt', 'content');
    s.answerCommit(async () => {
      throw statusError(403, 'client has read access only');
    });
    const report = await executePlan(uploadPlan(local, s.folderId, null), s.d);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]).toMatchObject({ code: 'SERVICE_READ_ONLY', retryable: false });
    expect(s.store.listOutbox()).toEqual([]);
  });

  it('a 401 at the commit, even after a fresh token, is credentials not taken: retried from the outbox, never read-only (round 32b, F2)', async () => {
    const s = await setup();
    const local = writeLocal(s.root, 'b.txt', 'content');
    s.answerCommit(async () => {
      throw new ServiceError('POST /documents/drives/{domain}/{id}/{folderId}/upload failed with HTTP 401: invalid_token', {
        code: 'SERVICE_UNAUTHORIZED', retryable: false, request: 'POST /documents/drives/{domain}/{id}/{folderId}/upload', status: 401,
      });
    });
    const report = await executePlan(uploadPlan(local, s.folderId, null), s.d);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]).toMatchObject({ code: 'SERVICE_UNAUTHORIZED', retryable: true });
    expect(report.failures[0]!.message).toContain('did not accept the credentials for the commit (HTTP 401)');
    expect(report.failures[0]!.message).not.toContain('may not write');
    // The upload is kept: the next pass commits it, once, without storing the bytes again.
    expect(s.store.listOutbox().map((r) => [r.fileName, r.stage])).toEqual([['b.txt', 'committing']]);
    s.answerCommit((real, ...args) => real(...args));
    expect(await recoverOutbox(s.d)).toEqual({ finished: 1, dropped: 0, held: [] });
    const docs = s.emu.control.listDocuments(s.d.binderId);
    expect(docs.map((d) => d.fileName)).toEqual(['b.txt']);
    expect(s.emu.control.listVersions(docs[0]!.id)).toHaveLength(1);
  });
});

describe('an edit is committed only onto the version it was made from', () => {
  it('a version added by someone else since the listing stops the upload (retryable): nothing committed over it', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    c.addVersion(doc.id, 'COLLEAGUE EDIT'); // after the listing the plan rests on
    const report = await executePlan(uploadPlan(writeLocal(s.root, 'a.txt', 'my edit'), s.folderId, doc.id), s.d);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0]).toMatchObject({ code: 'REMOTE_CHANGED', retryable: true });
    expect(c.listVersions(doc.id).map((v) => c.readContent(doc.id, v.id).toString())).toEqual(['original', 'COLLEAGUE EDIT']);
    expect(s.commits).toHaveLength(0);
    expect(s.store.getBase(doc.id)?.versionId).toBe(doc.latestVersionId);
    expect(s.store.listOutbox()).toEqual([]);
  });

  it('reads the document once per edit, also when the server leaves its metadata out', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    const client = s.d.client as ServiceClient;
    const real = client.getDocument.bind(client);
    let reads = 0;
    client.getDocument = async (id: string) => {
      reads++;
      const got = await real(id);
      if (got === null) return null;
      const { metadata: _dropped, ...rest } = got;
      return rest;
    };
    const report = await executePlan(uploadPlan(writeLocal(s.root, 'a.txt', 'edited'), s.folderId, doc.id), s.d);
    expect(report.failures).toEqual([]);
    expect(reads).toBe(1);
    expect(s.commits[0]![2].metadata).toEqual([]);
  });

  it("a new version keeps the document's metadata; rules only fill elements it has none for", async () => {
    const s = await setup();
    const c = s.emu.control;
    c.addMetadataElement(s.d.binderId, { id: 'Department', label: 'Department', dataType: 'string', allowedValues: [{ id: 'legal', label: 'Legal' }, { id: 'eng', label: 'Engineering' }] });
    c.addMetadataElement(s.d.binderId, { id: 'Reference', label: 'Reference', dataType: 'string' });
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original', { metadata: [{ metadataElementId: 'Department', valueId: 'legal' }] }).document;
    synced(s, doc);
    const rules = [{ metadataElementId: 'Department', value: 'eng' }, { metadataElementId: 'Reference', value: 'R-1' }];
    s.d.metadata = { forPath: () => rules, valuesFor: () => rules, missingFor: () => [], accepts: () => true };
    const report = await executePlan(uploadPlan(writeLocal(s.root, 'a.txt', 'edited'), s.folderId, doc.id), s.d);
    expect(report.failures).toEqual([]);
    expect(s.commits[0]![2].metadata).toEqual([
      { metadataElementId: 'Department', value: 'legal' },
      { metadataElementId: 'Reference', value: 'R-1' },
    ]);
    // A new document takes the rules as they are.
    const fresh = await executePlan(uploadPlan(writeLocal(s.root, 'new.txt', 'new'), s.folderId, null), s.d);
    expect(fresh.failures).toEqual([]);
    expect(s.commits[1]![2].metadata).toEqual([
      { metadataElementId: 'Department', value: 'eng' },
      { metadataElementId: 'Reference', value: 'R-1' },
    ]);
  });
});

describe('metadata of a new version, against what the binder takes now', () => {
  it("leaves out the document's values the binder no longer takes (a retired value, a removed element), so a rule fills them", async () => {
    const s = await setup();
    const c = s.emu.control;
    const elements = [
      { id: 'Department', label: 'Department', dataType: 'string', allowedValues: [{ id: 'legal', label: 'Legal' }, { id: 'eng', label: 'Engineering' }] },
      { id: 'Owner', label: 'Owner', dataType: 'string' },
    ];
    for (const e of elements) c.addMetadataElement(s.d.binderId, e);
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original', {
      metadata: [{ metadataElementId: 'Department', valueId: 'retired' }, { metadataElementId: 'Gone', valueId: 'zz' }, { metadataElementId: 'Owner', valueId: 'bob' }],
    }).document;
    synced(s, doc);
    s.d.metadata = compileMetadataRules([{ match: '**', values: { Department: 'Engineering', Owner: 'alice' } }], elements, 'main');
    const report = await executePlan(uploadPlan(writeLocal(s.root, 'a.txt', 'edited'), s.folderId, doc.id), s.d);
    expect(report.failures).toEqual([]);
    expect(s.commits[0]![2].metadata).toEqual([
      { metadataElementId: 'Owner', value: 'bob' }, // still valid: kept, not reclassified by the rule
      { metadataElementId: 'Department', value: 'eng' }, // retired value replaced by the rule's
    ]);
  });
});

describe('recovering the outbox after a restart', () => {
  /** An upload killed before its commit: the bytes are PUT and the row waits at 'committing'. */
  async function pendingRow(s: Setup, name: string): Promise<void> {
    const content = `content of ${name}`;
    const local = writeLocal(s.root, name, content);
    const sent = await s.d.client.uploadContent(() => Readable.from([Buffer.from(content)]), local.size);
    const id = s.store.addOutbox({
      relPath: local.relPath, key: local.key, documentId: null, folderId: s.folderId, fileName: name, sha256: local.sha256 ?? '',
      size: local.size, mtimeMs: local.mtimeMs, inode: local.inode, ctimeMs: local.ctimeMs, versionLabel: '1', reason: 'new-local',
    });
    s.store.setOutboxStage(id, 'committing', { uploadId: sent.uploadId });
  }

  /** An edit of `doc` (synced) PUT and left at 'committing' (a crash, or a commit that failed with a 503). */
  async function pendingEdit(s: Setup, doc: { id: string; fileName: string }, content: string): Promise<number> {
    const local = writeLocal(s.root, doc.fileName, content);
    const sent = await s.d.client.uploadContent(() => Readable.from([Buffer.from(content)]), local.size);
    const id = s.store.addOutbox({
      relPath: local.relPath, key: local.key, documentId: doc.id, folderId: s.folderId, fileName: doc.fileName, sha256: local.sha256 ?? '',
      size: local.size, mtimeMs: local.mtimeMs, inode: local.inode, ctimeMs: local.ctimeMs, versionLabel: '2', reason: 'local-modified',
    });
    s.store.setOutboxStage(id, 'committing', { uploadId: sent.uploadId, sha256: local.sha256 ?? '' });
    return id;
  }

  // Black-box round 29a, F1: the row was committed blindly, on top of whatever the service held by then.
  it('an edit left unfinished is not committed once a colleague added a version meanwhile: dropped, planned again (a conflict)', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    await pendingEdit(s, doc, 'my edit');
    c.addVersion(doc.id, 'colleague edit', { versionLabel: '2' });
    expect(await recoverOutbox(s.d)).toEqual({ finished: 0, dropped: 1, held: [] });
    expect(s.commits).toEqual([]);
    expect(c.listVersions(doc.id).map((v) => c.readContent(doc.id, v.id).toString())).toEqual(['original', 'colleague edit']);
    expect(s.store.listOutbox()).toEqual([]);
    expect(s.store.loadBase().get(doc.id)?.versionId).toBe(doc.latestVersionId); // the base still says: both changed
  });

  it('an edit left unfinished is not committed once its document was renamed meanwhile (no stray document under the old name)', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    await pendingEdit(s, doc, 'my edit');
    c.renameDocument(doc.id, 'renamed.txt');
    expect(await recoverOutbox(s.d)).toEqual({ finished: 0, dropped: 1, held: [] });
    expect(s.commits).toEqual([]);
    expect(c.listDocuments(s.d.binderId).map((d) => d.fileName)).toEqual(['renamed.txt']);
  });

  it('a new file left unfinished does not become a version of a colleague\'s new document of the same name', async () => {
    const s = await setup();
    const c = s.emu.control;
    await pendingRow(s, 'new.txt');
    const theirs = c.addDocument(s.d.binderId, s.folderId, 'new.txt', 'their new file').document;
    expect(await recoverOutbox(s.d)).toEqual({ finished: 0, dropped: 1, held: [] });
    expect(s.commits).toEqual([]);
    expect(c.listVersions(theirs.id)).toHaveLength(1);
    expect(s.store.loadBase().size).toBe(0);
  });

  it('a commit that was applied but whose answer was lost is recognised by its content, not committed again nor dropped', async () => {
    const s = await setup();
    const c = s.emu.control;
    const doc = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, doc);
    const id = await pendingEdit(s, doc, 'my edit, committed');
    const row = s.store.getOutbox(id)!;
    await s.d.client.commitUpload(s.d.binderId, s.folderId, { fileName: 'a.txt', versionLabel: '2', uploadId: row.uploadId!, metadata: [] });
    await pendingRow(s, 'new.txt');
    const newRow = s.store.listOutbox().find((r) => r.fileName === 'new.txt')!;
    await s.d.client.commitUpload(s.d.binderId, s.folderId, { fileName: 'new.txt', versionLabel: '1', uploadId: newRow.uploadId!, metadata: [] });
    const before = s.commits.length;
    const lines = captureLog(s.d);
    expect(await recoverOutbox(s.d)).toEqual({ finished: 2, dropped: 0, held: [] });
    expect(s.commits.length).toBe(before); // nothing committed again
    // Said as found, not as finished now (black-box round 30a, F5: a colleague's identical version reads alike).
    const said = lines.filter((l) => l.msg.includes('left unfinished')).map((l) => `${l.relPath}: ${l.msg}`);
    expect(said).toHaveLength(2);
    for (const line of said) expect(line).toMatch(/was already on the service: a version with its content was made since the edit; recorded, nothing sent$/);
    expect(c.listVersions(doc.id)).toHaveLength(2);
    const base = s.store.loadBase();
    expect(base.get(doc.id)?.versionId).toBe(c.listVersions(doc.id).at(-1)!.id);
    expect([...base.values()].map((b) => b.relPath).sort()).toEqual(['Docs/a.txt', 'Docs/new.txt']);
  });

  it('a row the service refuses for good (403) is dropped, and the other rows are still finished', async () => {
    const s = await setup();
    await pendingRow(s, 'refused.txt');
    await pendingRow(s, 'fine.txt');
    s.answerCommit(async (real, ...args) => {
      if (args[2].fileName === 'refused.txt') throw statusError(403, 'no write access');
      return real(...args);
    });
    expect(await recoverOutbox(s.d)).toEqual({ finished: 1, dropped: 1, held: [] });
    expect(s.store.listOutbox()).toEqual([]);
    expect([...s.store.loadBase().values()].map((b) => b.relPath)).toEqual(['Docs/fine.txt']);
    expect(s.emu.control.listDocuments(s.d.binderId).map((d) => d.fileName)).toEqual(['fine.txt']);
  });

  it('an error that is not the service\'s answer (a bug, say) keeps the row: only the service may drop it', async () => {
    const s = await setup();
    await pendingRow(s, 'kept.txt');
    s.answerCommit(async () => {
      throw new TypeError('boom');
    });
    await expect(recoverOutbox(s.d)).rejects.toThrow('boom');
    expect(s.store.listOutbox().map((r) => r.fileName)).toEqual(['kept.txt']);
  });

  it('retryable trouble keeps the row and holds its file and the rows after it, without failing (round 31a, F6)', async () => {
    const s = await setup();
    await pendingRow(s, 'later.txt');
    await pendingRow(s, 'after.txt');
    let commits = 0;
    s.answerCommit(async () => {
      commits++;
      throw new ServiceError('POST upload failed with HTTP 503', { code: 'SERVICE_UNAVAILABLE', retryable: true, request: 'POST upload', status: 503 });
    });
    const held = await recoverOutbox(s.d);
    expect(held).toMatchObject({ finished: 0, dropped: 0, held: [{ relPath: 'Docs/later.txt', error: { code: 'SERVICE_UNAVAILABLE' } }, { relPath: 'Docs/after.txt' }] });
    expect(commits).toBe(1); // the service is not asked again for the rows after it
    expect(s.store.listOutbox().map((r) => [r.fileName, r.stage])).toEqual([['later.txt', 'committing'], ['after.txt', 'committing']]);
    s.answerCommit((real, ...args) => real(...args));
    expect(await recoverOutbox(s.d)).toEqual({ finished: 2, dropped: 0, held: [] });
  });

  it('a row whose file changed since is not committed: dropped when the service lacks its content (round 31a, F14)', async () => {
    const s = await setup();
    await pendingRow(s, 'discarded.txt');
    fs.writeFileSync(path.join(s.root, 'Docs', 'discarded.txt'), 'written again since');
    const before = s.commits.length;
    expect(await recoverOutbox(s.d)).toEqual({ finished: 0, dropped: 1, held: [] });
    expect(s.commits.length).toBe(before);
    expect(s.emu.control.listDocuments(s.d.binderId)).toEqual([]);
  });

  it('a version the service puts on another document of the same name (commits go by name) is not recorded as ours', async () => {
    const s = await setup();
    const c = s.emu.control;
    // Two documents named a.txt in one folder when the commit arrives (the emulator lets a rename make a twin; its
    // commit takes the first): the first takes the name after the last name check, as the commit is sent.
    const first = c.addDocument(s.d.binderId, s.folderId, 'x.txt', 'first').document;
    const second = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'original').document;
    synced(s, second);
    s.answerCommit((real, ...args) => {
      c.renameDocument(first.id, 'a.txt');
      return real(...args);
    });
    const local = writeLocal(s.root, 'a.txt', 'MY edit of the second');
    const report = await executePlan(uploadPlan(local, s.folderId, second.id), s.d);
    expect(report.failures).toEqual([
      expect.objectContaining({ kind: 'upload', relPath: 'Docs/a.txt', code: 'COMMIT_MISDIRECTED', retryable: false, message: expect.stringContaining(`another document (${first.id}, not ${second.id})`) }),
    ]);
    // What the service did stays visible to the next listing; nothing of ours claims it.
    expect(c.readContent(first.id).toString()).toBe('MY edit of the second');
    expect(c.listVersions(second.id)).toHaveLength(1);
    expect(s.store.listOutbox()).toEqual([]);
    expect(s.store.loadBase().get(second.id)?.versionId).toBe(second.latestVersionId);
    expect(s.store.loadBase().has(first.id)).toBe(false);
  });

  it('a commit repeated after a restart that the service puts on another document of the name is dropped, not recorded as ours', async () => {
    const s = await setup();
    const c = s.emu.control;
    const first = c.addDocument(s.d.binderId, s.folderId, 'a.txt', 'first').document;
    const second = c.addDocument(s.d.binderId, s.folderId, 'b.txt', 'original').document;
    c.renameDocument(second.id, 'a.txt');
    synced(s, { ...second, fileName: 'a.txt' });
    const local = writeLocal(s.root, 'a.txt', 'edit of the second, committed after a restart');
    const sent = await s.d.client.uploadContent(() => Readable.from([Buffer.from('edit of the second, committed after a restart')]), local.size);
    const id = s.store.addOutbox({
      relPath: local.relPath, key: local.key, documentId: second.id, folderId: s.folderId, fileName: 'a.txt', sha256: local.sha256 ?? '',
      size: local.size, mtimeMs: local.mtimeMs, inode: local.inode, ctimeMs: local.ctimeMs, versionLabel: '2', reason: 'local-modified',
    });
    s.store.setOutboxStage(id, 'committing', { uploadId: sent.uploadId });
    expect(await recoverOutbox(s.d)).toEqual({ finished: 0, dropped: 1, held: [] });
    expect(s.store.listOutbox()).toEqual([]);
    expect(s.store.loadBase().get(second.id)?.versionId).toBe(second.latestVersionId);
    expect(s.store.loadBase().has(first.id)).toBe(false);
  });
});

