// A service that answers every commit 401, even with a fresh token (black-box rounds 32b, F2 and 33a, F4): the
// upload is kept in the outbox and its commit tried again at the next pass, then after a minute doubling to 15 (the
// bytes are not sent again), the pair's lastError says so (status showed "idle" and no error), and the held commit
// is said at warn once, not every pass.
// Real passes, real state DB, the emulator on loopback.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
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

it('every commit answered 401: kept and tried again, the pair\'s lastError, said at warn once, one version once it is taken', async () => {
  const p = await openTestPair(emu, 'commit-401');
  try {
    const c = emu.control;
    c.createFolder(p.binderId, { name: 'Docs' });
    expect((await runPass(p.rt)).converged).toBe(true);
    fs.writeFileSync(path.join(p.local, 'Docs', 'new.txt'), 'to be committed');
    const lines = captureLog(p.rt as unknown as Parameters<typeof captureLog>[0]);
    c.injectFault({ route: 'commit', status: 401 });

    const first = await runPass(p.rt);
    expect(first.execution?.failures.map((f) => f.code)).toEqual(['SERVICE_UNAUTHORIZED']);
    expect(p.rt.store.listOutbox().map((r) => r.fileName)).toEqual(['new.txt']);
    const puts = c.counters()['storage-put'];

    // Tried again at the next pass, and then not on every poll but after a minute, doubling to 15 (black-box round
    // 33a, F4: two commits and a token request per poll, for ever).
    let clock = Date.now();
    const at = () => new Date(clock);
    const before = c.counters().commit;
    const commits: number[] = [];
    for (let pass = 0; pass < 4; pass++) {
      const again = await runPass(p.rt, { now: at });
      commits.push(c.counters().commit);
      expect(again.converged).toBe(false);
      expect(p.rt.store.getMeta('lastError')).toMatch(/^1 upload\(s\) left unfinished could not be committed; first: Docs\/new\.txt: the service did not accept .*HTTP 401/);
      // With the service settings it was met with, for `status` under a config naming others (round 42c, P1-e).
      expect(p.rt.store.getMeta('lastErrorWith')).toBe(p.rt.client.settingsIdentity);
      clock += 5_000;
    }
    expect(commits[0]! - before).toBeGreaterThan(0); // the look at the next pass
    expect(commits[3]).toBe(commits[0]); // then held: no request in the minute after (black-box round 40b, A5)
    clock += 60_000;
    await runPass(p.rt, { now: at });
    const third = c.counters().commit;
    expect(third).toBeGreaterThan(commits[3]!); // tried again once the hold ran out
    clock += 65_000;
    await runPass(p.rt, { now: at });
    expect(c.counters().commit).toBe(third); // the hold doubled: two minutes now
    expect(c.counters()['storage-put']).toBe(puts); // the bytes were not sent again
    const held = lines.filter((l) => l.relPath === 'Docs/new.txt' && /left unfinished could not be committed/.test(l.msg));
    expect(held.map((l) => l.level)).toEqual([40, 20]);

    c.clearFaults();
    clock += 200_000;
    expect((await runPass(p.rt, { now: at })).converged).toBe(true);
    expect(p.rt.store.getMeta('lastError')).toBe('');
    expect(p.rt.store.getMeta('lastErrorWith')).toBe('');
    const [doc] = c.listDocuments(p.binderId);
    expect(doc?.fileName).toBe('new.txt');
    expect(c.listVersions(doc!.id)).toHaveLength(1);

    // Settled, a later hold of the same file is news again: said at warn once more.
    fs.writeFileSync(path.join(p.local, 'Docs', 'new.txt'), 'edited later');
    c.injectFault({ route: 'commit', status: 401 });
    await runPass(p.rt);
    await runPass(p.rt);
    const later = lines.filter((l) => l.relPath === 'Docs/new.txt' && /left unfinished could not be committed/.test(l.msg));
    expect(later.map((l) => l.level)).toEqual([40, 20, 40]);
    // An edit of the held file is looked at at once, whatever the hold.
    fs.writeFileSync(path.join(p.local, 'Docs', 'new.txt'), 'edited again');
    c.clearFaults();
    expect((await runPass(p.rt)).converged).toBe(true);
    c.clearFaults();
  } finally {
    await p.close();
  }
});

it('two held commits: the one behind the first says it waits behind that file, not the first file\'s error as its own', async () => {
  const p = await openTestPair(emu, 'commit-401-two');
  try {
    const c = emu.control;
    c.createFolder(p.binderId, { name: 'Docs' });
    expect((await runPass(p.rt)).converged).toBe(true);
    fs.writeFileSync(path.join(p.local, 'Docs', 'a.txt'), 'first');
    fs.writeFileSync(path.join(p.local, 'Docs', 'b.txt'), 'second');
    c.injectFault({ route: 'commit', status: 401 });
    await runPass(p.rt);
    const rows = p.rt.store.listOutbox().map((r) => r.relPath);
    expect(rows.sort()).toEqual(['Docs/a.txt', 'Docs/b.txt']);

    const again = await runPass(p.rt);
    const [first, second] = p.rt.store.listOutbox().map((r) => r.relPath);
    const detail = (relPath: string | undefined) => again.issues.find((i) => i.relPath === relPath)?.detail ?? '';
    expect(detail(first)).toMatch(/could not be committed now \(.*HTTP 401/);
    expect(detail(second)).toContain(`waits: the commit of ${first} before it could not be settled now (the service did not accept`);
    expect(detail(second)).not.toContain(`(${first}: `);
    c.clearFaults();
    // Refused at the next pass too, the first is held a minute (black-box round 40b, A5).
    expect((await runPass(p.rt)).converged).toBe(false);
    expect((await runPass(p.rt, { now: () => new Date(Date.now() + 61_000) })).converged).toBe(true);
    expect(c.listDocuments(p.binderId).map((d) => d.fileName).sort()).toEqual(['a.txt', 'b.txt']);
  } finally {
    await p.close();
  }
});
