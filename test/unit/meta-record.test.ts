// readMetaRecord / writeMetaRecord: a damaged record reads as none, a write happens only when the record changed,
// and an empty record removes the key. The store is a fake map here (the real one is a table of the state DB).
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { readMetaRecord, writeMetaRecord } from '../../src/state/meta-record.js';
import type { StateStore } from '../../src/state/store.js';

function fakeStore(initial: Record<string, string> = {}) {
  const meta = new Map(Object.entries(initial));
  const writes: string[] = [];
  const store = {
    getMeta: (k: string) => meta.get(k),
    setMeta: (k: string, v: string) => void (writes.push(`set ${k}`), meta.set(k, v)),
    deleteMeta: (k: string) => void (writes.push(`delete ${k}`), meta.delete(k)),
  } as unknown as StateStore;
  return { store, meta, writes };
}
const Schema = z.record(z.string(), z.number());

describe('meta records', () => {
  it('reads a missing, empty, unparseable or wrongly shaped record as {}', () => {
    for (const text of [undefined, '', '{nope', '{"a":"not a number"}']) {
      const { store } = fakeStore(text === undefined ? {} : { k: text });
      expect(readMetaRecord(store, 'k', Schema)).toEqual({});
    }
    expect(readMetaRecord(fakeStore({ k: '{"a":1}' }).store, 'k', Schema)).toEqual({ a: 1 });
  });

  it('writes only a change, and removes the key for an empty record', () => {
    const { store, meta, writes } = fakeStore({ k: '{"a":1}' });
    writeMetaRecord(store, 'k', { a: 1 });
    expect(writes).toEqual([]);
    writeMetaRecord(store, 'k', { a: 2 });
    expect(meta.get('k')).toBe('{"a":2}');
    writeMetaRecord(store, 'k', {});
    writeMetaRecord(store, 'k', {});
    expect(writes).toEqual(['set k', 'delete k']);
    expect(meta.has('k')).toBe(false);
  });
});
