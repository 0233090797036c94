// A search whose order changes between requests (black-box round 42c, O1). The spec states no order for a search
// without SortBy, so a paged walk of such a service overlaps and skips documents, and the listing falls back to
// the per-folder endpoint. Each poll then paid two whole searches before that fallback; now search is left alone
// for a while once it answered so, and asked again later. Real passes, real state DB, the emulator on loopback.
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
afterEach(() => emu.control.setSearchShuffled(false));

describe('a search whose order changes between requests', () => {
  it('is asked in two listings, then the documents are listed per folder until it is tried again', async () => {
    const p = await openTestPair(emu, 'shuffled', 'pageSize: 5');
    try {
      const c = emu.control;
      const folders = ['A', 'B', 'C'].map((name) => c.createFolder(p.binderId, { name }));
      for (let i = 0; i < 30; i++) c.addDocument(p.binderId, folders[i % 3]!.id, `f${i}.txt`, `content ${i}`);
      c.setSearchShuffled(true);
      const lines = captureLog(p.rt as unknown as Parameters<typeof captureLog>[0]);

      c.resetCounters();
      const first = await runPass(p.rt);
      expect(first.converged).toBe(true);
      expect(first.listingMethod).toBe('per-folder');
      expect(c.counters().search).toBeGreaterThan(0); // asked, and found inconsistent
      expect(fs.readdirSync(path.join(p.local, 'B')).length).toBe(10);
      // Once is not enough (colleagues busy during both walks say so too): asked again at the next listing.
      c.resetCounters();
      expect((await runPass(p.rt)).plan.groups).toEqual([]);
      expect(c.counters().search).toBeGreaterThan(0);

      // The next polls go per folder straight away: no search at all, and nothing to do.
      for (let poll = 0; poll < 2; poll++) {
        c.resetCounters();
        const again = await runPass(p.rt);
        expect(again.plan.groups).toEqual([]);
        expect(again.listingMethod).toBe('per-folder');
        expect(c.counters().search).toBe(0);
        expect(c.counters().folderdocuments).toBe(3);
      }

      // A colleague's new document in a new folder is found all the same.
      const d = c.createFolder(p.binderId, { name: 'D' });
      c.addDocument(p.binderId, d.id, 'new.txt', 'from a colleague');
      c.resetCounters();
      await runPass(p.rt);
      expect(c.counters().search).toBe(0);
      expect(fs.readFileSync(path.join(p.local, 'D', 'new.txt'), 'utf8')).toBe('from a colleague');

      // Said once, at info level.
      expect(lines.filter((l) => /search answered pages that do not add up, listing after listing/.test(l.msg)).map((l) => l.level)).toEqual([30]);

      // Once the while is over, search is asked again, and a stable one is used again.
      c.setSearchShuffled(false);
      p.rt.cache.searchSkippedUntil = Date.now() - 1;
      c.resetCounters();
      const later = await runPass(p.rt);
      expect(c.counters().search).toBeGreaterThan(0);
      expect(later.listingMethod).toBe('search');
      expect(later.plan.groups).toEqual([]);
      // A good listing starts the count over: one inconsistent listing after it does not skip search yet.
      c.setSearchShuffled(true);
      await runPass(p.rt);
      c.resetCounters();
      await runPass(p.rt);
      expect(c.counters().search).toBeGreaterThan(0);
    } finally {
      await p.close();
    }
  });
});
