// A synced file made immutable (chattr +i) gets a new version on the service. The rename that puts the download in
// place fails with EPERM, after the whole version was fetched: the daemon fetched it again on every poll, for as
// long as the attribute stayed (black-box round 28a, T2). Now the download is held back with an issue that says
// why, and tried again as soon as the file changes (`chattr -i` moves its ctime). Needs chattr and a filesystem
// with file attributes (ext4, xfs, btrfs, tmpfs): skipped, saying so, where there are none.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createWorkspace, readLocal, runCli, sync, type Workspace } from './harness.js';
import { eventually, msgHas, startDaemonProcess, writeRunConfig, type DaemonProcess } from './run-helpers.js';

function chattr(flag: '+i' | '-i', file: string): boolean {
  return spawnSync('chattr', [flag, file], { stdio: 'ignore' }).status === 0;
}

/** Whether this machine can make a file immutable where the workspaces live (root, chattr, attributes). */
function attributesWork(): boolean {
  const probe = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chattr-probe-')), 'f');
  fs.writeFileSync(probe, 'x');
  const ok = chattr('+i', probe);
  if (ok) chattr('-i', probe);
  fs.rmSync(path.dirname(probe), { recursive: true, force: true });
  return ok;
}

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
const immutable: string[] = [];
afterEach(async () => {
  for (const f of immutable.splice(0)) chattr('-i', f);
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

it.skipIf(!attributesWork())('an immutable file with a new remote version is fetched once, held back with an issue, and replaced once it may be', async () => {
  ws = await createWorkspace();
  const w = ws;
  const c = w.emulator.control;
  const docs = c.createFolder(w.binderId, { name: 'Docs' });
  const { document: doc } = c.addDocument(w.binderId, docs.id, 'locked.bin', 'v1 content');
  c.addDocument(w.binderId, docs.id, 'other.txt', 'other v1');
  writeRunConfig(w);
  expect((await sync(w)).code).toBe(0);
  const locked = path.join(w.local, 'Docs', 'locked.bin');
  expect(chattr('+i', locked)).toBe(true);
  immutable.push(locked);

  c.addVersion(doc.id, 'v2 content, from the service');
  c.resetCounters();
  daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '500', BINDER_SYNC_LOG_LEVEL: 'debug' } });
  const d = daemon;
  const failed = await d.waitForLog(msgHas('action failed'), 15_000, 'the failed download');
  expect(JSON.stringify(failed.err)).toMatch(/EPERM/);
  expect(JSON.stringify(failed.err)).toMatch(/immutable or append-only/); // the hint names the likely cause
  // Polls every 0.5 s for 4 s more: the version is not fetched again, and the other document still syncs.
  c.addVersion(c.listDocuments(w.binderId).find((x) => x.fileName === 'other.txt')!.id, 'other v2');
  await eventually(() => readLocal(w, 'Docs/other.txt') === 'other v2', 8_000, 'the other document', d.tail);
  await new Promise((r) => setTimeout(r, 3_000));
  expect(c.counters()['storage-get'], d.tail()).toBe(2); // locked.bin once, other.txt once
  expect(readLocal(w, 'Docs/locked.bin')).toBe('v1 content');
  const status = await runCli(w, ['status', '--config', w.configFile]);
  expect(status.stdout).toMatch(/Docs\/locked\.bin +remote-change-not-downloaded: the local file could not be replaced \(EPERM: is it immutable or append-only\? .*\); not downloaded again until the file changes/);

  // The attribute removed: the file's ctime moves, and the next pass replaces it (the old content to the trash).
  expect(chattr('-i', locked)).toBe(true);
  immutable.length = 0;
  await eventually(() => readLocal(w, 'Docs/locked.bin') === 'v2 content, from the service', 8_000, 'the download once the file may be replaced', d.tail);
  expect(c.counters()['storage-get']).toBe(3);
});

// Black-box round 29a, F4: the pair's trash could not be written (immutable, another user's after a `sudo sync`):
// the download failed with the immutable-file hint about the local file, which was fine, and stayed held for
// the whole hold after the trash was mended.
it.skipIf(!attributesWork())('a trash that cannot take the old content is named as the cause, and the download goes through once it can', async () => {
  ws = await createWorkspace();
  const w = ws;
  const c = w.emulator.control;
  const docs = c.createFolder(w.binderId, { name: 'Docs' });
  const { document: doc } = c.addDocument(w.binderId, docs.id, 'kept.txt', 'v1 content');
  writeRunConfig(w);
  expect((await sync(w)).code).toBe(0);
  const trashDir = path.join(w.stateDir, 'main', 'trash');
  fs.mkdirSync(trashDir, { recursive: true });
  expect(chattr('+i', trashDir)).toBe(true);
  immutable.push(trashDir);

  c.addVersion(doc.id, 'v2 content, from the service');
  daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '500' } });
  const d = daemon;
  const failed = await d.waitForLog(msgHas('action failed'), 15_000, 'the failed download');
  const said = JSON.stringify(failed.err);
  expect(said).toContain(`the pair's trash ${trashDir} cannot take it (EPERM)`);
  expect(said).toContain('the local file was left as it was');
  expect(said).not.toMatch(/immutable or append-only file/); // not the local file's fault
  expect(readLocal(w, 'Docs/kept.txt')).toBe('v1 content');
  // The hold is said by the pass after the failure (a poll every 0.5 s).
  const held = /Docs\/kept\.txt +remote-change-not-downloaded: the local file's old content could not be kept in the trash \(EPERM: the pair's trash .* cannot take/;
  let shown = '';
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && !held.test(shown); await new Promise((r) => setTimeout(r, 300))) {
    shown = (await runCli(w, ['status', '--config', w.configFile])).stdout;
  }
  expect(shown, d.tail()).toMatch(held);

  // Mended: the next pass sees that the trash takes files again (nothing about the local file changed).
  expect(chattr('-i', trashDir)).toBe(true);
  immutable.length = 0;
  await eventually(() => readLocal(w, 'Docs/kept.txt') === 'v2 content, from the service', 8_000, 'the download once the trash can take the old content', d.tail);
  const inTrash = fs.readdirSync(trashDir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
  expect(inTrash.map((e) => fs.readFileSync(path.join(e.parentPath, e.name), 'utf8'))).toEqual(['v1 content']);
});
