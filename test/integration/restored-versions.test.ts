// The record of documents a pass put back at their path (sync/restored-versions.ts) in a real state DB: kept across
// a reopen, each entry dropped once its row is gone or at another version or file (followed where its file moved), a
// damaged record read as none.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import type { BaseEntry } from '../../src/sync/model.js';
import { loadRestoredVersions, rememberRestoredVersions } from '../../src/sync/restored-versions.js';

let tmp: string;
let store: StateStore;

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'restored-versions-'));
  store = StateStore.open(path.join(tmp, 'state.db'));
});

afterEach(() => {
  store.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function row(n: number, over: Partial<BaseEntry> = {}): BaseEntry {
  return {
    documentId: `doc-${n}`,
    versionId: `ver-${n}`,
    versionLabel: null,
    folderId: 'f1',
    fileName: `file ${n}.txt`,
    relPath: `F/file ${n}.txt`,
    key: `f/file ${n}.txt`,
    sha256: n.toString(16).padStart(64, '0'),
    size: n,
    mtimeMs: 1_700_000_000_000 + n,
    inode: 1000 + n,
    ctimeMs: 1_700_000_000_000 + n,
    ...over,
  };
}

const restored = (...ns: number[]) => new Map(ns.map((n) => [`doc-${n}`, { versionId: `ver-${n}`, relPath: `F/file ${n}.txt` }]));

it('keeps what a pass restored across a reopen of the state DB', () => {
  for (const n of [1, 2]) store.putBase(row(n));
  rememberRestoredVersions(store, restored(1, 2));
  store.close();
  store = StateStore.open(path.join(tmp, 'state.db'));
  expect(loadRestoredVersions(store)).toEqual(new Map([['doc-1', 'ver-1'], ['doc-2', 'ver-2']]));
});

it('drops an entry once its row is at another version, another file, or gone, follows it where a remote rename moved the file; the record goes with the last one', () => {
  for (const n of [1, 2, 3, 4, 5]) store.putBase(row(n));
  rememberRestoredVersions(store, restored(1, 2, 3, 4, 5));
  store.putBase(row(1, { versionId: 'ver-1b' })); // a colleague's version came in
  store.putBase(row(2, { relPath: 'G/file 2.txt', key: 'g/file 2.txt', inode: 777 })); // the user's file taken by its place
  store.deleteBase('doc-3');
  store.putBase(row(5, { relPath: 'H/file 5.txt', key: 'h/file 5.txt' })); // the copy moved with its folder (round 43c, F1)
  rememberRestoredVersions(store, new Map());
  expect(loadRestoredVersions(store)).toEqual(new Map([['doc-4', 'ver-4'], ['doc-5', 'ver-5']]));
  expect((JSON.parse(store.getMeta('restoredVersions')!) as Record<string, { relPath: string }>)['doc-5']!.relPath).toBe('H/file 5.txt');
  store.deleteBase('doc-4');
  store.deleteBase('doc-5');
  rememberRestoredVersions(store, new Map());
  expect(store.getMeta('restoredVersions')).toBeUndefined();
});

it('a record of an earlier build (no inode) lasts while the path is the same', () => {
  store.putBase(row(1));
  store.putBase(row(2));
  store.setMeta('restoredVersions', JSON.stringify({ 'doc-1': { versionId: 'ver-1', relPath: 'F/file 1.txt' }, 'doc-2': { versionId: 'ver-2', relPath: 'F/file 2.txt' } }));
  store.putBase(row(2, { relPath: 'G/file 2.txt', key: 'g/file 2.txt' }));
  rememberRestoredVersions(store, new Map());
  expect(loadRestoredVersions(store)).toEqual(new Map([['doc-1', 'ver-1']]));
});

it('does not record a restore whose row is not at the version restored (the step was not recorded)', () => {
  store.putBase(row(1, { versionId: 'ver-0' }));
  rememberRestoredVersions(store, restored(1));
  expect(loadRestoredVersions(store).size).toBe(0);
});

it('reads a damaged record as none', () => {
  for (const bad of ['{', '[1]', '{"doc-1":"ver-1"}']) {
    store.setMeta('restoredVersions', bad);
    expect(loadRestoredVersions(store).size).toBe(0);
  }
});
