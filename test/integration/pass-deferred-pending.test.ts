// Steps a pass holds back for a later one (a folder deleted locally waits 10 s before its files are put back, a
// file still being written waits for its quiet period) are pending meanwhile: `status` said "0 downloads" and
// idle while a deleted folder's 30 files waited (black-box round 38a, F3). Real passes, the emulator on loopback.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { pendingOf } from '../../src/sync/pending.js';
import { openTestPair } from './pass-fixture.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});

it('a folder deleted locally: its files waiting to be put back, and a file being written, count as pending', async () => {
  const p = await openTestPair(emu, 'deferred-pending');
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
    const sub = c.createFolder(p.binderId, { name: 'sub', parentId: docs }).id;
    for (let i = 0; i < 5; i++) c.addDocument(p.binderId, sub, `f${i}.txt`, `file ${i}`);
    c.addDocument(p.binderId, docs, 'keep.txt', 'keeps the delete gate quiet');
    c.addDocument(p.binderId, docs, 'also.txt', 'and this one');
    expect((await runPass(p.rt, { minFileAgeMs: 1000 })).converged).toBe(true);
    fs.rmSync(path.join(p.local, 'Docs', 'sub'), { recursive: true });
    fs.writeFileSync(path.join(p.local, 'Docs', 'new.txt'), 'being written');
    const held = await runPass(p.rt, { minFileAgeMs: 1000 });
    expect(held.plan.groups).toEqual([]);
    expect(held.deferred.sort()).toEqual(['Docs/new.txt', 'Docs/sub', 'Docs/sub/f0.txt', 'Docs/sub/f1.txt', 'Docs/sub/f2.txt', 'Docs/sub/f3.txt', 'Docs/sub/f4.txt']);
    expect(held.converged).toBe(false);
    expect(pendingOf(held)).toEqual({ uploads: 1, downloads: 5 });
    // Once they may go, they go, and nothing is pending.
    const later = await runPass(p.rt, { minFileAgeMs: 1000, now: () => new Date(Date.now() + 11_000) });
    expect(later.execution?.done).toEqual({ 'mkdir-local': 1, download: 5, upload: 1 });
    expect(pendingOf(later)).toEqual({ uploads: 0, downloads: 0 });
  } finally {
    await p.close();
  }
});
