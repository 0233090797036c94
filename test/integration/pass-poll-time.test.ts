// `status`'s "poll" time is when the pass looked at the service, not when it ended: a colleague's change made during
// a long pass was shown as polled while it was not seen yet (black-box round 43c, notes). Real passes over loopback.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair } from './pass-fixture.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});
afterAll(async () => {
  await emu?.close();
});

it('lastPollAt is the time the pass listed the binder, before a slow pass ends; also for a pass with nothing to do', async () => {
  const p = await openTestPair(emu, 'poll-time');
  try {
    const c = emu.control;
    const folder = c.createFolder(p.binderId, { name: 'Docs' });
    c.addDocument(p.binderId, folder.id, 'a.txt', 'content');
    for (const pass of ['a download', 'nothing to do'] as const) {
      // The download (or the listing) is slow: the pass ends well after it began listing.
      c.injectFault({ route: pass === 'a download' ? 'storage-get' : 'search', latencyMs: 400 });
      const before = Date.now();
      await runPass(p.rt);
      const after = Date.now();
      c.clearFaults();
      const polled = Date.parse(p.rt.store.getMeta('lastPollAt') ?? '');
      expect(polled).toBeGreaterThanOrEqual(before - 1);
      expect(after - polled).toBeGreaterThanOrEqual(350);
    }
  } finally {
    await p.close();
  }
});
