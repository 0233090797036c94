// The executor's upload path over real HTTP against the emulator, with a real state DB and temp dir: a file
// that changes while its PUT is in flight is never committed nor recorded as synced (neither when the change
// shows in its stat, nor when it hides from the stat and only the hash of the bytes sent can tell).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toFileStat } from '../../src/local/fs-ops.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { executePlan } from '../../src/sync/executor.js';
import type { LocalFile, Plan } from '../../src/sync/model.js';
import { executorFixture } from './executor-fixture.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
/** A whole-second mtime: utimes can put it back exactly (a fractional one would be rounded). */
const MTIME_S = 1_700_000_000;
const SIZE = 8 * 1024 * 1024;

function setup(): ReturnType<typeof executorFixture> {
  return executorFixture(cleanups, 'exec-upload-');
}

/** Writes Docs/big.bin and returns it as a scan would see it. */
function writeLocal(root: string, content: Buffer): LocalFile {
  const abs = path.join(root, 'Docs', 'big.bin');
  fs.writeFileSync(abs, content);
  fs.utimesSync(abs, MTIME_S, MTIME_S);
  return { relPath: 'Docs/big.bin', key: 'Docs/big.bin', ...toFileStat(fs.lstatSync(abs)), sha256: sha(content) };
}

function uploadPlan(local: LocalFile, folderId: string): Plan {
  return {
    groups: [[{ kind: 'upload', relPath: local.relPath, key: local.key, local, target: { documentId: null, folderId, fileName: 'big.bin' }, reason: 'new-local', replacesBase: null }]],
    issues: [],
    blocked: null,
  };
}

function content(seed: number): Buffer {
  const b = Buffer.alloc(SIZE);
  for (let i = 0; i < b.length; i += 4) b.writeUInt32LE((i * 2654435761 + seed) >>> 0, i);
  return b;
}

/** Runs `change` once, when the first bytes of the PUT have been read (the rest is still on disk to read). */
function onFirstBytes(d: ExecutorDeps, change: () => void): void {
  let done = false;
  d.onBytes = () => {
    if (done) return;
    done = true;
    change();
  };
}

describe('upload of a file that changes while its PUT is in flight', () => {
  it('records an unchanged upload with the hash of the bytes sent', async () => {
    const { emu, d, root, store, folderId, binderId } = await setup();
    const original = content(1);
    const local = writeLocal(root, original);
    const report = await executePlan(uploadPlan(local, folderId), d);
    expect(report.failures).toEqual([]);
    const base = store.getBaseByKey('Docs/big.bin');
    expect(base).toMatchObject({ sha256: sha(original), size: SIZE, mtimeMs: local.mtimeMs, inode: local.inode });
    expect(emu.control.listDocuments(binderId)).toHaveLength(1);
  });

  it('an edit with the same size and a restored mtime (seen by the ctime alone) is caught by the hash of the bytes sent', async () => {
    const { emu, d, root, store, folderId, binderId } = await setup();
    const local = writeLocal(root, content(1));
    const abs = path.join(root, 'Docs', 'big.bin');
    onFirstBytes(d, () => {
      // Rewrites the last MiB in place (not read yet), then puts size, mtime and inode back as they were.
      const fd = fs.openSync(abs, 'r+');
      fs.writeSync(fd, Buffer.alloc(1024 * 1024, 0x5a), 0, 1024 * 1024, SIZE - 1024 * 1024);
      fs.closeSync(fd);
      fs.utimesSync(abs, MTIME_S, MTIME_S);
    });
    const report = await executePlan(uploadPlan(local, folderId), d);
    const after = toFileStat(fs.lstatSync(abs));
    expect({ ...after, ctimeMs: 0 }).toEqual({ size: local.size, mtimeMs: local.mtimeMs, inode: local.inode, ctimeMs: 0 });
    expect(after.ctimeMs).not.toBe(local.ctimeMs);
    expect(report.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
    expect(store.getBaseByKey('Docs/big.bin')).toBeUndefined();
    expect(store.listOutbox()).toEqual([]);
    expect(emu.control.listDocuments(binderId)).toHaveLength(0);
  });

  it('an edit that shows in the stat is never recorded as synced, even when the bytes sent were the planned ones', async () => {
    const { emu, d, root, store, folderId, binderId } = await setup();
    const local = writeLocal(root, content(1));
    const abs = path.join(root, 'Docs', 'big.bin');
    // A new mtime only: every byte sent is still the planned content, so only the stat check can refuse it.
    onFirstBytes(d, () => fs.utimesSync(abs, MTIME_S + 5, MTIME_S + 5));
    const report = await executePlan(uploadPlan(local, folderId), d);
    expect(report.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
    expect(store.getBaseByKey('Docs/big.bin')).toBeUndefined();
    expect(store.listOutbox()).toEqual([]);
    expect(emu.control.listDocuments(binderId)).toHaveLength(0);
  });
});
