// The service client against the emulator over real HTTP on 127.0.0.1: every endpoint, the spec's variants
// (binder shape, link suffix, commit spelling) and faults (token expiry, 429, drops, truncation, expiry, burned slots).
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';
import { answersRepeatedCommit, type CapabilityMemory, type ServiceCapabilities } from '../../src/service/client.js';
import { ServiceClient, ServiceError, type ServiceSettings } from '../../src/service/index.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function setup(opts: EmulatorOptions = {}, settings: Partial<ServiceSettings> = {}, logger?: pino.Logger, memory?: CapabilityMemory) {
  const emu: Emulator = await startEmulator({ quiet: true, ...opts });
  cleanups.push(() => emu.close());
  const client = new ServiceClient(
    {
      baseUrl: emu.baseUrl,
      authUrl: emu.authUrl,
      tenantId: emu.credentials.tenantId,
      clientId: emu.credentials.clientId,
      clientSecret: emu.credentials.clientSecret,
      retry: { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 50 },
      ...settings,
    },
    { ...(logger ? { logger } : {}), ...(memory ? { memory } : {}) },
  );
  cleanups.push(() => client.close());
  const c = emu.control;
  const binder = c.createBinder({ name: 'Atlas' });
  const top = c.createFolder(binder.id, { name: 'Docs' });
  const sub = c.createFolder(binder.id, { name: 'Specs', parentId: top.id });
  return { emu, client, c, binder, top, sub };
}

function storageRecords(emu: Emulator) {
  return emu.control.lastRequests(1000).filter((r) => r.route === 'storage-get' || r.route === 'storage-put');
}

/** Deterministic pseudo-random content produced chunk by chunk (never whole in memory). */
function generated(size: number, seed: number): () => Readable {
  return () => {
    let left = size;
    let n = seed;
    return new Readable({
      read() {
        if (left === 0) return void this.push(null);
        const len = Math.min(left, 256 * 1024);
        const buf = Buffer.allocUnsafe(len);
        for (let i = 0; i < len; i += 4) {
          n = (Math.imul(n, 1664525) + 1013904223) >>> 0;
          buf.writeUInt32LE(n, i);
        }
        left -= len;
        this.push(buf);
      },
    });
  };
}

async function sink() {
  const dir = await mkdtemp(join(tmpdir(), 'svc-test-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return (name: string) => join(dir, name);
}

describe('every endpoint against the emulator', () => {
  it('lists, searches, reads, downloads, uploads and commits', async () => {
    const { emu, client, c, binder, top, sub } = await setup();
    c.addMetadataElement(binder.id, { id: 'Department', label: 'Department', dataType: 'enum', allowedValues: [{ id: 'eng', label: 'Engineering' }], required: true });
    const meta = [{ metadataElementId: 'Department', valueId: 'eng' }];
    const a = c.addDocument(binder.id, top.id, 'a.txt', 'alpha', { metadata: meta });
    c.addDocument(binder.id, sub.id, 'b.txt', 'bravo', { metadata: meta });
    c.addDocument(binder.id, sub.id, 'c.txt', 'charlie', { metadata: meta });
    const v2 = c.addVersion(a.document.id, 'alpha two');

    expect((await client.listBinders()).map((b) => b.id)).toContain(binder.id);
    const elements = await client.getMetadataElements(binder.id);
    expect(elements.map((e) => e.id)).toEqual(expect.arrayContaining(['GLOBAL_BinderId', 'GLOBAL_TabId', 'Department']));
    expect((await client.listTopFolders(binder.id)).map((f) => f.name)).toEqual(['Docs']);
    expect((await client.listSubFolders(binder.id, top.id)).map((f) => f.id)).toEqual([sub.id]);
    expect((await client.listFolderDocuments(binder.id, sub.id)).map((d) => d.fileName).sort()).toEqual(['b.txt', 'c.txt']);

    // Walk all pages (spec 4.3 rule 8) with a page size of 2.
    const seen: string[] = [];
    for (let pageNumber = 1; ; pageNumber++) {
      const page = await client.searchDocuments({ filters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: binder.id }], sortBy: [{ metadataElementId: 'GLOBAL_Category', direction: 'asc' }], pageSize: 2, pageNumber });
      expect(page.totalCount).toBe(3);
      seen.push(...page.items.map((d) => d.fileName));
      if (page.pageNumber * page.pageSize >= page.totalCount) break;
    }
    expect(seen.sort()).toEqual(['a.txt', 'b.txt', 'c.txt']);

    const doc = await client.getDocument(a.document.id);
    expect(doc).toMatchObject({ id: a.document.id, fileName: 'a.txt', folderId: top.id, latestVersionId: v2.id });
    expect(await client.getDocument(crypto.randomUUID())).toBeNull();
    const versions = await client.listVersions(a.document.id);
    expect(versions.map((v) => v.id)).toEqual(expect.arrayContaining([a.version.id, v2.id]));
    expect(await client.getVersion(a.document.id, v2.id)).toMatchObject({ id: v2.id, documentId: a.document.id });
    const link = await client.getDownloadLink(a.document.id, v2.id);
    expect(link.url.startsWith(emu.storageUrl)).toBe(true);
    expect(client.capabilities.downloadLinkSuffix).toBe('raw');

    const path = await sink();
    const got = await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('a.txt')));
    expect(got).toEqual({ bytes: 5, sha256: sha(Buffer.from('alpha')) });
    // hashBelowBytes: a body announced at that size or more is only counted (the caller hashes what it wrote).
    expect(await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('a2.txt')), { hashBelowBytes: 5 })).toEqual({ bytes: 5, sha256: null });
    expect(await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('a3.txt')), { hashBelowBytes: 6 })).toEqual({ bytes: 5, sha256: sha(Buffer.from('alpha')) });

    // Upload a new version of b.txt and a new document, then commit both.
    const body = Buffer.from('bravo two');
    const slots: string[] = [];
    const up = await client.uploadContent(() => Readable.from([body]), body.length, { onSlot: (id) => void slots.push(id) });
    expect(slots).toEqual([up.uploadId]);
    expect(up.sha256).toBe(sha(body));
    const committed = await client.commitUpload(binder.id, sub.id, { fileName: 'b.txt', versionLabel: '2', uploadId: up.uploadId, metadata: [{ metadataElementId: 'Department', value: 'eng' }] });
    expect(committed.version).toBe('2');
    expect(c.readContent(committed.documentId)).toEqual(body);
    // Committing the same uploadId again creates nothing (spec 3).
    const again = await client.commitUpload(binder.id, sub.id, { fileName: 'b.txt', versionLabel: '2', uploadId: up.uploadId, metadata: [{ metadataElementId: 'Department', value: 'eng' }] });
    expect(again.id).toBe(committed.id);
    expect(c.listVersions(committed.documentId)).toHaveLength(2);

    const zero = await client.uploadContent(() => Readable.from([]), 0);
    const fresh = await client.commitUpload(binder.id, top.id, { fileName: 'empty.bin', versionLabel: '1', uploadId: zero.uploadId, metadata: [{ metadataElementId: 'Department', value: 'eng' }] });
    expect(c.readContent(fresh.documentId)).toEqual(Buffer.alloc(0));
    expect(zero.sha256).toBe(sha(Buffer.alloc(0)));

    const storage = storageRecords(emu);
    expect(storage.length).toBeGreaterThanOrEqual(3);
    for (const r of storage) expect(r.authorization).toBe(false);
  });

  it("reads GET /binders as {items: [...]} too", async () => {
    const { client, binder } = await setup({ bindersShape: 'items' });
    expect((await client.listBinders()).map((b) => b.id)).toEqual([binder.id]);
  });

  it('parallel first links to a server without /raw: one finds /downloadlink, the others wait for it (one 404 in all)', async () => {
    const { emu, client, c, binder, top } = await setup({ downloadLinkPaths: ['downloadlink'] });
    const docs = ['a', 'b', 'c', 'd', 'e'].map((n) => c.addDocument(binder.id, top.id, `${n}.txt`, n));
    const links = await Promise.all(docs.map((d) => client.getDownloadLink(d.document.id, d.version.id)));
    expect(links).toHaveLength(5);
    const suffixes = emu.control.lastRequests(100).filter((r) => r.route === 'downloadlink').map((r) => r.path.split('/').pop());
    expect(suffixes.sort()).toEqual(['downloadlink', 'downloadlink', 'downloadlink', 'downloadlink', 'downloadlink', 'raw']);
    expect(client.capabilities.downloadLinkSuffix).toBe('downloadlink');
  });

  it('learns the /downloadlink suffix when /raw does not exist', async () => {
    const { emu, client, c, binder, top } = await setup({ downloadLinkPaths: ['downloadlink'] });
    const a = c.addDocument(binder.id, top.id, 'a.txt', 'alpha');
    const path = await sink();
    await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('1')));
    await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('2')));
    expect(client.capabilities.downloadLinkSuffix).toBe('downloadlink');
    const links = emu.control.lastRequests(100).filter((r) => r.route === 'downloadlink').map((r) => r.path.split('/').pop());
    expect(links).toEqual(['raw', 'downloadlink', 'downloadlink']);
  });

  it.each(['walkthrough', 'reference'] as const)('commits to a strict server that only takes the %s spelling: 2 requests for the first commit, 1 after', async (spelling) => {
    const { emu, client, c, binder, top } = await setup({ commitSpelling: spelling });
    c.addMetadataElement(binder.id, { id: 'Department', label: 'Department', dataType: 'enum', allowedValues: [{ id: 'ops', label: 'Ops' }] });
    const commits: number[] = [];
    for (const [i, name] of ['x.txt', 'y.txt', 'x.txt'].entries()) {
      emu.control.resetCounters();
      const up = await client.uploadContent(() => Readable.from([Buffer.from(`${name} ${i}`)]), `${name} ${i}`.length);
      const v = await client.commitUpload(binder.id, top.id, { fileName: name, versionLabel: `L${i}`, uploadId: up.uploadId, metadata: i !== 1 ? [{ metadataElementId: 'Department', value: 'ops' }] : [] });
      commits.push(emu.control.counters().commit);
      expect(c.readContent(v.documentId).toString()).toBe(`${name} ${i}`);
      expect(c.listVersions(v.documentId).at(-1)).toMatchObject({ version: `L${i}`, metadata: i !== 1 ? [{ metadataElementId: 'Department', valueId: 'ops' }] : [] });
    }
    expect(commits).toEqual([2, 1, 1]);
    expect(client.capabilities.commitSpelling).toBe(spelling);
  });

  it('parallel first commits to a strict server: one finds the spelling, the others wait for it (one 400 in all, not one each)', async () => {
    const { emu, client, c, binder, top } = await setup({ commitSpelling: 'reference' });
    const names = ['p1.txt', 'p2.txt', 'p3.txt', 'p4.txt', 'p5.txt'];
    const slots = await Promise.all(names.map((n) => client.uploadContent(() => Readable.from([Buffer.from(n)]), n.length)));
    emu.control.resetCounters();
    const versions = await Promise.all(names.map((n, i) => client.commitUpload(binder.id, top.id, { fileName: n, versionLabel: '1', uploadId: slots[i]!.uploadId, metadata: [] })));
    expect(emu.control.counters().commit).toBe(names.length + 1);
    expect(versions.map((v) => c.readContent(v.documentId).toString())).toEqual(names);
    expect(client.capabilities.commitSpelling).toBe('reference');
  });

  it('marks a commit answer that came back to a second send (its first answer lost): a claim to check, not a fact', async () => {
    const { emu, client, binder, top } = await setup();
    const commit = async (name: string) => {
      const up = await client.uploadContent(() => Readable.from([Buffer.from(name)]), name.length);
      return client.commitUpload(binder.id, top.id, { fileName: name, versionLabel: '1', uploadId: up.uploadId, metadata: [] });
    };
    expect(answersRepeatedCommit(await commit('once.txt'))).toBe(false);
    // The commit is made, then its answer is cut short: the client sends it again and takes the second answer.
    emu.control.injectFault({ route: 'commit', truncate: true, times: 1 });
    emu.control.resetCounters();
    const again = await commit('twice.txt');
    expect(emu.control.counters().commit).toBe(2);
    expect(answersRepeatedCommit(again)).toBe(true);
    expect(emu.control.listVersions(again.documentId)).toHaveLength(1);
  });

  describe('hints from an earlier process (capabilities-file.ts)', () => {
    const linkSuffixes = (emu: Emulator) => emu.control.lastRequests(100).filter((r) => r.route === 'downloadlink').map((r) => `${r.path.split('/').pop()} ${r.status}`);

    it('a /downloadlink hint against a server without /raw: no 404, and nothing new to save', async () => {
      const saved: ServiceCapabilities[] = [];
      const { emu, client, c, binder, top } = await setup({ downloadLinkPaths: ['downloadlink'] }, {}, undefined, { hints: { downloadLinkSuffix: 'downloadlink' }, onLearned: (caps) => saved.push(caps) });
      const docs = ['a', 'b', 'c'].map((n) => c.addDocument(binder.id, top.id, `${n}.txt`, n));
      await Promise.all(docs.map((d) => client.getDownloadLink(d.document.id, d.version.id)));
      expect(linkSuffixes(emu)).toEqual(['downloadlink 200', 'downloadlink 200', 'downloadlink 200']);
      expect(client.capabilities.downloadLinkSuffix).toBe('downloadlink');
      expect(saved).toEqual([]);
    });

    it('a hint the server no longer matches (it went back to /raw only): one 404, then /raw, and the new finding is saved', async () => {
      const saved: ServiceCapabilities[] = [];
      const hints = { downloadLinkSuffix: 'downloadlink', commitSpelling: 'walkthrough' } as const;
      const { emu, client, c, binder, top } = await setup({ downloadLinkPaths: ['raw'] }, {}, undefined, { hints, onLearned: (caps) => saved.push(caps) });
      const a = c.addDocument(binder.id, top.id, 'a.txt', 'alpha');
      await client.getDownloadLink(a.document.id, a.version.id);
      await client.getDownloadLink(a.document.id, a.version.id);
      expect(linkSuffixes(emu)).toEqual(['downloadlink 404', 'raw 200', 'raw 200']);
      // The commit spelling was not tried in this process: the hint for it is kept, not erased.
      expect(saved).toEqual([{ downloadLinkSuffix: 'raw', commitSpelling: 'walkthrough' }]);
    });

    it.each([
      ['walkthrough', 'walkthrough', 1, []],
      ['reference', 'walkthrough', 2, [{ downloadLinkSuffix: null, commitSpelling: 'reference' }]],
    ] as const)('a strict %s server, hint %s: %i commit request(s) for the first commit', async (server, hint, firstCommits, expectSaved) => {
      const saved: ServiceCapabilities[] = [];
      const { emu, client, c, binder, top } = await setup({ commitSpelling: server }, {}, undefined, { hints: { commitSpelling: hint }, onLearned: (caps) => saved.push(caps) });
      const commits: number[] = [];
      for (const name of ['x.txt', 'y.txt']) {
        emu.control.resetCounters();
        const up = await client.uploadContent(() => Readable.from([Buffer.from(name)]), name.length);
        const v = await client.commitUpload(binder.id, top.id, { fileName: name, versionLabel: 'L1', uploadId: up.uploadId, metadata: [] });
        commits.push(emu.control.counters().commit);
        expect(c.listVersions(v.documentId).map((x) => x.version)).toEqual(['L1']);
      }
      expect(commits).toEqual([firstCommits, 1]);
      expect(client.capabilities.commitSpelling).toBe(server);
      expect(saved).toEqual(expectSaved);
    });
  });

  it('a first commit that fails for another reason hands the search to the next one waiting', async () => {
    const { emu, client, c, binder, top } = await setup({ commitSpelling: 'walkthrough' });
    const bad = await client.uploadContent(() => Readable.from([Buffer.from('z')]), 1);
    const good = await client.uploadContent(() => Readable.from([Buffer.from('g')]), 1);
    const results = await Promise.allSettled([
      client.commitUpload(binder.id, top.id, { fileName: 'back\\slash.txt', versionLabel: '1', uploadId: bad.uploadId, metadata: [] }),
      client.commitUpload(binder.id, top.id, { fileName: 'good.txt', versionLabel: '1', uploadId: good.uploadId, metadata: [] }),
    ]);
    expect(results[0]).toMatchObject({ status: 'rejected', reason: { status: 400 } });
    expect(results[1].status).toBe('fulfilled');
    if (results[1].status === 'fulfilled') expect(c.readContent(results[1].value.documentId).toString()).toBe('g');
    expect(client.capabilities.commitSpelling).toBe('walkthrough');
    expect(emu.control.counters().commit).toBeGreaterThanOrEqual(3);
  });

  it('a server taking both spellings takes the one body carrying both: 1 request per commit', async () => {
    const { emu, client, c, binder, top } = await setup();
    c.addMetadataElement(binder.id, { id: 'Ref', label: 'Ref', dataType: 'Text' });
    const up = await client.uploadContent(() => Readable.from([Buffer.from('b')]), 1);
    const v = await client.commitUpload(binder.id, top.id, { fileName: 'b.txt', versionLabel: 'B1', uploadId: up.uploadId, metadata: [{ metadataElementId: 'Ref', value: 'R-1' }] });
    expect(v.version).toBe('B1');
    expect(c.listVersions(v.documentId)[0]!.metadata).toEqual([{ metadataElementId: 'Ref', valueId: 'R-1' }]);
    expect(emu.control.counters().commit).toBe(1);
    expect(client.capabilities.commitSpelling).toBe('both');
  });

  it.each(['walkthrough', 'reference'] as const)('a lenient %s-only server that ignores unknown keys keeps label and metadata (new document and new version)', async (spelling) => {
    const { emu, client, c, binder, top } = await setup({ commitSpelling: spelling, ignoreUnknownCommitKeys: true });
    c.addMetadataElement(binder.id, { id: 'Ref', label: 'Ref', dataType: 'Text' });
    c.addMetadataElement(binder.id, { id: 'Department', label: 'Department', dataType: 'enum', allowedValues: [{ id: 'ops', label: 'Ops' }] });
    const meta = [
      { metadataElementId: 'Ref', value: 'R-42' },
      { metadataElementId: 'Department', value: 'ops' },
    ];
    const labels = ['first-label', 'second-label'];
    let documentId = '';
    for (const [i, label] of labels.entries()) {
      const up = await client.uploadContent(() => Readable.from([Buffer.from(label)]), label.length);
      const v = await client.commitUpload(binder.id, top.id, { fileName: 'a.txt', versionLabel: label, uploadId: up.uploadId, metadata: i === 0 ? meta : [meta[0]!] });
      expect(v.version).toBe(label);
      documentId = v.documentId;
    }
    const versions = c.listVersions(documentId);
    expect(versions.map((v) => v.version)).toEqual(labels);
    expect(versions[0]!.metadata).toEqual([
      { metadataElementId: 'Ref', valueId: 'R-42' },
      { metadataElementId: 'Department', valueId: 'ops' },
    ]);
    expect(versions[1]!.metadata).toEqual([{ metadataElementId: 'Ref', valueId: 'R-42' }]);
    expect(c.listDocuments(binder.id)[0]!.metadata).toEqual(expect.arrayContaining([{ metadataElementId: 'Ref', valueId: 'R-42' }, { metadataElementId: 'Department', valueId: 'ops' }]));
    expect(emu.control.counters().commit).toBe(2);
    expect(client.capabilities.commitSpelling).toBe('both');
  });

  it.each([
    ['walkthrough', 2],
    ['reference', 2],
    ['both', 1],
  ] as const)('a commit refused for its file name on a %s server throws the server reason, not the spelling complaint', async (spelling, requests) => {
    const { emu, client, binder, top } = await setup({ commitSpelling: spelling });
    const up = await client.uploadContent(() => Readable.from([Buffer.from('z')]), 1);
    const err = (await client.commitUpload(binder.id, top.id, { fileName: 'back\\slash.txt', versionLabel: '1', uploadId: up.uploadId, metadata: [] }).catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ code: 'SERVICE_BAD_REQUEST', status: 400, retryable: false });
    expect(err.message).toContain('fileName: Must be 1-255 characters');
    expect(err.message).not.toMatch(/Unknown field/);
    expect(emu.control.counters().commit).toBe(requests);
    expect(client.capabilities.commitSpelling).toBeNull();
  });

  it('a read-only client gets SERVICE_FORBIDDEN on upload', async () => {
    const { emu } = await setup();
    const ro = new ServiceClient({ baseUrl: emu.baseUrl, authUrl: emu.authUrl, tenantId: emu.credentials.tenantId, clientId: emu.credentials.readOnlyClientId, clientSecret: emu.credentials.readOnlyClientSecret });
    cleanups.push(() => ro.close());
    await expect(ro.getPresignedUpload()).rejects.toMatchObject({ code: 'SERVICE_FORBIDDEN', status: 403, retryable: false });
  });
});

describe('faults', () => {
  it('survives expired tokens mid-run with one refresh', async () => {
    const { emu, client, binder } = await setup();
    await client.listTopFolders(binder.id);
    emu.control.expireTokens();
    emu.control.resetCounters();
    await Promise.all([client.listTopFolders(binder.id), client.listTopFolders(binder.id), client.listBinders()]);
    expect(emu.control.counters().token).toBe(1);
  });

  it('refreshes a short-lived token before it expires (lifetime minus margin)', async () => {
    const { emu, client } = await setup({ tokenLifetimeSeconds: 1 });
    await client.listBinders();
    await new Promise((r) => setTimeout(r, 950));
    await client.listBinders();
    expect(emu.control.counters().token).toBe(2);
    expect(emu.control.lastRequests(10).filter((r) => r.status === 401)).toHaveLength(0);
  });

  it('rides out 429 storms with Retry-After and stays under a server rate limit', async () => {
    const { emu, client, binder } = await setup({}, { retry: { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 50 } });
    emu.control.injectFault({ route: 'folders', status: 429, retryAfterSeconds: 1, times: 4 });
    expect(await client.listTopFolders(binder.id)).toHaveLength(1);
    expect(emu.control.counters().folders).toBe(5);

    const { emu: emu2, client: limited, binder: b2 } = await setup({}, { requestsPerSecond: 10 });
    await limited.listBinders(); // token first, so the 15 calls below are all API calls
    emu2.control.setRateLimit({ requestsPerSecond: 10, burst: 10 });
    await Promise.all(Array.from({ length: 15 }, () => limited.listTopFolders(b2.id)));
    expect(emu2.control.lastRequests(100).filter((r) => r.status === 429)).toHaveLength(0);
  });

  it('retries dropped connections, truncated bodies and 503s', async () => {
    const { emu, client, c, binder, top } = await setup();
    c.addDocument(binder.id, top.id, 'a.txt', 'alpha');
    emu.control.injectFault({ route: 'folders', drop: true, times: 2 });
    emu.control.injectFault({ route: 'search', truncate: true, times: 2 });
    emu.control.injectFault({ route: 'folderdocuments', status: 503, times: 2 });
    expect(await client.listTopFolders(binder.id)).toHaveLength(1);
    expect((await client.searchDocuments({ filters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: binder.id }] })).totalCount).toBe(1);
    expect(await client.listFolderDocuments(binder.id, top.id)).toHaveLength(1);
    const n = emu.control.counters();
    expect([n.folders, n.search, n.folderdocuments]).toEqual([3, 3, 3]);
  });

  it('an invalid body is SERVICE_INVALID_RESPONSE, not retried', async () => {
    const { emu, client, c, binder, top } = await setup();
    const a = c.addDocument(binder.id, top.id, 'a.txt', 'alpha');
    for (const route of ['document', 'binders', 'search'] as const) emu.control.injectFault({ route, invalidBody: true, times: 1 });
    await expect(client.getDocument(a.document.id)).rejects.toMatchObject({ code: 'SERVICE_INVALID_RESPONSE', retryable: false });
    await expect(client.listBinders()).rejects.toMatchObject({ code: 'SERVICE_INVALID_RESPONSE' });
    await expect(client.searchDocuments({})).rejects.toMatchObject({ code: 'SERVICE_INVALID_RESPONSE' });
    expect(emu.control.counters().document).toBe(1);
  });

  it('fetches a new download link when the old one expired', async () => {
    const { emu, client, c, binder, top } = await setup({ downloadUrlLifetimeSeconds: 1 });
    const a = c.addDocument(binder.id, top.id, 'a.txt', 'alpha');
    // The first storage GET waits past the link's lifetime, so storage answers 403 (expired).
    emu.control.injectFault({ route: 'storage-get', latencyMs: 1100, times: 1 });
    const path = await sink();
    const got = await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('a')));
    expect(got.sha256).toBe(sha(Buffer.from('alpha')));
    expect(emu.control.counters().downloadlink).toBe(2);
    expect(emu.control.lastRequests(100).filter((r) => r.route === 'storage-get').map((r) => r.status)).toEqual([403, 200]);
  });

  it('a cut download fails retryable (TRANSFER_INTERRUPTED) and a fresh attempt succeeds', async () => {
    const { emu, client, c, binder, top } = await setup();
    const content = Buffer.alloc(300_000, 9);
    const a = c.addDocument(binder.id, top.id, 'big.bin', content);
    emu.control.injectFault({ route: 'storage-get', truncate: true, times: 1 });
    const path = await sink();
    const err = await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('1'))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ retryable: true });
    expect(['TRANSFER_INTERRUPTED', 'TRANSFER_INCOMPLETE']).toContain((err as ServiceError).code);
    const ok = await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('2')));
    expect(ok).toEqual({ bytes: content.length, sha256: sha(content) });
  });

  it('a burned upload slot takes a new slot and re-reads the stream', async () => {
    const { emu, client, c, binder, top } = await setup();
    emu.control.injectFault({ route: 'storage-put', drop: true, times: 1 });
    const body = Buffer.from('x'.repeat(100_000));
    const slots: string[] = [];
    let opens = 0;
    const up = await client.uploadContent(
      () => {
        opens++;
        return Readable.from([body]);
      },
      body.length,
      { onSlot: (id) => void slots.push(id) },
    );
    expect(slots).toHaveLength(2);
    expect(opens).toBe(2);
    expect(up.uploadId).toBe(slots[1]);
    const v = await client.commitUpload(binder.id, top.id, { fileName: 'x.txt', versionLabel: '1', uploadId: up.uploadId, metadata: [] });
    expect(c.readContent(v.documentId)).toEqual(body);
    expect(emu.control.counters().presignedupload).toBe(2);
  });

  it('a commit answered 503 is retried without creating a duplicate', async () => {
    const { emu, client, c, binder, top } = await setup();
    const up = await client.uploadContent(() => Readable.from([Buffer.from('z')]), 1);
    emu.control.injectFault({ route: 'commit', status: 503, times: 1 });
    const v = await client.commitUpload(binder.id, top.id, { fileName: 'z.txt', versionLabel: '1', uploadId: up.uploadId, metadata: [] });
    expect(c.listVersions(v.documentId)).toHaveLength(1);
    expect(emu.control.counters().commit).toBe(2);
  });
});

describe('streaming and secrecy', () => {
  it('streams a 20 MiB upload and download, checked by SHA-256', async () => {
    const { client, c, binder, top } = await setup();
    const size = 20 * 1024 * 1024;
    const open = generated(size, 42);
    const expected = createHash('sha256');
    for await (const chunk of open()) expected.update(chunk as Buffer);
    const hex = expected.digest('hex');

    let progressed = 0;
    const up = await client.uploadContent(open, size, { onBytes: (n) => (progressed += n) });
    expect(up).toMatchObject({ bytes: size, sha256: hex });
    expect(progressed).toBe(size);
    const v = await client.commitUpload(binder.id, top.id, { fileName: 'big.bin', versionLabel: '1', uploadId: up.uploadId, metadata: [] });
    expect(sha(c.readContent(v.documentId))).toBe(hex);

    const path = await sink();
    const got = await client.downloadVersionTo(v.documentId, v.id, createWriteStream(path('big')));
    expect(got).toEqual({ bytes: size, sha256: hex });
    expect((await stat(path('big'))).size).toBe(size);
    const onDisk = createHash('sha256');
    for await (const chunk of createReadStream(path('big'))) onDisk.update(chunk as Buffer);
    expect(onDisk.digest('hex')).toBe(hex);
  });

  it('never shows the secret, a token or a presigned signature in errors or logs', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(l) });
    const { emu, client, c, binder, top } = await setup({}, {}, logger);
    const a = c.addDocument(binder.id, top.id, 'a.txt', 'alpha');
    const path = await sink();
    await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('a')));
    const up = await client.uploadContent(() => Readable.from([Buffer.from('q')]), 1);
    await client.commitUpload(binder.id, top.id, { fileName: 'q.txt', versionLabel: '1', uploadId: up.uploadId, metadata: [] });
    emu.control.injectFault({ route: 'storage-get', status: 500 });
    const err = (await client.downloadVersionTo(a.document.id, a.version.id, createWriteStream(path('b'))).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ code: 'SERVICE_UNAVAILABLE', request: 'GET storage' });

    const bad = new ServiceClient({ baseUrl: emu.baseUrl, authUrl: emu.authUrl, tenantId: emu.credentials.tenantId, clientId: emu.credentials.clientId, clientSecret: 'wrong-secret-123' }, { logger });
    cleanups.push(() => bad.close());
    const authErr = (await bad.listBinders().catch((e: unknown) => e)) as ServiceError;
    expect(authErr).toMatchObject({ code: 'AUTH_FAILED', retryable: false });

    // The token the emulator issued to this client, fetched independently for the comparison.
    const tokenRes = await fetch(`${emu.authUrl}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: emu.credentials.clientId, client_secret: emu.credentials.clientSecret, scope: 'service_public' }),
    });
    const { access_token } = (await tokenRes.json()) as { access_token: string };
    const texts = [...lines, err.message, err.describe(), JSON.stringify(err.context), authErr.message, authErr.describe(), JSON.stringify(authErr.context)];
    const all = texts.join('\n');
    expect(lines.length).toBeGreaterThan(8);
    expect(all).not.toContain(emu.credentials.clientSecret);
    expect(all).not.toContain('wrong-secret-123');
    expect(all).not.toContain(access_token.slice(0, 20));
    expect(all).not.toMatch(/[?&](sig|exp|signature)=/i);
    expect(all).not.toMatch(/Bearer [A-Za-z0-9]/);
  });
});
