// DocMerger: the documents of a listing merged against the previous one. Whatever the pages hold (changes,
// duplicates, documents gone), the result is exactly the last sighting of every listed document; an
// unchanged listing returns the previous map itself.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DocMerger, type ListedDoc, type PagePositions } from '../../src/remote/doc-merge.js';
import type { RawDoc } from '../../src/remote/listing.js';

const listed = (id: string, v = 'v1', name = `${id}.txt`, folder = 'F'): ListedDoc => ({ id, fileName: name, folderId: folder, latestVersionId: v });
const mergeAll = (previous: Map<string, RawDoc> | null, items: ListedDoc[]) => {
  const m = new DocMerger(previous);
  for (const d of items) m.add(d);
  return m.result();
};
const plain = (docs: Map<string, RawDoc>) => new Map([...docs].map(([k, d]) => [k, { ...d }]));

describe('DocMerger', () => {
  it('returns the previous map itself when every document is listed exactly as before (duplicates included)', () => {
    const first = mergeAll(null, [listed('a'), listed('b'), listed('c')]);
    expect(first.size).toBe(3);
    const again = mergeAll(first, [listed('c'), listed('a'), listed('b'), listed('a')]);
    expect(again).toBe(first);
  });

  it('builds a new map when anything differs, keeping unchanged records and interning folder ids', () => {
    const first = mergeAll(null, [listed('a'), listed('b'), listed('c')]);
    const next = mergeAll(first, [listed('a'), listed('b', 'v2'), listed('d', 'v1', 'd.txt', 'F')]);
    expect(next).not.toBe(first);
    expect([...next.keys()].sort()).toEqual(['a', 'b', 'd']); // c is gone
    expect(next.get('a')).toBe(first.get('a'));
    expect(next.get('b')?.versionId).toBe('v2');
    // A document seen unchanged and changed in the same walk (it changed between two pages): the change wins.
    const torn = mergeAll(first, [listed('a'), listed('b'), listed('c'), listed('a', 'v9')]);
    expect(torn.get('a')?.versionId).toBe('v9');
  });

  it('property: the result holds exactly the last differing (else unchanged) sighting of every listed id', () => {
    const doc = fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd', 'e'), v: fc.constantFrom('1', '2'), name: fc.constantFrom('x', 'y'), folder: fc.constantFrom('F', 'G') });
    fc.assert(
      fc.property(fc.array(doc, { maxLength: 12 }), fc.array(doc, { maxLength: 12 }), (before, after) => {
        const prev = mergeAll(null, before.map((d) => listed(d.id, d.v, d.name, d.folder)));
        const prevCopy = plain(prev);
        const items = after.map((d) => listed(d.id, d.v, d.name, d.folder));
        const got = mergeAll(prev, items);
        // Expected: for each id, the last sighting that differs from prev, else the prev record.
        const expected = new Map<string, RawDoc>();
        for (const d of items) {
          const p = prev.get(d.id);
          const same = p && p.fileName === d.fileName && p.folderId === d.folderId && p.versionId === d.latestVersionId;
          const cur = expected.get(d.id);
          const curIsChange = cur !== undefined && cur !== p;
          if (same) {
            if (!curIsChange) expected.set(d.id, p as RawDoc);
          } else expected.set(d.id, { documentId: d.id, fileName: d.fileName, folderId: d.folderId, versionId: d.latestVersionId });
        }
        expect(plain(got)).toEqual(plain(expected));
        expect(plain(prev)).toEqual(prevCopy); // the previous listing is never modified
      }),
      { numRuns: 500 },
    );
  });

  it('addPage: a page of records of the previous map marks them seen once their positions are known', () => {
    const first = mergeAll(null, [listed('a'), listed('b'), listed('c')]);
    const page: { recs: RawDoc[]; positions?: PagePositions } = { recs: [first.get('b')!, first.get('a')!] };
    const m1 = new DocMerger(first);
    m1.addPage(page);
    m1.add(listed('c'));
    expect(m1.result()).toBe(first);
    const cached = page.positions;
    expect(cached?.of).toBe(first);
    expect([...(cached?.at ?? [])]).toEqual([1, 0]);
    // The next quiet listing against the same map reuses the positions as they are.
    const m2 = new DocMerger(first);
    m2.addPage(page);
    m2.add(listed('c'));
    expect(m2.result()).toBe(first);
    expect(page.positions).toBe(cached);
    // Against another map they are looked up again; a record that is not that map's own is merged by value.
    const second = mergeAll(first, [listed('a', 'v2'), listed('b'), listed('c')]);
    const m3 = new DocMerger(second);
    m3.addPage(page); // page.recs[1] is first's 'a' (v1); second holds a v2 record for 'a'
    m3.add(listed('c'));
    expect(page.positions?.of).toBe(second);
    expect([...(page.positions?.at ?? [])]).toEqual([0, -1]); // second holds b, c, then the new a
    const got = m3.result();
    expect(got).not.toBe(second);
    expect(got.get('a')?.versionId).toBe('v1');
    expect(got.get('b')).toBe(second.get('b'));
  });

  it('property: addPage merges a page exactly as addRecord does record by record', () => {
    const doc = fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd', 'e'), v: fc.constantFrom('1', '2'), name: fc.constantFrom('x', 'y') });
    fc.assert(
      fc.property(fc.array(doc, { maxLength: 10 }), fc.array(doc, { maxLength: 10 }), fc.array(doc, { maxLength: 10 }), fc.boolean(), (a, b, c, twice) => {
        const older = mergeAll(null, a.map((d) => listed(d.id, d.v, d.name)));
        const prev = mergeAll(older, b.map((d) => listed(d.id, d.v, d.name)));
        // A page from an earlier listing: records of `older` and of `prev`, in any order.
        const recs = [...older.values(), ...prev.values()].filter((_, i) => i % 2 === 0 || twice);
        const rest = c.map((d) => listed(d.id, d.v, d.name));
        const byRecord = new DocMerger(prev);
        for (const r of recs) byRecord.addRecord(r);
        for (const d of rest) byRecord.add(d);
        const page: { recs: RawDoc[]; positions?: PagePositions } = { recs };
        for (let round = 0; round < (twice ? 2 : 1); round++) {
          const byPage = new DocMerger(prev);
          byPage.addPage(page);
          for (const d of rest) byPage.add(d);
          const got = byPage.result();
          const want = byRecord.result();
          expect(plain(got)).toEqual(plain(want));
          expect(got === prev).toBe(want === prev);
        }
      }),
      { numRuns: 500 },
    );
  });
});
