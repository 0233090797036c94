// The record of where synced files wait for a remote folder (sync/waiting-moves.ts), in a real state DB: the file
// found waiting is kept with its inode, birth time and content, by which a later pass finds it moved on, and the
// directory it waits in; a record an older build wrote (a path alone, or no directory) still reads.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import type { Issue, LocalFile, LocalObservation } from '../../src/sync/model.js';
import { loadWaitingMoves, rememberWaitingMoves } from '../../src/sync/waiting-moves.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function openStore(): StateStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waiting-moves-'));
  dirs.push(dir);
  return StateStore.open(path.join(dir, 'state.db'));
}

const file = (relPath: string, inode: number, bornMs?: number): LocalFile => ({
  relPath, key: relPath.toLowerCase(), size: 3, mtimeMs: 1, ctimeMs: 1, inode, sha256: `sha-${relPath}`, ...(bornMs ? { bornMs } : {}),
});

it('keeps each waiting file with the inode, birth time and content the scan saw, and reads a path-only record of an older build', () => {
  const store = openStore();
  try {
    const local: LocalObservation = {
      files: new Map([file('Docs/G/x.txt', 11, 5000), file('Docs/G/y.txt', 12)].map((f) => [f.key, f])),
      dirs: new Map([['docs', 'Docs'], ['docs/g', 'Docs/G']]),
      dirInodes: new Map([['docs', 7], ['docs/g', 8]]),
      problems: [],
    };
    const issues: Issue[] = [
      { relPath: 'Docs/G/x.txt', documentId: 'X', code: 'waiting-for-remote-folder', detail: '' },
      { relPath: 'Docs/G/y.txt', documentId: 'Y', code: 'waiting-for-remote-folder', detail: '' },
      { relPath: 'Docs/G/n.txt', code: 'waiting-for-remote-folder', detail: '' }, // a new file: no document, not kept
    ];
    rememberWaitingMoves(store, issues, local, true);
    expect([...loadWaitingMoves(store, true)]).toEqual([
      ['X', { key: 'docs/g/x.txt', inode: 11, bornMs: 5000, sha256: 'sha-Docs/G/x.txt', dirInode: 8 }],
      ['Y', { key: 'docs/g/y.txt', inode: 12, bornMs: null, sha256: 'sha-Docs/G/y.txt', dirInode: 8 }],
    ]);
    store.setMeta('waitingMoves', JSON.stringify({ X: 'Docs/G/x.txt' }));
    expect([...loadWaitingMoves(store, false)]).toEqual([['X', { key: 'Docs/G/x.txt', inode: 0, bornMs: null, sha256: null, dirInode: 0 }]]);
    // A record of the last build (no directory inode) reads too.
    store.setMeta('waitingMoves', JSON.stringify({ X: { path: 'Docs/G/x.txt', inode: 11, bornMs: null, sha256: 'h' } }));
    expect([...loadWaitingMoves(store, false)]).toEqual([['X', { key: 'Docs/G/x.txt', inode: 11, bornMs: null, sha256: 'h', dirInode: 0 }]]);
    rememberWaitingMoves(store, [], local, true);
    expect(loadWaitingMoves(store, true).size).toBe(0);
  } finally {
    store.close();
  }
});
