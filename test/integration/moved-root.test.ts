// The check before each pass that the folder at a pair's localPath is still the synced one (src/sync/moved-root.ts):
// a real state DB, real folders and the real per-root lock of this process.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PairConfig } from '../../src/config/schema.js';
import { holdRoot, releaseRoot } from '../../src/local/root-lock.js';
import { StateStore } from '../../src/state/store.js';
import { ensureSyncedRootInPlace } from '../../src/sync/moved-root.js';

let dir: string;
let store: StateStore;
const log = pino({ level: 'silent' });
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'moved-root-'));
  store = StateStore.open(path.join(dir, 'state', 'state.db'));
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A folder of template files, synced as `pairName`'s: base rows with the files' stat and hash. */
function syncedFolder(name: string, record: boolean, into: StateStore = store): string {
  const root = path.join(dir, name);
  fs.mkdirSync(path.join(root, 'Template'), { recursive: true });
  const sameSecond = new Date('2026-11-26T12:00:00.123Z');
  for (let i = 0; i < 4; i++) {
    const rel = `Template/t${i}.txt`;
    const abs = path.join(root, rel);
    fs.writeFileSync(abs, `template ${i}`); // the same content in both binders
    fs.utimesSync(abs, sameSecond, sameSecond); // downloaded by one daemon in the same second
    if (!record) continue;
    const st = fs.statSync(abs);
    into.putBase({
      documentId: `d${i}`, versionId: 'v1', versionLabel: null, folderId: 'f', fileName: `t${i}.txt`, relPath: rel, key: rel,
      sha256: createHash('sha256').update(`template ${i}`).digest('hex'), size: st.size, mtimeMs: st.mtimeMs, inode: st.ino, ctimeMs: st.ctimeMs,
    });
  }
  return root;
}

describe.skipIf(process.platform !== 'linux')('the folder at localPath before each pass', () => {
  it('another pair\'s root swapped in is refused, though its template files look like copies (black-box round 13, H2)', async () => {
    const a = syncedFolder('a', true);
    const b = syncedFolder('b', false);
    const pairA = { name: 'a', localPath: a } as PairConfig;
    await ensureSyncedRootInPlace(pairA, store, log, true); // records a's identity
    await holdRoot(a, { pair: 'a', stateDir: dir });
    await holdRoot(b, { pair: 'b', stateDir: dir });
    try {
      fs.renameSync(a, `${a}.tmp`);
      fs.renameSync(b, a);
      fs.renameSync(`${a}.tmp`, b);
      await expect(ensureSyncedRootInPlace(pairA, store, log, true)).rejects.toMatchObject({
        code: 'LOCAL_ROOT_REPLACED',
        message: `pair a: the folder at ${a} is not the synced one: another folder took its place, and it is the root of pair b of this process`,
      });
      // The same copy, held by no pair, is a restored copy: taken as the synced folder.
      releaseRoot(b, 'b');
      await expect(ensureSyncedRootInPlace(pairA, store, log, true)).resolves.toBeUndefined();
    } finally {
      releaseRoot(a, 'a');
      releaseRoot(b, 'b');
    }
  });

  it('another pair\'s synced folder swapped in is refused by its recorded identity, when no lock says so (a `sync` opens pairs one by one)', async () => {
    const storeB = StateStore.open(path.join(dir, 'state-b', 'state.db'));
    try {
      const a = syncedFolder('a', true);
      const b = syncedFolder('b', true, storeB);
      const pairA = { name: 'a', localPath: a } as PairConfig;
      await ensureSyncedRootInPlace(pairA, store, log, true);
      await ensureSyncedRootInPlace({ name: 'b', localPath: b } as PairConfig, storeB, log, true);
      fs.renameSync(a, `${a}.tmp`);
      fs.renameSync(b, a);
      fs.renameSync(`${a}.tmp`, b);
      await expect(ensureSyncedRootInPlace(pairA, store, log, true)).rejects.toMatchObject({
        code: 'LOCAL_ROOT_REPLACED',
        message: `pair a: the folder at ${a} is not the synced one: another folder took its place, and it is the root of pair state-b (as its state records)`,
      });
    } finally {
      storeB.close();
    }
  });
});
