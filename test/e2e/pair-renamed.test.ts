// A pair renamed in the config (its name names its state), with its folder moved too, or two pairs' names swapped,
// through the real CLI and daemon (child processes) against the emulator: refused (exit 2) with nothing made in the
// stateDir, and the `mv` commands of the hint, run as printed by a shell, keep the record: a document deleted on the
// service meanwhile stays deleted, nothing is uploaded (black-box round 31a, F3, F9, F13).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import { createWorkspace, runCli, sync, type CliResult, type Workspace } from './harness.js';
import { msgHas, startDaemonProcess, type DaemonProcess } from './run-helpers.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  daemon = undefined;
  await ws?.close();
  ws = undefined;
});

const check = (w: Workspace) => runCli(w, ['check', '--config', w.configFile]);
const status = (w: Workspace) => runCli(w, ['status', '--config', w.configFile]);

/** The commands of a refusal's hint ("... rename the state: mv -T 'a' 'b' && mv -T ..."), as printed. */
function hintCommands(r: CliResult, after: string): string {
  const m = new RegExp(`${after}: (mv -T '[^']*' '[^']*'(?: && mv -T '[^']*' '[^']*')*)`).exec(r.stderr);
  expect(m, r.stderr).not.toBeNull();
  return (m as RegExpExecArray)[1] as string;
}

/** Runs a hint's commands as a user pastes them into a shell. */
function runInShell(commands: string): void {
  execFileSync('sh', ['-c', commands], { stdio: 'pipe' });
}

/** Pair main synced with Docs/gone.txt and Docs/edited.txt; then a colleague deletes one and edits the other. */
async function syncedThenChangedRemotely(): Promise<Workspace> {
  const w = await createWorkspace();
  const c = w.emulator.control;
  const docs = c.createFolder(w.binderId, { name: 'Docs' });
  const gone = c.addDocument(w.binderId, docs.id, 'gone.txt', 'deleted by a colleague later').document;
  const edited = c.addDocument(w.binderId, docs.id, 'edited.txt', 'v1').document;
  expect((await sync(w)).code).toBe(0);
  c.deleteDocument(gone.id);
  c.addVersion(edited.id, 'v2 from a colleague');
  return w;
}

/** The record was kept: the colleague's edit came down, the deleted document did not come back, nothing went up. */
function recordKept(w: Workspace, local = w.local): void {
  expect(fs.readFileSync(path.join(local, 'Docs', 'edited.txt'), 'utf8')).toBe('v2 from a colleague');
  expect(fs.existsSync(path.join(local, 'Docs', 'gone.txt'))).toBe(false);
  expect(w.emulator.control.listDocuments(w.binderId).map((d) => d.fileName).sort()).toEqual(['edited.txt']);
}

it('a renamed pair refused by sync, check and a daemon makes nothing under its new name; the hint, run as printed, keeps the record (F3)', async () => {
  ws = await syncedThenChangedRemotely();
  const w = ws;
  const newDir = path.join(w.stateDir, 'work');
  w.writeConfig({ name: 'work' });
  const refused = await sync(w);
  expect(refused.code, refused.stderr).toBe(2);
  expect(refused.stderr).toContain('was the pair renamed?');
  // Nothing was made for the refused pair: the hint's `mv` moved the old state into such a directory.
  expect(fs.existsSync(newDir)).toBe(false);
  expect((await check(w)).code).toBe(2);
  expect(fs.existsSync(newDir)).toBe(false);

  // A daemon started on the renamed config: the pair is refused (and retried), nothing is made for it either;
  // status shows why from the daemon's status file.
  daemon = startDaemonProcess(w);
  const d = daemon;
  await d.waitForLog(msgHas('was the pair renamed?'), 15_000, 'the refusal');
  let shown = '';
  for (const until = Date.now() + 15_000; Date.now() < until && !/^ {2}last error +pair work: has no state yet, .* was the pair renamed\?/m.test(shown); ) shown = (await status(w)).stdout;
  expect(shown).toMatch(/^ {2}last error +pair work: has no state yet, .* was the pair renamed\?/m);
  expect(shown).toMatch(/^ {2}state +error/m);
  expect(fs.existsSync(newDir)).toBe(false);
  d.kill('SIGTERM');
  expect((await d.exited).code).toBe(0);
  expect(fs.existsSync(newDir)).toBe(false);

  const commands = hintCommands(refused, 'rename the state');
  expect(commands).toBe(`mv -T '${path.join(w.stateDir, 'main')}' '${newDir}'`);
  runInShell(commands);
  const after = await sync(w);
  expect(after.code, after.stderr).toBe(0);
  recordKept(w);
});

it('a record moved into the new name\'s directory (a plain mv onto the empty state an older version left) is found, and its hint puts it in place (F3)', async () => {
  ws = await syncedThenChangedRemotely();
  const w = ws;
  const oldDir = path.join(w.stateDir, 'main');
  const newDir = path.join(w.stateDir, 'work');
  w.writeConfig({ name: 'work' });
  // What a refused sync of an older version left: an empty state DB under the new name.
  StateStore.open(path.join(newDir, 'state.db')).close();
  const refused = await sync(w);
  expect(refused.code, refused.stderr).toBe(2);
  // A plain `mv` would move the record into it: the hint moves the empty one aside first.
  expect(hintCommands(refused, 'rename the state')).toBe(`mv -T '${newDir}' '${newDir}.before-rename' && mv -T '${oldDir}' '${newDir}'`);

  fs.renameSync(oldDir, path.join(newDir, 'main')); // `mv main work`, as the earlier hint said
  const inside = await sync(w);
  expect(inside.code, inside.stderr).toBe(2);
  expect(inside.stderr).toContain(`pair work: has no state yet, but the state of pair main, which synced this same folder (${w.local}) with this same binder (${w.binderId}), is inside this pair's state directory (${path.join(newDir, 'main')})`);
  const k = await check(w);
  expect(k.code, k.stdout).toBe(2);
  expect(k.stdout).toMatch(/^FAIL {2}state \(pair work\): pair work: has no state yet, but the state of pair main, .* is inside this pair's state directory/m);

  runInShell(hintCommands(inside, 'rename the state'));
  expect(fs.readdirSync(w.stateDir).sort()).toEqual(expect.arrayContaining(['work', 'work.before-rename']));
  const after = await sync(w);
  expect(after.code, after.stderr).toBe(0);
  recordKept(w);
});

it('a pair renamed and its folder moved is refused as renamed; the hint keeps the record and the moved folder is taken (F9)', async () => {
  ws = await syncedThenChangedRemotely();
  const w = ws;
  const moved = path.join(w.dir, 'local-new');
  fs.renameSync(w.local, moved);
  w.writeConfig({ name: 'work', localPath: './local-new' });
  const refused = await sync(w);
  expect(refused.code, refused.stderr).toBe(2);
  expect(refused.stderr).toContain(`pair work: has no state yet, but the stateDir holds the state of pair main (${path.join(w.stateDir, 'main')}), which synced this same folder (then at ${w.local}, moved to ${moved} since) with this same binder (${w.binderId}): was the pair renamed?`);
  const k = await check(w);
  expect(k.code, k.stdout).toBe(2);
  expect(k.stdout).toMatch(/^FAIL {2}state \(pair work\): .*was the pair renamed\?/m);
  expect(fs.existsSync(path.join(w.stateDir, 'work'))).toBe(false);

  runInShell(hintCommands(refused, 'rename the state'));
  const after = await sync(w);
  expect(after.code, after.stderr).toBe(0);
  recordKept(w, moved);
});

it('two pairs whose names were swapped are each told so, with the mv commands that swap their states; after them both go on (F13)', async () => {
  ws = await createWorkspace();
  const w = ws;
  const c = w.emulator.control;
  const other = c.createBinder({ name: 'Other' }).id;
  const docs = c.createFolder(w.binderId, { name: 'Docs' });
  const gone = c.addDocument(w.binderId, docs.id, 'gone.txt', 'deleted later').document;
  c.addDocument(w.binderId, docs.id, 'kept.txt', 'kept');
  c.addDocument(other, c.createFolder(other, { name: 'O' }).id, 'other.txt', 'other binder');
  const pairs = (names: [string, string]) => [
    { name: names[0], localPath: './a', binderId: w.binderId },
    { name: names[1], localPath: './b', binderId: other },
  ];
  w.writeConfig({}, { pairs: pairs(['a', 'b']) });
  expect((await sync(w)).code).toBe(0);
  c.deleteDocument(gone.id);

  w.writeConfig({}, { pairs: pairs(['b', 'a']) });
  const refused = await sync(w);
  expect(refused.code, refused.stderr).toBe(2);
  const [a, b] = [path.join(w.stateDir, 'a'), path.join(w.stateDir, 'b')];
  const swap = `mv -T '${a}' '${a}.swapping' && mv -T '${b}' '${a}' && mv -T '${a}.swapping' '${b}'`;
  expect(refused.stderr).toContain(`pair b: its state (${b}) was synced with binder ${other} and the folder ${path.join(w.dir, 'b')}, while the state of pair a (${a}) synced this pair's binder (${w.binderId}) and folder (${path.join(w.dir, 'a')}): were the names of pairs a and b swapped in the config?`);
  expect(refused.stderr).toContain(`pair a: its state (${a}) was synced with binder ${w.binderId}`);
  expect(refused.stderr.split(swap)).toHaveLength(3); // the same commands in both errors
  expect(refused.stderr).not.toContain('set binderId back');
  const k = await check(w);
  expect(k.code, k.stdout).toBe(2);
  expect(k.stdout).toMatch(/^FAIL {2}state \(pair a\): .*were the names of pairs a and b swapped/m);
  expect(k.stdout).toMatch(/^FAIL {2}state \(pair b\): .*were the names of pairs a and b swapped/m);

  runInShell(hintCommands(refused, 'swap the states as well'));
  const after = await sync(w);
  expect(after.code, after.stderr).toBe(0);
  expect(fs.existsSync(path.join(w.dir, 'a', 'Docs', 'gone.txt'))).toBe(false);
  expect(c.listDocuments(w.binderId).map((d) => d.fileName).sort()).toEqual(['kept.txt']);
  expect(fs.readFileSync(path.join(w.dir, 'b', 'O', 'other.txt'), 'utf8')).toBe('other binder');
});

it('two pairs of one binder whose names were swapped are told so, not that the folder changed (F13)', async () => {
  ws = await createWorkspace();
  const w = ws;
  const c = w.emulator.control;
  c.addDocument(w.binderId, c.createFolder(w.binderId, { name: 'Docs' }).id, 'one.txt', 'one');
  const pairs = (names: [string, string]) => [
    { name: names[0], localPath: './a', binderId: w.binderId },
    { name: names[1], localPath: './b', binderId: w.binderId },
  ];
  w.writeConfig({}, { pairs: pairs(['a', 'b']) });
  expect((await sync(w)).code).toBe(0);
  w.writeConfig({}, { pairs: pairs(['b', 'a']) });
  const refused = await sync(w);
  expect(refused.code, refused.stderr).toBe(2);
  expect(refused.stderr).toContain(`pair b: its state (${path.join(w.stateDir, 'b')}) was synced with binder ${w.binderId} and the folder ${path.join(w.dir, 'b')}, while the state of pair a`);
  expect(refused.stderr).toContain('were the names of pairs a and b swapped in the config?');
  expect(refused.stderr).not.toContain('set localPath back');
  runInShell(hintCommands(refused, 'swap the states as well'));
  const after = await sync(w);
  expect(after.code, after.stderr).toBe(0);
  expect(after.stdout).not.toMatch(/upload|conflict/);
});
