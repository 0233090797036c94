// A search index that lags behind commits (black-box round 35a, F1). The spec says nothing of when a commit shows
// in POST /documents; a lagging index lists a document just committed at its version before. Taken as a change,
// our own edit's previous version came back down over it, and the next edit became a conflict with that older
// version: a conflict copy of the user's own work (under remote-wins, the edit went to the trash). A document
// listed at a version its base row held before is now taken as unchanged. Real passes, real state DB, the
// emulator on loopback with its search lagging.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { captureLog } from './executor-fixture.js';
import { openTestPair } from './pass-fixture.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});
afterEach(() => emu.control.setSearchLag(0));

const LAG_MS = 1500;
/** Until what exists now is older than the lag: the lagging index lists it, at its version of now. */
const indexed = () => new Promise((res) => setTimeout(res, LAG_MS + 100));
const texts = (documentId: string) => emu.control.listVersions(documentId).map((v) => emu.control.readContent(documentId, v.id).toString());

describe('a search index lagging behind commits', () => {
  for (const policy of ['keep-both', 'remote-wins'] as const) {
    it(`our own edits are not taken back, nor made conflicts with their previous version (${policy})`, async () => {
      const p = await openTestPair(emu, `lag-${policy}`, `conflictPolicy: ${policy}`);
      try {
        const c = emu.control;
        const folder = c.createFolder(p.binderId, { name: 'Docs' });
        const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
        expect((await runPass(p.rt)).converged).toBe(true);
        await indexed();
        const lines = captureLog(p.rt as unknown as Parameters<typeof captureLog>[0]);
        c.setSearchLag(LAG_MS);
        const file = path.join(p.local, 'Docs', 'a.txt');

        for (const edit of ['edit 1', 'edit 2', 'edit 3']) {
          fs.writeFileSync(file, edit);
          const up = await runPass(p.rt);
          expect(up.execution?.done).toEqual({ upload: 1 });
          // The next poll's listing still names the version before: nothing to do.
          const after = await runPass(p.rt);
          expect(after.plan.groups).toEqual([]);
          expect(after.converged).toBe(true);
          expect(fs.readFileSync(file, 'utf8')).toBe(edit);
        }
        expect(texts(document.id)).toEqual(['v1', 'edit 1', 'edit 2', 'edit 3']);
        expect(c.listDocuments(p.binderId).map((d) => d.fileName)).toEqual(['a.txt']); // no conflict copies
        const said = lines.filter((l) => /older than the one synced/.test(l.msg));
        expect(said.map((l) => l.level)[0]).toBe(30);
        expect(said.slice(1).every((l) => l.level === 20)).toBe(true);

        // Caught up, with a colleague's version meanwhile: that one comes down as any remote change.
        c.setSearchLag(0);
        c.addVersion(document.id, "a colleague's");
        await runPass(p.rt);
        expect(fs.readFileSync(file, 'utf8')).toBe("a colleague's");
      } finally {
        await p.close();
      }
    });
  }

  it('a download taken back by a lagging listing is not downloaded again over the newer one', async () => {
    const p = await openTestPair(emu, 'lag-download');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document } = c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
      await runPass(p.rt);
      await indexed();
      c.addVersion(document.id, 'v2');
      await runPass(p.rt);
      c.setSearchLag(LAG_MS); // the index now shows v1 again (v2 is newer than the lag), as a stale replica would
      const r = await runPass(p.rt);
      expect(r.plan.groups).toEqual([]);
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('v2');
    } finally {
      await p.close();
    }
  });

  // Black-box round 41c, O1: a binder just filled, its search index not caught up: the first sync said "in sync"
  // with nothing downloaded. No document in a binder with folders, at a process's first listing, asks the folders.
  it('the first sync of a binder whose search lists nothing yet lists its folders, and downloads what they hold', async () => {
    const p = await openTestPair(emu, 'lag-first-sync');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      c.addDocument(p.binderId, folder.id, 'a.txt', 'a');
      c.addDocument(p.binderId, folder.id, 'b.txt', 'b');
      c.setSearchLag(60 * 60_000); // nothing this new is in the index yet
      const r = await runPass(p.rt);
      expect(r.listingMethod).toBe('per-folder');
      expect(r.execution?.done).toEqual(expect.objectContaining({ download: 2 }));
      expect(fs.readFileSync(path.join(p.local, 'Docs', 'a.txt'), 'utf8')).toBe('a');
      // A later pass (the index still behind) keeps them: they are synced, and the lag is taken as it is.
      const next = await runPass(p.rt);
      expect(next.execution?.done['trash-local']).toBeUndefined();
      expect(fs.existsSync(path.join(p.local, 'Docs', 'b.txt'))).toBe(true);
    } finally {
      await p.close();
    }
  });

  // The latest-version pointer moved back (a version made current again on the service): not a lagging index. The
  // document itself names that version: once it has been older for ten minutes, the pass asks, and takes it as the
  // change it is. Before, the local file stayed at the newer content for a day (until the record was pruned).
  it('a document whose latest version was made an earlier one again is brought to it, once the service confirms it', async () => {
    const p = await openTestPair(emu, 'lag-pointer-back');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      const { document, version: v1 } = c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
      await runPass(p.rt);
      c.addVersion(document.id, 'v2');
      await runPass(p.rt);
      const file = path.join(p.local, 'Docs', 'a.txt');
      expect(fs.readFileSync(file, 'utf8')).toBe('v2');
      const lines = captureLog(p.rt as unknown as Parameters<typeof captureLog>[0]);
      c.makeVersionLatest(document.id, v1.id);
      c.resetCounters();

      // Within ten minutes: taken as a lagging listing (nothing asked), and the next poll looks again.
      const young = await runPass(p.rt);
      expect(young.plan.groups).toEqual([]);
      expect(fs.readFileSync(file, 'utf8')).toBe('v2');
      expect(c.counters().document).toBe(0);
      expect(p.rt.cache.quiet).toBe(false);

      const later = () => new Date(Date.now() + 11 * 60_000);
      const r = await runPass(p.rt, { now: later });
      expect(r.execution?.done).toEqual({ download: 1 });
      expect(fs.readFileSync(file, 'utf8')).toBe('v1');
      expect(c.counters().document).toBe(1);
      expect(lines.some((l) => /made current again on the service/.test(l.msg) && l.level === 40)).toBe(true);
      // The newer content it replaced is in the trash (and in the document's history).
      const trashed = fs.readdirSync(path.join(p.local, '..', 'state', 'p', 'trash'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
      expect(trashed.map((e) => fs.readFileSync(path.join(e.parentPath, e.name), 'utf8'))).toContain('v2');
      const settled = await runPass(p.rt, { now: later });
      expect(settled.plan.groups).toEqual([]);
      expect(p.rt.cache.quiet).toBe(true);
    } finally {
      await p.close();
    }
  });

  it('a listing lagging for more than ten minutes is asked about once, and still not taken for a change', async () => {
    const p = await openTestPair(emu, 'lag-long');
    try {
      const c = emu.control;
      const folder = c.createFolder(p.binderId, { name: 'Docs' });
      c.addDocument(p.binderId, folder.id, 'a.txt', 'v1');
      await runPass(p.rt);
      const lag = 4_000; // long enough for the passes below to run inside it, even on a loaded machine
      await new Promise((res) => setTimeout(res, lag + 100));
      c.setSearchLag(lag);
      const file = path.join(p.local, 'Docs', 'a.txt');
      fs.writeFileSync(file, 'our edit');
      expect((await runPass(p.rt)).execution?.done).toEqual({ upload: 1 });
      c.resetCounters();
      const later = () => new Date(Date.now() + 11 * 60_000);
      for (let i = 0; i < 2; i++) {
        const r = await runPass(p.rt, { now: later });
        expect(r.plan.groups).toEqual([]);
        expect(r.plan.groups).toEqual([]);
        expect(fs.readFileSync(file, 'utf8')).toBe('our edit');
      }
      expect(c.counters().document).toBe(1); // once per ten minutes
      expect(c.counters().search).toBeGreaterThanOrEqual(2); // both passes did list it (lagging)
      expect(p.rt.cache.quiet).toBe(false);
    } finally {
      await p.close();
    }
  });

  // Recorded at an older version on purpose (a backup's file in an upload-only pair): the versions after it are
  // what the service has, not a listing older than the synced state.
  it('an upload-only pair\'s restored earlier version still sees the newer ones as remote changes', async () => {
    const p = await openTestPair(emu, 'lag-upload-only', 'direction: upload');
    try {
      const c = emu.control;
      c.createFolder(p.binderId, { name: 'Docs' });
      fs.mkdirSync(path.join(p.local, 'Docs'), { recursive: true });
      const file = path.join(p.local, 'Docs', 'a.txt');
      fs.writeFileSync(file, 'first');
      await runPass(p.rt);
      fs.writeFileSync(file, 'second');
      await runPass(p.rt);
      const synced = fs.statSync(file);
      fs.rmSync(file);
      fs.writeFileSync(file, 'first');
      const yesterday = new Date(synced.mtimeMs - 86_400_000);
      fs.utimesSync(file, yesterday, yesterday);
      await runPass(p.rt); // recorded as holding the first version, not uploaded
      const r = await runPass(p.rt);
      expect(r.issues.map((i) => i.code)).toEqual(['upload-only']);
    } finally {
      await p.close();
    }
  });
});
