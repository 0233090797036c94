// A download its folder refused (black-box round 32a, F2: `chmod 555` of the folder, EACCES) is held back like one
// onto an immutable file, but the hold ends as soon as the folder lets this process write again: the next pass,
// a poll with no local hint as the daemon makes it, downloads it. Root ignores permission bits, so the folder is
// made immutable (chattr +i: EPERM, and access(2) refuses writing, for root too); skipped where chattr does not work.
// Real HTTP against the emulator, real SQLite, real files.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass, type PassReport } from '../../src/sync/pass.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

function chattr(flag: '+i' | '-i', target: string): boolean {
  return spawnSync('chattr', [flag, target], { stdio: 'ignore' }).status === 0;
}

/** Whether this machine can make a folder immutable where the test's files live (root, chattr, attributes). */
function attributesWork(): boolean {
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'chattr-probe-'));
  try {
    const ok = chattr('+i', probe);
    if (ok) chattr('-i', probe);
    return ok;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}
const canChattr = attributesWork();

let emu: Emulator;
let pair: TestPair;
const immutable: string[] = [];

beforeEach(async () => {
  emu = await startEmulator({ quiet: true });
});

afterEach(async () => {
  for (const f of immutable.splice(0)) chattr('-i', f);
  await pair?.close();
  await emu.close();
});

const read = (rel: string) => fs.readFileSync(path.join(pair.local, rel), 'utf8');
/** A daemon's poll: nothing hinted by the watcher (the held files' folders are rescanned all the same). */
const poll = (): Promise<PassReport> => runPass(pair.rt, { localDirs: [] });
const heldIssue = (r: PassReport, rel: string) => r.issues.find((i) => i.relPath === rel && i.code === 'remote-change-not-downloaded');
const lock = (abs: string) => {
  expect(chattr('+i', abs)).toBe(true);
  immutable.push(abs);
};
const unlock = (abs: string) => {
  expect(chattr('-i', abs)).toBe(true);
  immutable.splice(immutable.indexOf(abs), 1);
};

it.skipIf(!canChattr)('a download its folder refused is held, and goes through at the first pass after the folder lets it write', async () => {
  pair = await openTestPair(emu, 'held-folder');
  const c = emu.control;
  const alpha = c.createFolder(pair.binderId, { name: 'Alpha' });
  const sub = c.createFolder(pair.binderId, { name: 'Sub', parentId: alpha.id });
  const { document: doc } = c.addDocument(pair.binderId, sub.id, 'insub.txt', 'v1');
  expect((await runPass(pair.rt)).execution?.failures).toEqual([]);
  expect(read('Alpha/Sub/insub.txt')).toBe('v1');

  const subAbs = path.join(pair.local, 'Alpha', 'Sub');
  lock(subAbs);
  c.addVersion(doc.id, 'v2 from colleague');
  c.addDocument(pair.binderId, sub.id, 'new.txt', 'a new document'); // no local file yet
  c.resetCounters();
  const failed = await poll();
  expect(failed.execution?.failures.map((f) => [f.relPath, f.errno]).sort()).toEqual([['Alpha/Sub/insub.txt', 'EPERM'], ['Alpha/Sub/new.txt', 'EPERM']]);

  // Held: not fetched again, and said with the folder to mend.
  const held = await poll();
  expect(held.execution?.failures ?? []).toEqual([]);
  for (const [rel, what] of [['Alpha/Sub/insub.txt', 'the local file could not be replaced'], ['Alpha/Sub/new.txt', 'the new file could not be written']] as const) {
    expect(heldIssue(held, rel)?.detail?.startsWith(`${what} (`)).toBe(true);
    expect(heldIssue(held, rel)?.detail).toMatch(
      /^.* \(EPERM: its folder refuses to be written: is it immutable or append-only\? lsattr -d shows it, chattr -i \/ -a clears it\); not downloaded again until its folder Alpha\/Sub lets this process write in it \(looked at every pass\), the file changes or the document gets another version \(else tried again in 10 min\)$/,
    );
  }
  const fetched = c.counters()['storage-get'];

  // The folder mended (nothing about the files changed): the next poll downloads both, at once.
  unlock(subAbs);
  const mended = await poll();
  expect(mended.execution?.failures).toEqual([]);
  expect(mended.issues.filter((i) => i.code === 'remote-change-not-downloaded')).toEqual([]);
  expect(read('Alpha/Sub/insub.txt')).toBe('v2 from colleague');
  expect(read('Alpha/Sub/new.txt')).toBe('a new document');
  expect(c.counters()['storage-get']).toBe(fetched + 2);
  expect(pair.rt.unreplaceable.size).toBe(0);
});

it.skipIf(!canChattr)('a new document whose folder could not be created is held on the nearest folder there, and released when it is mended', async () => {
  pair = await openTestPair(emu, 'held-new-folder');
  const c = emu.control;
  const alpha = c.createFolder(pair.binderId, { name: 'Alpha' });
  c.addDocument(pair.binderId, alpha.id, 'a.txt', 'a');
  await runPass(pair.rt);
  const alphaAbs = path.join(pair.local, 'Alpha');
  lock(alphaAbs);
  const fresh = c.createFolder(pair.binderId, { name: 'New', parentId: alpha.id });
  c.addDocument(pair.binderId, fresh.id, 'x.txt', 'in a new folder');
  const failed = await poll();
  expect(failed.execution?.failures.find((f) => f.relPath === 'Alpha/New/x.txt')?.errno).toBe('EPERM');
  const held = await poll();
  expect(heldIssue(held, 'Alpha/New/x.txt')?.detail).toContain('not downloaded again until its folder Alpha lets this process write in it');

  unlock(alphaAbs);
  const mended = await poll();
  expect(mended.execution?.failures ?? []).toEqual([]);
  expect(read('Alpha/New/x.txt')).toBe('in a new folder');
});

it.skipIf(!canChattr)('a hold for an immutable file is the file\'s: a change of its (writable) folder does not end it', async () => {
  pair = await openTestPair(emu, 'held-file');
  const c = emu.control;
  const docs = c.createFolder(pair.binderId, { name: 'Docs' });
  const { document: doc } = c.addDocument(pair.binderId, docs.id, 'locked.txt', 'v1');
  await runPass(pair.rt);
  const locked = path.join(pair.local, 'Docs', 'locked.txt');
  lock(locked);
  c.addVersion(doc.id, 'v2');
  expect((await poll()).execution?.failures.map((f) => f.errno)).toEqual(['EPERM']);
  // The folder changes (its mode, so its ctime): the file, not the folder, refused, so the hold stands.
  fs.chmodSync(path.dirname(locked), 0o700);
  const held = await poll();
  expect(held.execution?.failures ?? []).toEqual([]);
  expect(heldIssue(held, 'Docs/locked.txt')?.detail).toMatch(
    /^the local file could not be replaced \(EPERM: is it immutable or append-only\? .*\); not downloaded again until the file changes or the document gets another version \(else tried again in 10 min\)$/,
  );
  unlock(locked); // the file's ctime moves: released
  await poll();
  expect(read('Docs/locked.txt')).toBe('v2');
});
