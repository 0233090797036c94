// An upload whose presigned URLs storage keeps refusing (a clock off or a proxy: every PUT answered 403
// "expired") is held back a minute, then doubling up to 15, as a download whose links storage refuses is
// (pass-refused-links.test.ts), instead of asking for six slots and sending the file six times at every pass, for
// ever. Other files upload meanwhile, new content is tried at once, and the item is said once in the log and
// shown with when it is tried again. Real HTTP against the emulator (URLs issued already expired:
// expireUploadUrls), real SQLite, real files; the pass's clock (PassOptions.now) is moved on.
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
/** The client's default attempts (6), with short waits: the test measures requests, not back-off. */
const RETRY = { retry: { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 20 } };
const utc = (ms: number) => `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;

async function openWithDocs(name: string, pairYaml = ''): Promise<string> {
  pair = await openTestPair(emu, name, pairYaml, RETRY);
  const docs = emu.control.createFolder(pair.binderId, { name: 'Docs' });
  fs.mkdirSync(path.join(pair.local, 'Docs'), { recursive: true });
  return docs.id;
}

const write = (rel: string, content: string) => fs.writeFileSync(path.join(pair.local, rel), content);
const held = (r: PassReport, rel = 'Docs/refused.txt') => r.issues.filter((i) => i.relPath === rel && i.code === 'local-change-not-uploaded').map((i) => i.detail);

it('a daemon polling every 30 s for 16 minutes sends a file storage refuses at 0, 1, 3, 7 and 15 minutes only, three slots each', async () => {
  await openWithDocs('refused-upload-storm');
  const c = emu.control;
  write('Docs/refused.txt', 'never arrives');
  c.expireUploadUrls();
  const t0 = Date.now();
  // [second, slots asked for, PUTs] of each poll that asked for a slot.
  const sent: Array<[number, number, number]> = [];
  for (let s = 0; s <= 16 * 60; s += 30) {
    c.resetCounters();
    // The first pass scans the whole root, as the daemon's first does; the polls after it have no local change.
    await runPass(pair.rt, { ...(s === 0 ? {} : { localDirs: [] }), now: () => new Date(t0 + s * 1000) });
    const n = c.counters();
    if (n.presignedupload + n['storage-put'] > 0) sent.push([s, n.presignedupload, n['storage-put']]);
  }
  // Before: [s, 6, 6] at each of the 33 polls, 397 requests to the slot endpoint and storage in 16 minutes (now 31),
  // the file read and sent whole 198 times. (The first pass asks for one slot more: its check of write access.)
  expect(sent).toEqual([
    [0, 4, 3],
    [60, 3, 3],
    [180, 3, 3],
    [420, 3, 3],
    [900, 3, 3],
  ]);
  expect(c.listDocuments(pair.binderId)).toEqual([]);
  expect(pair.rt.store.listOutbox()).toEqual([]);
});

it('a held upload is listed with when it is tried again; other files upload, new content is tried at once, and it goes up once storage takes it', async () => {
  await openWithDocs('refused-upload');
  const c = emu.control;
  const lines: Array<{ level: number; msg: string }> = [];
  const log = createLogger({ destination: new Writable({ write: (chunk: Buffer, _e, done) => { for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as { level: number; msg: string }); done(); } }), level: 'debug' });
  let open = new Map<string, Issue>();
  const t0 = Date.now();
  /** A daemon's pass at t0 + `at` ms (after a change in Docs when `changed`); the PUTs it made in `puts`. */
  let puts = 0;
  const poll = async (at: number, changed = false): Promise<PassReport> => {
    c.resetCounters();
    const r = await runPass(pair.rt, { localDirs: changed ? ['Docs'] : [], now: () => new Date(t0 + at) });
    open = logIssueChanges(log, open, r.issues);
    puts = c.counters()['storage-put'];
    return r;
  };
  write('Docs/refused.txt', 'v1');
  c.expireUploadUrls();

  const first = await poll(0, true);
  expect(first.execution?.failures.map((f) => [f.relPath, f.code])).toEqual([['Docs/refused.txt', 'STORAGE_SLOT_EXPIRED']]);
  expect(puts).toBe(3);
  const firstHold = `storage refused every upload URL for it (STORAGE_SLOT_EXPIRED, once): check this machine's clock and any proxy between it and storage; tried again at ${utc(t0 + MIN)}, or at once when the file changes`;
  expect(held(first)).toEqual([firstHold]);
  // What `status` lists: the issues the pass saved.
  expect(pair.rt.store.listIssues().filter((i) => i.relPath === 'Docs/refused.txt').map((i) => [i.code, i.detail])).toEqual([['local-change-not-uploaded', firstHold]]);

  // Within the hold: not sent, still shown.
  const quiet = await poll(10_000);
  expect(puts).toBe(0);
  expect(held(quiet)).toEqual([firstHold]);

  // Storage takes the URLs again and another file is written: it goes up, the held one waits for its hold.
  c.expireUploadUrls(null);
  write('Docs/other.txt', 'other');
  const other = await poll(20_000, true);
  expect(other.execution?.failures ?? []).toEqual([]);
  expect(puts).toBe(1);
  expect(c.listDocuments(pair.binderId).map((d) => d.fileName)).toEqual(['other.txt']);
  expect(held(other)).toEqual([firstHold]);

  // New content is tried at once (refused again: its hold starts again at a minute).
  c.expireUploadUrls();
  write('Docs/refused.txt', 'v2, longer');
  const edited = await poll(30_000, true);
  expect(puts).toBe(3);
  expect(held(edited)).toEqual([firstHold.replace(utc(t0 + MIN), utc(t0 + 30_000 + MIN))]);

  // Storage takes the URLs again: the first try after the hold uploads it, as one document with one version.
  c.expireUploadUrls(null);
  const within = await poll(30_000 + MIN - 1);
  expect(puts).toBe(0);
  expect(held(within)).toHaveLength(1);
  const done = await poll(30_000 + MIN);
  expect(done.execution?.failures ?? []).toEqual([]);
  expect(held(done)).toEqual([]);
  const doc = c.listDocuments(pair.binderId).find((d) => d.fileName === 'refused.txt')!;
  expect(c.listVersions(doc.id)).toHaveLength(1);
  expect(c.readContent(doc.id).toString()).toBe('v2, longer');
  expect(pair.rt.store.listOutbox()).toEqual([]);
  expect(pair.rt.refusedUrls.size).toBe(0);

  // Said once at warn as not synced, through every retry, and once as no longer blocked.
  expect(lines.filter((l) => l.msg.startsWith('not synced: Docs/refused.txt'))).toHaveLength(1);
  expect(lines.filter((l) => l.msg === 'no longer blocked: Docs/refused.txt')).toHaveLength(1);
});

it('a conflict whose local side storage refuses to take (local-wins) is held as an upload: neither side is sent or fetched again meanwhile', async () => {
  const folderId = await openWithDocs('refused-conflict-upload', 'conflictPolicy: local-wins');
  const c = emu.control;
  const doc = c.addDocument(pair.binderId, folderId, 'both.txt', 'v1').document;
  const t0 = Date.now();
  await runPass(pair.rt, { now: () => new Date(t0) });
  // Both sides change after the sync: a conflict, which local-wins settles by uploading the local side.
  c.addVersion(doc.id, 'remote edit');
  write('Docs/both.txt', 'local edit, different');
  c.expireUploadUrls();
  const first = await runPass(pair.rt, { localDirs: ['Docs'], now: () => new Date(t0 + 1_000) });
  expect(first.execution?.failures.map((f) => [f.kind, f.code])).toEqual([['conflict', 'STORAGE_SLOT_EXPIRED']]);
  expect(held(first, 'Docs/both.txt')[0]).toContain('storage refused every upload URL for it (STORAGE_SLOT_EXPIRED, once)');
  c.resetCounters();
  const second = await runPass(pair.rt, { localDirs: [], now: () => new Date(t0 + 10_000) });
  expect(second.execution?.failures ?? []).toEqual([]);
  const n = c.counters();
  expect([n['storage-get'], n.presignedupload, n['storage-put']]).toEqual([0, 0, 0]);
  expect(held(second, 'Docs/both.txt')[0]).toContain('storage refused every upload URL for it');
  // Not said as a download storage refused (the remote side came through).
  expect(second.issues.filter((i) => i.relPath === 'Docs/both.txt' && i.code === 'remote-change-not-downloaded')).toEqual([]);
  // Once storage takes it after the hold: the local side is the newest version, the remote edit in the history.
  c.expireUploadUrls(null);
  const done = await runPass(pair.rt, { localDirs: [], now: () => new Date(t0 + 1_000 + 60_000) });
  expect(done.execution?.failures ?? []).toEqual([]);
  expect(c.readContent(doc.id).toString()).toBe('local edit, different');
  expect(c.listVersions(doc.id)).toHaveLength(3);
});
