// The remote listing: complete or nothing. Paging with clamped page sizes, duplicates across pages, a binder
// that changes during the walk (falls back to the per-folder endpoint), and deletes confirmed by GET.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fetchRemote, listRemote, searchDigestsOf, searchPagesUnchanged, type ListingClient } from '../../src/remote/listing.js';
import type { BaseEntry } from '../../src/sync/model.js';

interface Doc { id: string; fileName: string; folderId: string; binderId?: string; latestVersionId: string }

function fakeClient(docs: Doc[], o: { maxPageSize?: number; silentClamp?: boolean; totalDrift?: number; dupes?: boolean; gone?: Set<string> } = {}) {
  const calls = { search: 0, folderDocs: 0, getDocument: 0, sameBody: 0 };
  const client: ListingClient = {
    async listTopFolders() {
      return [{ id: 'F1', name: 'Tab', parentId: null }];
    },
    async listSubFolders(_b: string, id: string) {
      return id === 'F1' ? [{ id: 'F2', name: 'Sub', parentId: 'F1' }] : [];
    },
    async listFolderDocuments(_b: string, folderId: string) {
      calls.folderDocs++;
      return docs.filter((d) => d.folderId === folderId);
    },
    async getDocument(id: string) {
      calls.getDocument++;
      return o.gone?.has(id) ? null : (docs.find((d) => d.id === id) ?? null);
    },
    // Like ServiceClient.searchPage: the body's digest, and no page when it equals `sameAs`.
    async searchPage(q: { pageSize?: number; pageNumber?: number }, sameAs: string | undefined) {
      calls.search++;
      const size = Math.min(q.pageSize ?? 50, o.maxPageSize ?? Infinity);
      const n = q.pageNumber ?? 1;
      let items = docs.slice((n - 1) * size, n * size);
      if (o.dupes && n > 1) items = [docs[0]!, ...items.slice(1)];
      const drift = o.totalDrift !== undefined && n > 1 ? o.totalDrift : 0;
      const page = { items, totalCount: docs.length + drift, pageNumber: n, pageSize: o.silentClamp ? (q.pageSize ?? 50) : size };
      const digest = createHash('sha256').update(JSON.stringify(page)).digest('base64');
      if (digest === sameAs) calls.sameBody++;
      return { digest, page: digest === sameAs ? null : structuredClone(page) };
    },
  } as unknown as ListingClient;
  return { client, calls };
}

const docs = (n: number): Doc[] =>
  Array.from({ length: n }, (_, i) => ({ id: `d${String(i).padStart(3, '0')}`, fileName: `f${i}.txt`, folderId: i % 2 ? 'F1' : 'F2', binderId: 'B', latestVersionId: `v${i}` }));

const opts = (base: Map<string, BaseEntry> = new Map()) => ({ binderId: 'B', pageSize: 10, caseInsensitive: false, base });

describe('listRemote', () => {
  it('walks every page and maps every document into its folder path', async () => {
    const { client, calls } = fakeClient(docs(35));
    const r = await listRemote(client, opts());
    expect(r.method).toBe('search');
    expect(calls.search).toBe(4);
    expect(r.observation.docs.size).toBe(35);
    expect(r.observation.docs.get('d000')?.relPath).toBe('Tab/Sub/f0.txt');
    expect(r.observation.docs.get('d001')?.relPath).toBe('Tab/f1.txt');
  });

  it('follows a page size the server clamped, whether it says so or not', async () => {
    for (const silentClamp of [false, true]) {
      const { client } = fakeClient(docs(23), { maxPageSize: 4, silentClamp });
      const r = await listRemote(client, opts());
      expect(r.method).toBe('search');
      expect(r.observation.docs.size).toBe(23);
    }
  });

  it('falls back to the per-folder listing when the binder changes during the walk', async () => {
    const { client, calls } = fakeClient(docs(25), { totalDrift: 1 });
    const r = await listRemote(client, opts());
    expect(r.method).toBe('per-folder');
    expect(calls.folderDocs).toBe(2);
    expect(r.observation.docs.size).toBe(25);
  });

  it('falls back when pages overlap and skip documents (unstable order)', async () => {
    const { client } = fakeClient(docs(25), { dupes: true });
    const r = await listRemote(client, opts());
    expect(r.method).toBe('per-folder');
    expect(r.observation.docs.size).toBe(25);
  });

  it('says when search was inconsistent, and skips it when asked (round 42c, O1)', async () => {
    const unstable = fakeClient(docs(25), { dupes: true });
    const raw = await fetchRemote(unstable.client, opts());
    expect(raw.searchInconsistent).toBe(true);
    expect(unstable.calls.search).toBeGreaterThan(0);
    // The binder changing during the walk says so too; an empty first listing asked per folder does not.
    expect((await fetchRemote(fakeClient(docs(25), { totalDrift: 1 }).client, opts())).searchInconsistent).toBe(true);
    const empty = await fetchRemote(fakeClient([]).client, opts());
    expect([empty.method, empty.searchInconsistent]).toEqual(['per-folder', false]);
    expect((await fetchRemote(fakeClient(docs(25)).client, opts())).searchInconsistent).toBe(false);

    const skipped = fakeClient(docs(25), { dupes: true });
    const again = await fetchRemote(skipped.client, { ...opts(), previous: raw, reuseFolders: true, skipSearch: true });
    expect(skipped.calls.search).toBe(0);
    expect(skipped.calls.folderDocs).toBe(2);
    expect([again.method, again.searchInconsistent, again.walkedTree, again.unchanged]).toEqual(['per-folder', false, true, true]);
    expect(again.docs.size).toBe(25);
  });

  it('a synced document missing from the listing is gone only when GET confirms it', async () => {
    const all = docs(5);
    const base = new Map<string, BaseEntry>();
    for (const id of ['d001', 'x-gone', 'x-lagging']) {
      base.set(id, { documentId: id, versionId: 'v', versionLabel: null, folderId: 'F1', fileName: `${id}.txt`, relPath: `Tab/${id}.txt`, key: `Tab/${id}.txt`, size: 1, mtimeMs: 1, inode: 1, ctimeMs: 1, sha256: 'h' });
    }
    const lagging: Doc = { id: 'x-lagging', fileName: 'lag.txt', folderId: 'F1', binderId: 'B', latestVersionId: 'v9' };
    const { client, calls } = fakeClient(all, { gone: new Set(['x-gone']) });
    const c2 = { ...client, getDocument: async (id: string) => (id === 'x-lagging' ? lagging : client.getDocument(id)) } as ListingClient;
    const r = await listRemote(c2, opts(base));
    expect([...r.observation.gone]).toEqual(['x-gone']);
    expect(r.observation.docs.get('x-lagging')?.versionId).toBe('v9');
    expect(calls.search).toBe(1);
  });

  it('a new document in a folder the tree lacks is named by where its folder was last seen (round 28b, F9)', async () => {
    // F3 held a synced document at Tab/Gone/old.txt; the walked tree no longer has F3 (a listing that missed it).
    const all: Doc[] = [
      { id: 'd-old', fileName: 'old.txt', folderId: 'F3', binderId: 'B', latestVersionId: 'v1' },
      { id: 'd-new', fileName: 'new.txt', folderId: 'F3', binderId: 'B', latestVersionId: 'v2' },
      { id: 'd-lost', fileName: 'lost.txt', folderId: 'F4', binderId: 'B', latestVersionId: 'v3' },
    ];
    const base = new Map<string, BaseEntry>([
      ['d-old', { documentId: 'd-old', versionId: 'v1', versionLabel: null, folderId: 'F3', fileName: 'old.txt', relPath: 'Tab/Gone/old.txt', key: 'Tab/Gone/old.txt', size: 1, mtimeMs: 1, inode: 1, ctimeMs: 1, sha256: 'h' }],
    ]);
    const { client } = fakeClient(all);
    const r = await listRemote(client, opts(base));
    const byId = new Map(r.observation.unmappable.map((u) => [u.documentId, u]));
    expect(byId.get('d-new')).toEqual({ documentId: 'd-new', name: 'new.txt', path: 'Tab/Gone/new.txt', reason: 'its folder "Tab/Gone" (id F3) is not in the listing', inconsistent: true });
    expect(byId.get('d-old')?.path).toBe('Tab/Gone/old.txt');
    // A folder no synced document was ever in is known by its id only.
    expect(byId.get('d-lost')).toEqual({ documentId: 'd-lost', name: 'lost.txt', reason: 'folder F4 is not in the listing', inconsistent: true });
  });

  it('a listing error is thrown, never turned into an empty listing', async () => {
    const { client } = fakeClient(docs(5));
    const failing = { ...client, searchPage: async () => { throw new Error('HTTP 503'); } } as unknown as ListingClient;
    await expect(listRemote(failing, opts())).rejects.toThrow('503');
  });

  describe('fetchRemote against the previous listing', () => {
    const raw = (client: ListingClient, previous: Awaited<ReturnType<typeof fetchRemote>> | null, reuseFolders = false) =>
      fetchRemote(client, { binderId: 'B', pageSize: 10, previous, reuseFolders });

    it('says unchanged only when every document and folder is exactly as before, and reuses unchanged records', async () => {
      const list = docs(25);
      const { client } = fakeClient(list);
      const first = await raw(client, null);
      expect(first.unchanged).toBe(false); // nothing to compare with
      const second = await raw(client, first);
      expect(second.unchanged).toBe(true);
      expect(second.docs.get('d007')).toBe(first.docs.get('d007')); // the same object: the fresh copy dies young
      // Each kind of change, one at a time, is seen.
      const changes: Array<(d: Doc[]) => void> = [
        (d) => (d[3]!.latestVersionId = 'v-new'),
        (d) => (d[4]!.fileName = 'renamed.txt'),
        (d) => (d[5]!.folderId = d[5]!.folderId === 'F1' ? 'F2' : 'F1'),
        (d) => d.pop(),
        (d) => d.push({ id: 'd999', fileName: 'new.txt', folderId: 'F1', binderId: 'B', latestVersionId: 'v999' }),
        (d) => (d[6]!.id = 'd-other'), // same count, one id swapped for another
      ];
      for (const change of changes) {
        const changed = docs(25);
        change(changed);
        const next = await raw(fakeClient(changed).client, second);
        expect(next.unchanged).toBe(false);
        expect(next.docsUnchanged).toBe(false);
        expect(next.docs.size).toBe(changed.length);
        for (const d of changed) expect(next.docs.get(d.id)).toMatchObject({ fileName: d.fileName, folderId: d.folderId, versionId: d.latestVersionId });
      }
    });

    it('merges a search page that comes back byte for byte the same from its memo, without parsing it', async () => {
      const list = docs(25); // pages of 10: 3 pages
      const { client, calls } = fakeClient(list);
      const first = await raw(client, null);
      expect(first.pages).toHaveLength(3);
      expect(calls.sameBody).toBe(0);
      const second = await raw(client, first);
      expect(calls.sameBody).toBe(3);
      expect(second.unchanged).toBe(true);
      expect(second.docs).toBe(first.docs);
      // One version changes on page 2: that page is parsed, pages 1 and 3 are taken from the memo.
      list[14]!.latestVersionId = 'v-new';
      const third = await raw(client, second);
      expect(calls.sameBody).toBe(5);
      expect(third.unchanged).toBe(false);
      expect(third.docs.get('d014')?.versionId).toBe('v-new');
      expect(third.docs.get('d003')).toBe(first.docs.get('d003'));
      expect([...third.docs.keys()].sort()).toEqual(list.map((d) => d.id).sort());
      // Quiet again: all three pages from the memo, including the one that carries the new record.
      const fourth = await raw(client, third);
      expect(calls.sameBody).toBe(8);
      expect(fourth.unchanged).toBe(true);
      expect(fourth.docs).toBe(third.docs);
      // A delete on page 1 shifts every later item: all pages differ, and the result is still exact.
      list.splice(2, 1);
      const fifth = await raw(client, fourth);
      expect(calls.sameBody).toBe(8);
      expect([...fifth.docs.keys()].sort()).toEqual(list.map((d) => d.id).sort());
    });

    it('gives the same documents with page memos as a fresh listing, over any history of changes', async () => {
      type Op = { kind: 'version' | 'rename' | 'move' | 'delete' | 'add'; at: number };
      const op = fc.record({ kind: fc.constantFrom<Op['kind']>('version', 'rename', 'move', 'delete', 'add'), at: fc.nat(1000) });
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 35 }), fc.array(fc.array(op, { maxLength: 4 }), { minLength: 1, maxLength: 8 }), fc.boolean(), async (n, rounds, dupes) => {
          const list = docs(n);
          let next = 1000;
          let previous: Awaited<ReturnType<typeof fetchRemote>> | null = null;
          for (const round of rounds) {
            for (const o of round) {
              const i = list.length === 0 ? -1 : o.at % list.length;
              if (o.kind === 'add' || i < 0) list.splice(Math.max(0, i), 0, { id: `n${next}`, fileName: `n${next}.txt`, folderId: 'F1', binderId: 'B', latestVersionId: `v${next++}` });
              else if (o.kind === 'delete') list.splice(i, 1);
              else if (o.kind === 'version') list[i]!.latestVersionId = `v${next++}`;
              else if (o.kind === 'rename') list[i]!.fileName = `r${next++}.txt`;
              else list[i]!.folderId = list[i]!.folderId === 'F1' ? 'F2' : 'F1';
            }
            const client = fakeClient(list, { dupes }).client;
            const memo = await raw(client, previous);
            const fresh = await raw(client, null);
            const content = (m: typeof memo.docs) => [...m.values()].map((d) => `${d.documentId}|${d.fileName}|${d.folderId}|${d.versionId}`).sort();
            expect(content(memo.docs)).toEqual(content(fresh.docs));
            if (previous) expect(memo.docsUnchanged).toBe(JSON.stringify(content(previous.docs)) === JSON.stringify(content(fresh.docs)));
            previous = memo;
          }
        }),
        { numRuns: 150 },
      );
    });

    it('reuses the folder tree only when asked and the documents are unchanged; a folder rename is seen on a walk', async () => {
      const list = docs(12);
      const { client } = fakeClient(list);
      let subfolderCalls = 0;
      const counting = { ...client, listSubFolders: async (b: string, id: string) => (subfolderCalls++, client.listSubFolders(b, id)) } as ListingClient;
      const first = await raw(counting, null, true);
      expect(first.walkedTree).toBe(true);
      const calls = subfolderCalls;
      const reused = await raw(counting, first, true);
      expect(reused.walkedTree).toBe(false);
      expect(subfolderCalls).toBe(calls);
      expect(reused.unchanged).toBe(true);
      // Not asked to reuse: walks; a renamed folder makes the listing changed although no document changed.
      const renamed = { ...counting, listTopFolders: async () => [{ id: 'F1', name: 'Renamed' }] } as ListingClient;
      const walked = await raw(renamed, reused, false);
      expect(walked.walkedTree).toBe(true);
      expect(walked.docsUnchanged).toBe(true);
      expect(walked.unchanged).toBe(false);
      // A document change walks the tree even when reuse is allowed.
      list[0]!.latestVersionId = 'v-changed';
      const afterDocChange = await raw(counting, walked, true);
      expect(afterDocChange.walkedTree).toBe(true);
    });

    it('a walk that will happen anyway runs beside the search; one that may be spared waits for it', async () => {
      const { client } = fakeClient(docs(25));
      const events: string[] = [];
      const traced = {
        ...client,
        // Every search page waits a little, so that a walk started beside it answers first.
        searchPage: async (...a: Parameters<ListingClient['searchPage']>) => {
          events.push('search');
          await new Promise((r) => setTimeout(r, 5));
          return client.searchPage(...a);
        },
        listTopFolders: async (b: string) => (events.push('folders'), client.listTopFolders(b)),
      } as ListingClient;
      const first = await raw(traced, null, true); // no previous tree: the walk is certain
      expect(events.indexOf('folders')).toBeLessThan(events.lastIndexOf('search'));
      expect(first.walkedTree).toBe(true);
      events.length = 0;
      await raw(traced, first, true); // the tree may stand in: it is not walked at all
      expect(events).not.toContain('folders');
      events.length = 0;
      await raw(traced, first, false); // no reuse asked (`sync`): beside the search again
      expect(events.indexOf('folders')).toBeLessThan(events.lastIndexOf('search'));
    });

    it('a failed search stops the walk beside it, and a failed walk fails the listing', async () => {
      const { client } = fakeClient(docs(5));
      let subfolderCalls = 0;
      let searchFails = true;
      const flaky = {
        ...client,
        searchPage: async (...a: Parameters<ListingClient['searchPage']>) => {
          await new Promise((r) => setTimeout(r, 5));
          if (searchFails) throw new Error('HTTP 503 on search');
          return client.searchPage(...a);
        },
        // A deep tree: each folder has one child, 50 levels down.
        listTopFolders: async () => [{ id: 'L0', name: 'L0' }],
        listSubFolders: async (_b: string, id: string) => {
          subfolderCalls++;
          await new Promise((r) => setTimeout(r, 1));
          const n = Number(id.slice(1));
          return n < 50 ? [{ id: `L${n + 1}`, name: `L${n + 1}`, parentId: id }] : [];
        },
      } as ListingClient;
      await expect(raw(flaky, null)).rejects.toThrow('503 on search');
      const atFailure = subfolderCalls;
      await new Promise((r) => setTimeout(r, 100));
      expect(subfolderCalls).toBeLessThan(50);
      expect(subfolderCalls - atFailure).toBeLessThanOrEqual(1); // at most the level in flight
      searchFails = false;
      const walkFails = { ...flaky, listSubFolders: async () => { throw new Error('HTTP 500 on folders'); } } as ListingClient;
      await expect(raw(walkFails, null)).rejects.toThrow('500 on folders');
    });
  });
});

describe('searchPagesUnchanged (the in-sync mark\'s remote check)', () => {
  const saved = async (list: Doc[], o: Parameters<typeof fakeClient>[1] = {}) => {
    const raw = await fetchRemote(fakeClient(list, o).client, opts());
    return searchDigestsOf(raw, 10)!;
  };

  it('every page the same: true, one request per page, nothing parsed', async () => {
    const list = docs(95);
    const digests = await saved(list);
    expect(digests.digests).toHaveLength(10);
    const { client, calls } = fakeClient(list);
    const counter = { requests: 0 };
    expect(await searchPagesUnchanged(client, { binderId: 'B', pageSize: 10 }, digests, counter)).toBe(true);
    expect(calls).toMatchObject({ search: 10, sameBody: 10 });
    expect(counter.requests).toBe(10);
  });

  it('asks with the step the server answered with when it clamped the page size', async () => {
    const list = docs(40);
    const digests = await saved(list, { maxPageSize: 4, silentClamp: true });
    expect(digests.step).toBe(4);
    const { client, calls } = fakeClient(list, { maxPageSize: 4, silentClamp: true });
    expect(await searchPagesUnchanged(client, { binderId: 'B', pageSize: 10 }, digests, { requests: 0 })).toBe(true);
    expect(calls.sameBody).toBe(10);
  });

  it('a page that differs, the first or a later one, stops asking for more', async () => {
    const list = docs(200);
    const digests = await saved(list);
    const changedFirst = list.map((d, i) => (i === 0 ? { ...d, latestVersionId: 'v-new' } : d));
    const first = fakeClient(changedFirst);
    expect(await searchPagesUnchanged(first.client, { binderId: 'B', pageSize: 10 }, digests, { requests: 0 })).toBe(false);
    // The pages go out 16 at a time from the start (page 1 is not asked for alone first): no page is asked for
    // after page 1 answered differently.
    expect(first.calls.search).toBeLessThanOrEqual(16);
    const changedThird = list.map((d, i) => (i === 25 ? { ...d, fileName: 'renamed.txt' } : d));
    const third = fakeClient(changedThird);
    expect(await searchPagesUnchanged(third.client, { binderId: 'B', pageSize: 10 }, digests, { requests: 0 })).toBe(false);
    // None is started after page 3 answered differently.
    expect(third.calls.search).toBeLessThan(20);
    // A binder that grew: page 1 says another totalCount.
    const grown = fakeClient([...list, ...docs(201).slice(200)]);
    expect(await searchPagesUnchanged(grown.client, { binderId: 'B', pageSize: 10 }, digests, { requests: 0 })).toBe(false);
  });

  it('a listing made per folder has no digests', async () => {
    const raw = await fetchRemote(fakeClient(docs(30), { totalDrift: 1 }).client, opts());
    expect(raw.method).toBe('per-folder');
    expect(searchDigestsOf(raw, 10)).toBeNull();
  });
});
