// settleOlderThanSynced: a document listed at a version its base row held before is taken as at the synced one.
import { describe, expect, it } from 'vitest';
import type { RawDoc } from '../../src/remote/listing.js';
import { settleOlderThanSynced } from '../../src/remote/older-than-synced.js';

const doc = (documentId: string, versionId: string, fileName = `${documentId}.txt`): RawDoc => ({ documentId, fileName, folderId: 'f1', versionId });

describe('settleOlderThanSynced', () => {
  it('puts back only versions the base held before; keeps the listed name; says which', () => {
    const docs = new Map([
      ['a', doc('a', 'a1', 'renamed.txt')], // older than synced a2: settled, its new name kept
      ['b', doc('b', 'b3')], // newer than synced: a change
      ['c', doc('c', 'c1')], // synced
      ['d', doc('d', 'd1')], // no base row (new)
    ]);
    const base = new Map([['a', { versionId: 'a2' }], ['b', { versionId: 'b2' }], ['c', { versionId: 'c1' }]]);
    const superseded = new Map([['a', new Set(['a1'])], ['b', new Set(['b1'])], ['c', new Set(['c0'])], ['d', new Set(['d1'])]]);
    expect(settleOlderThanSynced(docs, base, superseded)).toEqual(['a']);
    expect(docs.get('a')).toEqual(doc('a', 'a2', 'renamed.txt'));
    expect(docs.get('b')?.versionId).toBe('b3');
    expect(docs.get('c')?.versionId).toBe('c1');
    expect(docs.get('d')?.versionId).toBe('d1');
  });

  it('nothing recorded: nothing changes', () => {
    const docs = new Map([['a', doc('a', 'a1')]]);
    expect(settleOlderThanSynced(docs, new Map([['a', { versionId: 'a2' }]]), new Map())).toEqual([]);
    expect(docs.get('a')?.versionId).toBe('a1');
  });
});
