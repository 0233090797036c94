// The last name check before a commit (src/sync/name-recheck.ts), over real HTTP against the emulator. A commit
// names only a folder and a file name (4.9), so:
// - an edit whose document is renamed (also but for case) while its upload is in flight must not commit under
//   the old name (the emulator, like the service, would create a stray document there); the next pass uploads
//   the edit onto the renamed document;
// - a new file's name taken on the service after an earlier upload's listing must be seen by an upload whose
//   PUT ends more than RECHECK_TOLERANCE_MS after that listing was requested;
// - a burst into one folder still costs a few listings, not one per file.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { toFileStat } from '../../src/local/fs-ops.js';
import { ServiceClient } from '../../src/service/index.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { executePlan } from '../../src/sync/executor.js';
import type { LocalFile, Plan } from '../../src/sync/model.js';
import { FolderRecheck, RECHECK_TOLERANCE_MS } from '../../src/sync/name-recheck.js';
import { runPass } from '../../src/sync/pass.js';
import { openPair } from '../../src/sync/open-pair.js';
import { executorFixture } from './executor-fixture.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

function writeLocal(root: string, name: string, content: string): LocalFile {
  const abs = path.join(root, 'Docs', name);
  fs.writeFileSync(abs, content);
  return { relPath: `Docs/${name}`, key: `Docs/${name}`, ...toFileStat(fs.lstatSync(abs)), sha256: sha(content) };
}

function newFilesPlan(files: LocalFile[], folderId: string): Plan {
  return {
    groups: files.map((local) => [{ kind: 'upload' as const, relPath: local.relPath, key: local.key, local, target: { documentId: null, folderId, fileName: path.posix.basename(local.relPath) }, reason: 'new-local' as const, replacesBase: null }]),
    issues: [],
    blocked: null,
  };
}

/** Runs `change` once, when the first bytes of a PUT have been read: the upload is in flight. */
function duringPut(d: ExecutorDeps, change: () => void): void {
  let done = false;
  d.onBytes = () => {
    if (done) return;
    done = true;
    change();
  };
}

/** The remote changes that leave an edit's commit, sent under the old name, no document to land on. */
type Change = (c: Emulator['control'], docId: string, where: { binderId: string; folderId: string }) => void;
const RENAMES: Array<[string, Change]> = [
  ['its document is renamed', (c, docId) => void c.renameDocument(docId, 'renamed.txt')],
  ['its document is renamed but for case', (c, docId) => void c.renameDocument(docId, 'PLAN.txt')],
];

/** Docs/plan.txt: a document "plan.txt" with content "original", and its base row (synced). */
function syncedPlan(s: Awaited<ReturnType<typeof executorFixture>>): { id: string; latestVersionId: string } {
  const doc = s.emu.control.addDocument(s.binderId, s.folderId, 'plan.txt', 'original').document;
  s.store.putBase({
    documentId: doc.id, versionId: doc.latestVersionId, versionLabel: '1', folderId: s.folderId, fileName: 'plan.txt',
    relPath: 'Docs/plan.txt', key: 'Docs/plan.txt', size: 8, mtimeMs: 1, inode: 1, ctimeMs: 1, sha256: sha('original'),
  });
  return doc;
}

describe("an edit's document renamed on the service while its upload is in flight", () => {
  const cases: Array<[string, Change]> = [
    ...RENAMES,
    ['another document of its name but for case appears', (c, _docId, w) => void c.addDocument(w.binderId, w.folderId, 'Plan.TXT', 'OTHER')],
  ];
  for (const [what, change] of cases) {
    it(`${what}: REMOTE_CHANGED, nothing committed, no new document`, async () => {
      const s = await executorFixture(cleanups, 'recheck-edit-');
      const c = s.emu.control;
      const doc = syncedPlan(s);
      const local = writeLocal(s.root, 'plan.txt', 'my edit');
      duringPut(s.d, () => change(c, doc.id, s));
      const plan: Plan = {
        groups: [[{ kind: 'upload', relPath: local.relPath, key: local.key, local, target: { documentId: doc.id, folderId: s.folderId, fileName: 'plan.txt' }, reason: 'local-modified', replacesBase: null }]],
        issues: [],
        blocked: null,
      };
      const report = await executePlan(plan, s.d);
      expect(report.failures).toEqual([expect.objectContaining({ kind: 'upload', relPath: 'Docs/plan.txt', code: 'REMOTE_CHANGED', retryable: true })]);
      expect(report.failures[0]?.message).toMatch(/Docs\/plan\.txt: not uploaded: .*(renamed or moved on the service during the upload|is now named like it)/);
      expect(c.counters().commit).toBe(0);
      expect(c.listVersions(doc.id)).toHaveLength(1);
      // No stray document under the old name, nothing of ours on any document.
      const docs = c.listDocuments(s.binderId);
      expect(docs).toHaveLength(what.startsWith('another') ? 2 : 1);
      for (const x of docs) expect(c.listVersions(x.id)).toHaveLength(1);
      expect(s.store.listOutbox()).toEqual([]);
      expect(s.store.getBase(doc.id)?.versionId).toBe(doc.latestVersionId);
    });
  }

  for (const [what, rename] of RENAMES) {
    it(`${what} (a whole pass): the next pass uploads the edit as a new version of the renamed document`, async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'recheck-pass-'));
      cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
      const emu = await startEmulator({ quiet: true });
      cleanups.push(() => emu.close());
      const c = emu.control;
      const binderId = c.createBinder({ name: 'B' }).id;
      const folderId = c.createFolder(binderId, { name: 'Docs' }).id;
      const doc = c.addDocument(binderId, folderId, 'plan.txt', 'original').document;
      const cr = emu.credentials;
      const { config } = parseConfigText(
        `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${cr.tenantId}, clientId: ${cr.clientId}, clientSecret: ${cr.clientSecret}, requestsPerSecond: 1000 }
stateDir: ./state
pairs: [{ name: p, localPath: ./local, binderId: ${binderId} }]`,
        { baseDir: dir, env: {} },
      );
      const client = new ServiceClient({ ...config.service, requestTimeoutMs: 10_000 });
      cleanups.push(() => client.close());
      const rt = await openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }));
      cleanups.push(() => rt.store.close());
      expect((await runPass(rt)).converged).toBe(true);
      fs.writeFileSync(path.join(dir, 'local', 'Docs', 'plan.txt'), 'my edit');

      let renamed = false;
      const second = await runPass(rt, {
        onBytes: () => {
          if (renamed) return;
          renamed = true;
          rename(c, doc.id, { binderId, folderId });
        },
      });
      expect(renamed).toBe(true);
      expect(second.execution?.failures).toEqual([expect.objectContaining({ kind: 'upload', code: 'REMOTE_CHANGED', retryable: true })]);
      expect(c.listDocuments(binderId)).toHaveLength(1);
      expect(c.listVersions(doc.id)).toHaveLength(1);

      const third = await runPass(rt);
      expect(third.execution?.failures ?? []).toEqual([]);
      const docs = c.listDocuments(binderId);
      expect(docs.map((x) => x.id)).toEqual([doc.id]);
      const newName = docs[0]!.fileName;
      expect(newName).not.toBe('plan.txt');
      expect(c.readContent(doc.id).toString()).toBe('my edit');
      expect(c.listVersions(doc.id)).toHaveLength(2);
      expect(fs.readdirSync(path.join(dir, 'local', 'Docs'))).toEqual([newName]);
      expect((await runPass(rt)).plan.groups).toEqual([]);
    });
  }
});

describe("an edit's document renamed just after a shared listing of its folder", () => {
  it('is caught on the document itself (fetched after the PUT), not on the listing up to a second old', async () => {
    const s = await executorFixture(cleanups, 'recheck-stale-');
    const c = s.emu.control;
    const doc = syncedPlan(s);
    const fresh = writeLocal(s.root, 'new.txt', 'a new file');
    const edit = writeLocal(s.root, 'plan.txt', 'my edit, longer than the new file');
    // The new file's upload lists the folder; once that listing has answered, the document is renamed, and
    // only then does the edit's PUT end: the edit shares the listing (well within a second), which predates it.
    let listed!: () => void;
    const listing = new Promise<void>((r) => (listed = r));
    const realList = s.client.listFolderDocuments.bind(s.client);
    s.client.listFolderDocuments = async (...args) => {
      const docs = await realList(...args);
      listed();
      return docs;
    };
    const realUpload = s.client.uploadContent.bind(s.client);
    s.client.uploadContent = async (...args) => {
      const sent = await realUpload(...args);
      if (sent.bytes === edit.size) {
        await listing;
        c.renameDocument(doc.id, 'plan-final.txt');
      }
      return sent;
    };
    const plan: Plan = {
      groups: [
        ...newFilesPlan([fresh], s.folderId).groups,
        [{ kind: 'upload', relPath: edit.relPath, key: edit.key, local: edit, target: { documentId: doc.id, folderId: s.folderId, fileName: 'plan.txt' }, reason: 'local-modified', replacesBase: null }],
      ],
      issues: [],
      blocked: null,
    };
    const report = await executePlan(plan, s.d);
    expect(report.failures).toEqual([expect.objectContaining({ relPath: 'Docs/plan.txt', code: 'REMOTE_CHANGED' })]);
    expect(report.failures[0]?.message).toContain('it is now named "plan-final.txt"');
    expect(c.counters().folderdocuments).toBe(1); // the edit did share the stale listing
    expect(c.listDocuments(s.binderId).map((x) => x.fileName).sort()).toEqual(['new.txt', 'plan-final.txt']);
    expect(c.listVersions(doc.id)).toHaveLength(1);
  });
});

describe('a burst of new files into one folder', () => {
  it('a name taken after an earlier upload listed the folder is seen by the uploads ending a second later: none commits onto it', async () => {
    const s = await executorFixture(cleanups, 'recheck-burst-');
    const c = s.emu.control;
    const names = ['a.txt', 'bb.txt', 'ccc.txt', 'dddd.txt'];
    const files = names.map((n) => writeLocal(s.root, n, `mine: ${n}`));
    const bySize = new Map(files.map((f) => [f.size, path.posix.basename(f.relPath)]));
    // The first listing (a.txt's) has answered; a colleague creates the other names; the other PUTs end more than
    // RECHECK_TOLERANCE_MS after that listing was requested, so they do not share it.
    let firstListing!: Promise<unknown>;
    let listed!: () => void;
    const listingStarted = new Promise<void>((r) => (listed = r));
    const realList = s.client.listFolderDocuments.bind(s.client);
    s.client.listFolderDocuments = (...args) => {
      const p = realList(...args);
      firstListing ??= p;
      listed();
      return p;
    };
    const realUpload = s.client.uploadContent.bind(s.client);
    s.client.uploadContent = async (...args) => {
      const sent = await realUpload(...args);
      const name = bySize.get(sent.bytes)!;
      if (name !== 'a.txt') {
        await listingStarted;
        await firstListing;
        c.addDocument(s.binderId, s.folderId, name, 'COLLEAGUE');
        await new Promise((r) => setTimeout(r, RECHECK_TOLERANCE_MS + 100));
      }
      return sent;
    };
    const report = await executePlan(newFilesPlan(files, s.folderId), s.d);
    expect(report.failures.map((f) => [f.relPath, f.code]).sort()).toEqual(names.slice(1).map((n) => [`Docs/${n}`, 'REMOTE_CHANGED']));
    expect(c.counters().commit).toBe(1);
    const docs = c.listDocuments(s.binderId);
    expect(docs.map((x) => x.fileName).sort()).toEqual([...names].sort());
    for (const doc of docs) {
      expect(c.listVersions(doc.id)).toHaveLength(1);
      expect(c.readContent(doc.id).toString()).toBe(doc.fileName === 'a.txt' ? 'mine: a.txt' : 'COLLEAGUE');
    }
  });

  it('20 new files cost a few listings of their folder, one at a time, not one per file', async () => {
    const s = await executorFixture(cleanups, 'recheck-count-');
    const c = s.emu.control;
    s.d.concurrency = 20;
    // A listing round trip of 100 ms: the uploads whose PUT ends meanwhile share the next one.
    c.injectFault({ route: 'folderdocuments', latencyMs: 100 });
    let inFlight = 0;
    let maxInFlight = 0;
    const realList = s.client.listFolderDocuments.bind(s.client);
    s.client.listFolderDocuments = async (...args) => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        return await realList(...args);
      } finally {
        inFlight--;
      }
    };
    const files = Array.from({ length: 20 }, (_, i) => writeLocal(s.root, `f${i}.txt`, `content ${i}`));
    const report = await executePlan(newFilesPlan(files, s.folderId), s.d);
    expect(report.failures).toEqual([]);
    expect(c.listDocuments(s.binderId)).toHaveLength(20);
    expect(maxInFlight).toBe(1);
    // One listing per upload would be 20 (seen: 2 or 3).
    expect(c.counters().folderdocuments).toBeLessThanOrEqual(8);
  });

  it('a listing is shared by the calls whose PUT ended at most RECHECK_TOLERANCE_MS after it was requested; a failed one by none', async () => {
    const s = await executorFixture(cleanups, 'recheck-share-');
    const c = s.emu.control;
    let clock = 10_000;
    const recheck = new FolderRecheck(s.client, s.binderId, () => clock);
    const first = recheck.documents(s.folderId, clock - RECHECK_TOLERANCE_MS);
    expect(recheck.documents(s.folderId, clock)).toBe(first); // requested at that very moment: shared
    expect((await first).map((d) => d.fileName)).toEqual([]);
    c.addDocument(s.binderId, s.folderId, 'late.txt', 'x');
    clock += 500;
    expect((await recheck.documents(s.folderId, clock - RECHECK_TOLERANCE_MS)).map((d) => d.fileName)).toEqual([]);
    expect(c.counters().folderdocuments).toBe(1);
    // A PUT that ended more than the tolerance after the listing was requested: a new listing, which sees it.
    clock += 600;
    expect((await recheck.documents(s.folderId, clock - RECHECK_TOLERANCE_MS)).map((d) => d.fileName)).toEqual(['late.txt']);
    expect(c.counters().folderdocuments).toBe(2);
    // A failed listing is not shared with the calls after it.
    c.injectFault({ route: 'folderdocuments', status: 400, times: 1 });
    clock += 2_000;
    await expect(recheck.documents(s.folderId, clock - RECHECK_TOLERANCE_MS)).rejects.toThrow();
    expect((await recheck.documents(s.folderId, clock - RECHECK_TOLERANCE_MS)).map((d) => d.fileName)).toEqual(['late.txt']);
  });
});
