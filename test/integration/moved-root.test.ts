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
import { ensureSameRoot, ensureSyncedRootInPlace, STATE_ROOT } from '../../src/sync/moved-root.js';

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

  // Black-box round 31b, F1: the pair had synced through a symlink to its folder; the config went back to the real
  // path just as another folder took that path. The new path was "the same folder as the recorded one" (the link
  // now led to the stranger), so its identity was recorded too, and the stranger's files were synced.
  it('a path given up for another that leads to the same folder now does not record that folder as the synced one', async () => {
    const a = syncedFolder('a', true);
    const link = path.join(dir, 'a-link');
    fs.symlinkSync(a, link);
    await ensureSyncedRootInPlace({ name: 'a', localPath: a } as PairConfig, store, log, true); // a's identity
    store.setMeta(STATE_ROOT, link); // synced through the link since
    fs.renameSync(a, `${a}.orig`);
    fs.mkdirSync(path.join(a, 'Template'), { recursive: true });
    fs.writeFileSync(path.join(a, 'Template', 'private.txt'), 'another project');
    const pairA = { name: 'a', localPath: a, binderId: 'B' } as PairConfig;
    ensureSameRoot(pairA, store, path.dirname(store.file), log); // the link leads to the new `a` too: the path is taken
    expect(store.getMeta(STATE_ROOT)).toBe(a);
    await expect(ensureSyncedRootInPlace(pairA, store, log, true)).rejects.toMatchObject({ code: 'LOCAL_ROOT_REPLACED' });
    // The synced folder back at its path: accepted again.
    fs.rmSync(a, { recursive: true });
    fs.renameSync(`${a}.orig`, a);
    await expect(ensureSyncedRootInPlace(pairA, store, log, true)).resolves.toBeUndefined();
  });
});
