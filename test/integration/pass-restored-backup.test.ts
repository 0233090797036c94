// A sync root restored from a backup with its times (tar -xp, rsync -a, cp -p) while the state DB is current
// (black-box round 33b, F1): a file put back with an earlier version's content and a time older than the synced
// file's is no edit. It was uploaded as the newest version, silently over colleagues' newer ones; it now takes the
// latest (its content in the trash), and an upload-only pair uploads nothing. A revert with a new time is an edit.
// Real passes, real state DB, the emulator on loopback.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { describeDone } from '../../src/sync/executor.js';
import { runPass } from '../../src/sync/pass.js';
import { pendingOf } from '../../src/sync/pending.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});

const DAY_MS = 86_400_000;

/** Puts `content` back at Docs/a.txt as a restore from yesterday's backup would: a new file, yesterday's time. */
function restoreFromBackup(p: TestPair, content: string): void {
  const abs = path.join(p.local, 'Docs', 'a.txt');
  const synced = fs.statSync(abs);
  fs.rmSync(abs);
  fs.writeFileSync(abs, content);
  const yesterday = new Date(synced.mtimeMs - DAY_MS);
  fs.utimesSync(abs, yesterday, yesterday);
}

const texts = (documentId: string) => emu.control.listVersions(documentId).map((v) => emu.control.readContent(documentId, v.id).toString());

describe('a file restored from a backup with its old time', () => {
  it('holding an earlier version: takes the latest, its content kept in the trash; nothing is uploaded', async () => {
    const p = await openTestPair(emu, 'restored-both');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'yesterday');
      await runPass(p.rt);
      c.addVersion(document.id, "a colleague's today");
      await runPass(p.rt);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe("a colleague's today");

      restoreFromBackup(p, 'yesterday');
      const r = await runPass(p.rt);
      expect(r.execution?.failures).toEqual([]);
      expect(texts(document.id)).toEqual(['yesterday', "a colleague's today"]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe("a colleague's today");
      const said = r.execution?.conflicts ?? [];
      expect(said).toHaveLength(1);
      expect(said[0]?.outcome).toMatch(/earlier version of the document with an older time \(restored from a backup\?\): replaced by the latest/);
      expect(fs.readFileSync(said[0]!.conflictPath!, 'utf8')).toBe('yesterday');
      // Listed by `status` (the conflict history), as a conflict is.
      expect(p.rt.store.listConflicts().map((x) => [x.relPath, x.policy, x.conflictPath])).toEqual([['Docs/a.txt', 'earlier-version', said[0]!.conflictPath]]);
      expect((await runPass(p.rt)).converged).toBe(true);

      // The same content with a new time is a revert meant as such: uploaded as the next version.
      fs.writeFileSync(path.join(p.local, 'Docs', 'a.txt'), 'yesterday');
      await runPass(p.rt);
      expect(texts(document.id)).toEqual(['yesterday', "a colleague's today", 'yesterday']);
    } finally {
      await p.close();
    }
  });

  it('holding a version five versions back: takes the latest too; the pass says it, and counts no upload pending (round 34a, F1/F4)', async () => {
    const p = await openTestPair(emu, 'restored-far');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
      for (const v of ['v2', 'v3', 'v4', 'v5', 'v6']) c.addVersion(document.id, v);
      await runPass(p.rt);
      restoreFromBackup(p, 'v1');
      const r = await runPass(p.rt);
      expect(r.execution?.failures).toEqual([]);
      expect(texts(document.id)).toEqual(['v1', 'v2', 'v3', 'v4', 'v5', 'v6']);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('v6');
      expect(r.execution?.restoredStale).toBe(1);
      expect(r.execution?.done.upload ?? 0).toBe(0);
      expect(pendingOf(r)).toEqual({ uploads: 0, downloads: 0 });
      expect(describeDone(r.execution!)).toBe('1 earlier version put back with an old time, not uploaded');
    } finally {
      await p.close();
    }
  });

  it('holding content the document never had: an edit, uploaded (an old time alone says nothing)', async () => {
    const p = await openTestPair(emu, 'restored-edit');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'first');
      await runPass(p.rt);
      restoreFromBackup(p, 'never on the service');
      await runPass(p.rt);
      expect(texts(document.id)).toEqual(['first', 'never on the service']);
    } finally {
      await p.close();
    }
  });

  it('with a colleague\'s newer version too: takes the latest, no conflict copy of bytes the service has', async () => {
    const p = await openTestPair(emu, 'restored-conflict');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'monday');
      await runPass(p.rt);
      c.addVersion(document.id, 'tuesday');
      await runPass(p.rt);
      restoreFromBackup(p, 'monday');
      c.addVersion(document.id, 'wednesday');
      const r = await runPass(p.rt);
      expect(r.execution?.failures).toEqual([]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('wednesday');
      expect(fs.readdirSync(path.join(p.local, 'Docs'))).toEqual(['a.txt']);
      expect(c.listDocuments(p.binderId)).toHaveLength(1);
      expect(texts(document.id)).toEqual(['monday', 'tuesday', 'wednesday']);
    } finally {
      await p.close();
    }
  });

  it('five versions back, with a colleague\'s newer version too: takes the latest, no conflict copy (the same reach as without one)', async () => {
    const p = await openTestPair(emu, 'restored-far-conflict');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
      for (const v of ['v2', 'v3', 'v4', 'v5', 'v6']) c.addVersion(document.id, v);
      await runPass(p.rt);
      restoreFromBackup(p, 'v1');
      c.addVersion(document.id, 'v7');
      const r = await runPass(p.rt);
      expect(r.execution?.failures).toEqual([]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('v7');
      expect(fs.readdirSync(path.join(p.local, 'Docs'))).toEqual(['a.txt']);
      expect(c.listDocuments(p.binderId)).toHaveLength(1);
    } finally {
      await p.close();
    }
  });

  it('in an upload-only pair: kept as it is, and not uploaded over the newer versions', async () => {
    const p = await openTestPair(emu, 'restored-upload', 'direction: upload');
    try {
      const c = emu.control;
      c.createFolder(p.binderId, { name: 'Docs' });
      fs.mkdirSync(path.join(p.local, 'Docs'), { recursive: true });
      fs.writeFileSync(path.join(p.local, 'Docs', 'a.txt'), 'first');
      await runPass(p.rt);
      const [doc] = c.listDocuments(p.binderId);
      fs.writeFileSync(path.join(p.local, 'Docs', 'a.txt'), 'second');
      await runPass(p.rt);
      expect(texts(doc!.id)).toEqual(['first', 'second']);
      restoreFromBackup(p, 'first');
      const r = await runPass(p.rt);
      expect(r.execution?.failures).toEqual([]);
      expect(texts(doc!.id)).toEqual(['first', 'second']);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('first');
      expect(r.execution?.conflicts[0]?.outcome).toMatch(/not uploaded over the newer ones; change its content to upload it/);
      expect(p.rt.store.listConflicts().map((x) => [x.relPath, x.policy])).toEqual([['Docs/a.txt', 'earlier-version']]);
    } finally {
      await p.close();
    }
  });

  it('in a download-only pair: takes the latest at once, in sync, nothing pending (round 34a, F6)', async () => {
    const p = await openTestPair(emu, 'restored-download', 'direction: download');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
      await runPass(p.rt);
      for (const v of ['v2', 'v3', 'v4']) c.addVersion(document.id, v);
      await runPass(p.rt);
      restoreFromBackup(p, 'v1');
      const r = await runPass(p.rt);
      expect(r.execution?.failures).toEqual([]);
      expect(r.issues).toEqual([]);
      expect(r.converged).toBe(true);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('v4');
      expect(fs.readFileSync(r.execution!.conflicts[0]!.conflictPath!, 'utf8')).toBe('v1');
      expect(pendingOf(r)).toEqual({ uploads: 0, downloads: 0 });
      expect(describeDone(r.execution!)).toBe('1 earlier version put back with an old time, not uploaded');
      expect(texts(document.id)).toEqual(['v1', 'v2', 'v3', 'v4']);
      expect((await runPass(p.rt)).converged).toBe(true);
    } finally {
      await p.close();
    }
  });

  it('in a download-only pair, content the document never had: left as it is, said as not uploaded, and looked at once', async () => {
    const p = await openTestPair(emu, 'restored-download-edit', 'direction: download');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
      c.addVersion(document.id, 'v2');
      await runPass(p.rt);
      restoreFromBackup(p, 'a local edit from before');
      const listed = () => c.counters().versions;
      const before = listed();
      const r = await runPass(p.rt);
      expect(r.execution?.failures).toEqual([]);
      expect(r.issues.map((i) => [i.relPath, i.code])).toEqual([['Docs/a.txt', 'local-change-not-uploaded']]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('a local edit from before');
      expect(pendingOf(r)).toEqual({ uploads: 0, downloads: 0 });
      expect(listed()).toBe(before + 1);
      // Looked at once: later passes plan no look at the same content against the same version.
      const again = await runPass(p.rt);
      expect(again.plan.groups).toEqual([]);
      expect(again.issues.map((i) => i.code)).toEqual(['local-change-not-uploaded']);
      expect(listed()).toBe(before + 1);
      // A colleague's new version: the remote wins in a download-only pair, the local content kept in the trash.
      c.addVersion(document.id, 'v3');
      const after = await runPass(p.rt);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('v3');
      expect(after.execution?.failures).toEqual([]);
      expect(texts(document.id)).toEqual(['v1', 'v2', 'v3']);
    } finally {
      await p.close();
    }
  });
});
