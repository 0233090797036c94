// DocMerger: the documents of a listing merged against the previous one. Whatever the pages hold (changes,
// duplicates, documents gone), the result is exactly the last sighting of every listed document; an
// unchanged listing returns the previous map itself.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DocMerger, type ListedDoc } from '../../src/remote/doc-merge.js';
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
});
