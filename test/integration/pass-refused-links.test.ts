// A download whose links storage keeps refusing (black-box round 37b, F7: a clock off or a proxy, every link
// answered 403 "expired") is held back a minute, then doubling, instead of being tried again at every pass a few
// seconds apart for ever; other documents sync meanwhile, a new version is tried at once, and the item is said
// once in the log and shown with when it is tried again. Real HTTP against the emulator (links issued already
// expired: expireDownloadLinks), real SQLite, real files; the pass's clock (PassOptions.now) is moved on.
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { logIssueChanges } from '../../src/daemon/pass-summary.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { createLogger } from '../../src/log.js';
import type { Issue } from '../../src/sync/model.js';
import { runPass, type PassReport } from '../../src/sync/pass.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

let emu: Emulator;
let pair: TestPair;

beforeEach(async () => {
  emu = await startEmulator({ quiet: true });
});

afterEach(async () => {
  await pair?.close();
  await emu.close();
});

const MIN = 60_000;
const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

it('a download whose links storage refuses is held (1 min, then 2), other documents sync, and a new version is tried at once', async () => {
  pair = await openTestPair(emu, 'refused-links');
  const c = emu.control;
  const docs = c.createFolder(pair.binderId, { name: 'Docs' });
  const refused = c.addDocument(pair.binderId, docs.id, 'refused.txt', 'v1').document;
  c.addDocument(pair.binderId, docs.id, 'fine.txt', 'fine');
  c.expireDownloadLinks([refused.id]);

  // The daemon's log of "not synced" items, as its worker keeps it across passes.
  const lines: Array<{ level: number; msg: string }> = [];
  const log = createLogger({ destination: new Writable({ write: (chunk: Buffer, _e, done) => { for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as { level: number; msg: string }); done(); } }), level: 'debug' });
  let open = new Map<string, Issue>();
  const t0 = Date.now();
  let fetches = 0;
  /** A daemon's poll at t0 + `at` ms; how many storage GETs it made for the refused document is in `fetches`. */
  const poll = async (at: number): Promise<PassReport> => {
    c.resetCounters();
    const r = await runPass(pair.rt, { localDirs: [], now: () => new Date(t0 + at) });
    open = logIssueChanges(log, open, r.issues);
    fetches = c.lastRequests(500).filter((q) => q.route === 'storage-get' && q.status === 403).length;
    return r;
  };
  const held = (r: PassReport) => r.issues.filter((i) => i.relPath === 'Docs/refused.txt' && i.code === 'remote-change-not-downloaded').map((i) => i.detail);
  const read = (rel: string) => fs.readFileSync(path.join(pair.local, rel), 'utf8');

  const first = await poll(0);
  expect(first.execution?.failures.map((f) => [f.relPath, f.code])).toEqual([['Docs/refused.txt', 'STORAGE_LINK_EXPIRED']]);
  expect(read('Docs/fine.txt')).toBe('fine');
  expect(fetches).toBe(3);
  const firstHold = `storage refused every download link for it (STORAGE_LINK_EXPIRED, once): check this machine's clock and any proxy between it and storage; tried again at ${utc(t0 + MIN)}, or at once when the document gets another version`;
  expect(held(first)).toEqual([firstHold]);
  // What `status` lists: the issues the pass saved.
  expect(pair.rt.store.listIssues().filter((i) => i.relPath === 'Docs/refused.txt').map((i) => i.detail)).toEqual([firstHold]);

  // Within the hold: not fetched, still shown; a quiet poll after it plans nothing either.
  for (const at of [5_000, 10_000]) {
    const r = await poll(at);
    expect(r.execution?.failures ?? []).toEqual([]);
    expect(fetches).toBe(0);
    expect(c.counters().downloadlink).toBe(0);
    expect(held(r)).toEqual([firstHold]);
  }
  // Another document meanwhile: downloaded.
  c.addDocument(pair.binderId, docs.id, 'later.txt', 'later');
  const other = await poll(20_000);
  expect(read('Docs/later.txt')).toBe('later');
  expect(fetches).toBe(0);
  expect(held(other)).toEqual([firstHold]);
  await poll(30_000); // quiet again

  // The hold ran out: tried again (the poll before was quiet, and plans anyway), refused again: held twice as long.
  const again = await poll(MIN + 1_000);
  expect(fetches).toBe(3);
  expect(held(again)).toEqual([`storage refused every download link for it (STORAGE_LINK_EXPIRED, 2 times in a row): check this machine's clock and any proxy between it and storage; tried again at ${utc(t0 + MIN + 1_000 + 2 * MIN)}, or at once when the document gets another version`]);
  await poll(MIN + 1_000 + 90_000);
  expect(fetches).toBe(0);

  // A new version is tried at once (its hold starts again at a minute).
  c.addVersion(refused.id, 'v2');
  const newVersion = await poll(MIN + 1_000 + 100_000);
  expect(fetches).toBe(3);
  expect(held(newVersion)[0]).toContain('(STORAGE_LINK_EXPIRED, once)');

  // Storage takes the links again: the next try after the hold downloads it.
  c.expireDownloadLinks(null);
  const done = await poll(MIN + 1_000 + 100_000 + MIN);
  expect(done.execution?.failures ?? []).toEqual([]);
  expect(read('Docs/refused.txt')).toBe('v2');
  expect(held(done)).toEqual([]);
  expect(pair.rt.refusedUrls.size).toBe(0);

  // Said once at warn as not synced, through every retry, and once as no longer blocked.
  expect(lines.filter((l) => l.msg.startsWith('not synced: Docs/refused.txt'))).toHaveLength(1);
  expect(lines.filter((l) => l.msg === 'no longer blocked: Docs/refused.txt')).toHaveLength(1);
});

it('a conflict whose remote side cannot be fetched is held as a download is', async () => {
  pair = await openTestPair(emu, 'refused-conflict');
  const c = emu.control;
  const docs = c.createFolder(pair.binderId, { name: 'Docs' });
  const doc = c.addDocument(pair.binderId, docs.id, 'both.txt', 'remote').document;
  fs.mkdirSync(path.join(pair.local, 'Docs'), { recursive: true });
  fs.writeFileSync(path.join(pair.local, 'Docs', 'both.txt'), 'local, different');
  c.expireDownloadLinks([doc.id]);
  const t0 = Date.now();
  const first = await runPass(pair.rt, { now: () => new Date(t0) });
  expect(first.execution?.failures.map((f) => [f.kind, f.code])).toEqual([['conflict', 'STORAGE_LINK_EXPIRED']]);
  c.resetCounters();
  const second = await runPass(pair.rt, { localDirs: [], now: () => new Date(t0 + 10_000) });
  expect(second.execution?.failures ?? []).toEqual([]);
  expect(c.counters()['storage-get']).toBe(0);
  expect(second.issues.find((i) => i.relPath === 'Docs/both.txt')?.detail).toContain('storage refused every download link for it');
});
