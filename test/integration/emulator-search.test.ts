// Emulator: POST /documents search: AND filters, valueId vs value, sort keys with tie-breaks, searchTerm,
// 1-based pagination, page size clamping and strict validation of the body and query.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';

type Search = (body: unknown, query?: string, contentType?: string) => Promise<{ status: number; body: any }>;

async function connect(emu: Emulator): Promise<Search> {
  const c = emu.credentials;
  const res = await fetch(`${emu.authUrl}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, scope: 'service_public' }),
  });
  const { access_token } = (await res.json()) as { access_token: string };
  return async (body, query = '', contentType = 'application/json') => {
    const r = await fetch(`${emu.baseUrl}/documents${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}`, 'x-service-tenantid': c.tenantId, 'content-type': contentType },
      body: body === undefined ? null : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: r.status, body: await r.json() };
  };
}

describe('emulator search', () => {
  let emu: Emulator;
  let search: Search;
  let b1: string;
  let b2: string;
  let tab1: string;
  let tab2: string;
  const names: Record<string, string> = {};

  beforeAll(async () => {
    emu = await startEmulator({ maxPageSize: 1000 });
    search = await connect(emu);
    b1 = emu.control.createBinder({ name: 'One' }).id;
    b2 = emu.control.createBinder({ name: 'Two' }).id;
    for (const b of [b1, b2]) {
      emu.control.addMetadataElement(b, { id: 'Dept', label: 'Dept', dataType: 'Enum', allowedValues: [{ id: 'eng', label: 'E' }, { id: 'ops', label: 'O' }] });
    }
    emu.control.addMetadataElement(b1, { id: 'Ref', label: 'Reference', dataType: 'Text' });
    tab1 = emu.control.createFolder(b1, { name: 'T1' }).id;
    tab2 = emu.control.createFolder(b1, { name: 'T2' }).id;
    const tabOther = emu.control.createFolder(b2, { name: 'T' }).id;
    const add = (b: string, f: string, name: string, dept: string, cat: string, ref?: string) => {
      const metadata = [
        { metadataElementId: 'Dept', valueId: dept },
        { metadataElementId: 'GLOBAL_Category', valueId: cat },
      ];
      if (ref) metadata.push({ metadataElementId: 'Ref', valueId: ref });
      names[emu.control.addDocument(b, f, name, name, { metadata }).document.id] = name;
    };
    add(b1, tab1, 'Alpha.txt', 'eng', 'report', 'R-1');
    add(b1, tab1, 'beta.TXT', 'ops', 'contract');
    add(b1, tab2, 'gamma.csv', 'eng', 'contract', 'R-2');
    add(b1, tab2, 'delta.txt', 'eng', 'report');
    add(b2, tabOther, 'epsilon.txt', 'eng', 'drawing');
  });
  afterAll(() => emu.close());

  const fileNames = (items: Array<{ id: string; fileName: string }>) => items.map((d) => d.fileName);

  it('returns the page shape and every tenant document without filters', async () => {
    const r = await search({});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ totalCount: 5, pageNumber: 1, pageSize: 50 });
    expect(r.body.items).toHaveLength(5);
    // Without SortBy the order is by document id: stable across pages.
    const ids = r.body.items.map((d: { id: string }) => d.id);
    expect(ids).toEqual([...ids].sort());
  });

  it('combines filters with AND', async () => {
    const byBinder = await search({ MetadataFilters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: b1 }] });
    expect(byBinder.body.totalCount).toBe(4);
    const engInTab2 = await search({
      MetadataFilters: [
        { metadataElementId: 'GLOBAL_BinderId', valueId: b1 },
        { metadataElementId: 'GLOBAL_TabId', valueId: tab2 },
        { metadataElementId: 'Dept', valueId: 'eng' },
      ],
      SortBy: [{ metadataElementId: 'GLOBAL_Category', direction: 'asc' }],
    });
    expect(fileNames(engInTab2.body.items)).toEqual(['gamma.csv', 'delta.txt']);
    const none = await search({ MetadataFilters: [{ metadataElementId: 'GLOBAL_TabId', valueId: tab1 }, { metadataElementId: 'Dept', valueId: 'nope' }] });
    expect(none.body).toMatchObject({ totalCount: 0, items: [] });
  });

  it('accepts value or valueId for free-form elements, only valueId for enumerated ones', async () => {
    const byValue = await search({ MetadataFilters: [{ metadataElementId: 'Ref', value: 'R-2' }] });
    expect(fileNames(byValue.body.items)).toEqual(['gamma.csv']);
    const byValueId = await search({ MetadataFilters: [{ metadataElementId: 'Ref', valueId: 'R-1' }] });
    expect(fileNames(byValueId.body.items)).toEqual(['Alpha.txt']);
    const enumByValue = await search({ MetadataFilters: [{ metadataElementId: 'Dept', value: 'eng' }] });
    expect(enumByValue.status).toBe(400);
    expect(enumByValue.body.errors).toHaveProperty(['MetadataFilters.0.value']);
    const both = await search({ MetadataFilters: [{ metadataElementId: 'Ref', value: 'R-2', valueId: 'R-2' }] });
    expect(both.status).toBe(400);
  });

  it('refuses unknown filter or sort elements with 400 and errors', async () => {
    const f = await search({ MetadataFilters: [{ metadataElementId: 'Colour', valueId: 'red' }] });
    expect(f.status).toBe(400);
    expect(f.body).toMatchObject({ status: 400, errors: { 'MetadataFilters.0.metadataElementId': [expect.stringContaining('Colour')] } });
    const s = await search({ SortBy: [{ metadataElementId: 'Colour', direction: 'asc' }] });
    expect(s.status).toBe(400);
  });

  it('sorts by an ordered SortBy list, ties broken by the next key, then by id', async () => {
    const r = await search({
      MetadataFilters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: b1 }],
      SortBy: [
        { metadataElementId: 'GLOBAL_Category', direction: 'desc' },
        { metadataElementId: 'Dept', direction: 'desc' },
      ],
    });
    // report: Alpha(eng), delta(eng) -> tie on both keys, by id; contract: beta(ops) before gamma(eng).
    const reports = Object.entries(names).filter(([, n]) => n === 'Alpha.txt' || n === 'delta.txt').map(([id]) => id).sort();
    expect(r.body.items.map((d: { id: string }) => d.id).slice(0, 2)).toEqual(reports);
    expect(fileNames(r.body.items).slice(2)).toEqual(['beta.TXT', 'gamma.csv']);
    const asc = await search({
      MetadataFilters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: b1 }],
      SortBy: [{ metadataElementId: 'Ref', direction: 'asc' }],
    });
    // Documents without the element sort first ascending.
    expect(fileNames(asc.body.items).slice(2)).toEqual(['Alpha.txt', 'gamma.csv']);
  });

  it('applies searchTerm as a case-insensitive substring of fileName', async () => {
    const r = await search({}, '?searchTerm=TXT');
    expect(fileNames(r.body.items).sort()).toEqual(['Alpha.txt', 'beta.TXT', 'delta.txt', 'epsilon.txt']);
    expect((await search({}, '?searchTerm=zzz')).body.totalCount).toBe(0);
  });

  it('pages 1-based; walking pages yields every document exactly once', async () => {
    const seen: string[] = [];
    for (let page = 1; ; page++) {
      const r = await search({ SortBy: [{ metadataElementId: 'Dept', direction: 'asc' }] }, `?pageSize=2&pageNumber=${page}`);
      expect(r.body).toMatchObject({ pageNumber: page, pageSize: 2, totalCount: 5 });
      seen.push(...r.body.items.map((d: { id: string }) => d.id));
      if (page * 2 >= r.body.totalCount) break;
    }
    expect(seen).toHaveLength(5);
    expect(new Set(seen).size).toBe(5);
    const beyond = await search({}, '?pageSize=2&pageNumber=9');
    expect(beyond.body).toMatchObject({ items: [], totalCount: 5, pageNumber: 9 });
  });

  it('refuses pageNumber/pageSize that are not whole numbers >= 1', async () => {
    for (const q of ['?pageNumber=0', '?pageNumber=-1', '?pageSize=0', '?pageSize=abc', '?pageNumber=1.5']) {
      const r = await search({}, q);
      expect(r.status, q).toBe(400);
      expect(Object.keys(r.body.errors).length, q).toBe(1);
    }
  });

  it('clamps pageSize to maxPageSize and answers the clamped size', async () => {
    const r = await search({}, '?pageSize=5000');
    expect(r.body.pageSize).toBe(1000);
    const small = await startEmulator({ maxPageSize: 2, defaultPageSize: 1 });
    try {
      const s = await connect(small);
      const b = small.control.createBinder({ name: 'S' }).id;
      const f = small.control.createFolder(b, { name: 'T' }).id;
      for (const n of ['a', 'b', 'c']) small.control.addDocument(b, f, n, n);
      expect((await s({})).body).toMatchObject({ pageSize: 1, totalCount: 3 });
      const clamped = await s({}, '?pageSize=3');
      expect(clamped.body.pageSize).toBe(2);
      expect(clamped.body.items).toHaveLength(2);
    } finally {
      await small.close();
    }
  });

  it('validates the body strictly: unknown keys, wrong directions, non-JSON', async () => {
    const camel = await search({ metadataFilters: [] });
    expect(camel.status).toBe(400);
    expect(camel.body.errors).toHaveProperty('metadataFilters');
    expect((await search({ SortBy: [{ metadataElementId: 'Dept', direction: 'ASC' }] })).status).toBe(400);
    expect((await search('{not json')).status).toBe(400);
    expect((await search(undefined)).status).toBe(400);
    expect((await search({}, '', 'text/plain')).status).toBe(415);
  });

  it('answers every page from the store as it is now (the sorted result is memoized per store generation)', async () => {
    const b = emu.control.createBinder({ name: 'Memo' }).id;
    const f = emu.control.createFolder(b, { name: 'T' }).id;
    const ids = ['m1', 'm2', 'm3'].map((n) => emu.control.addDocument(b, f, `${n}.txt`, n).document.id);
    const filter = { MetadataFilters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: b }] };
    const page = async () => (await search(filter, '?pageSize=10')).body as { totalCount: number; items: Array<{ id: string; fileName: string; latestVersionId: string }> };
    const first = await page();
    expect(first.totalCount).toBe(3);
    expect((await page()).items).toEqual(first.items); // unchanged store: the same answer
    emu.control.renameDocument(ids[0] as string, 'renamed.txt');
    expect((await page()).items.map((d) => d.fileName)).toContain('renamed.txt');
    const v = emu.control.addVersion(ids[1] as string, 'new content');
    expect((await page()).items.find((d) => d.id === ids[1])?.latestVersionId).toBe(v.id);
    emu.control.deleteDocument(ids[2] as string);
    expect((await page()).totalCount).toBe(2);
    emu.control.addDocument(b, f, 'm4.txt', 'm4');
    expect((await page()).totalCount).toBe(3);
    // Page bodies are kept serialized per page number and size: each one still answers its own slice.
    const slice = async (q: string) => ((await search(filter, q)).body as { items: Array<{ id: string }>; pageSize: number; pageNumber: number });
    const all = (await page()).items.map((d) => d.id);
    for (let round = 0; round < 2; round++) {
      expect((await slice('?pageSize=2&pageNumber=1')).items.map((d) => d.id)).toEqual(all.slice(0, 2));
      expect((await slice('?pageSize=2&pageNumber=2')).items.map((d) => d.id)).toEqual(all.slice(2, 4));
      expect(await slice('?pageSize=1&pageNumber=2')).toMatchObject({ pageSize: 1, pageNumber: 2, items: [{ id: all[1] }] });
    }
  });
});
