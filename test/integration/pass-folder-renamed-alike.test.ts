// A folder renamed alike on both sides (the user's `mv` here, the same rename on the service), then a file in it
// saved by a program that writes a new file (`sed -i`: a new inode). Real passes, real state DB, the emulator on
// loopback, the real sed. The file is the document's by its place: its edit is the document's next version, not
// a keep-both conflict copy nor a second document (black-box round 37c, F1/F2).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { listTrashEntries } from '../../src/local/trash-entries.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await emu?.close();
});

/** Folder Docs/F with x.txt and z.txt, synced by a first pass. */
async function synced(name: string): Promise<{ p: TestPair; folder: string; x: string; at: (rel: string) => string }> {
  const p = await openTestPair(emu, name);
  const c = emu.control;
  const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
  const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
  const x = c.addDocument(p.binderId, folder, 'x.txt', 'original x\n').document.id;
  c.addDocument(p.binderId, folder, 'z.txt', 'untouched z\n');
  expect((await runPass(p.rt)).converged).toBe(true);
  return { p, folder, x, at: (rel) => path.join(p.local, ...rel.split('/')) };
}

/**
 * Folder Docs/F on the service and the files `names` (content "original <name>", z "untouched z") written here, synced
 * up by a first pass of a pair with `pairYaml`; the documents' ids by file name.
 */
async function syncedUp<const N extends readonly string[]>(name: string, pairYaml: string, names: N): Promise<{ p: TestPair; folder: string; at: (rel: string) => string; ids: { -readonly [K in keyof N]: string } }> {
  const p = await openTestPair(emu, name, pairYaml);
  const at = (rel: string) => path.join(p.local, ...rel.split('/'));
  const c = emu.control;
  const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
  const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
  fs.mkdirSync(at('Docs/F'), { recursive: true });
  for (const n of names) fs.writeFileSync(at(`Docs/F/${n}.txt`), n === 'z' ? 'untouched z\n' : `original ${n}\n`);
  expect((await runPass(p.rt)).converged).toBe(true);
  const ids = names.map((n) => c.listDocuments(p.binderId).find((d) => d.fileName === `${n}.txt`)!.id) as { -readonly [K in keyof N]: string };
  return { p, folder, at, ids };
}

/** Every version's content of a document, oldest first. */
function versions(documentId: string): string[] {
  return emu.control.listVersions(documentId).map((v) => emu.control.readContent(documentId, v.id).toString('utf8'));
}

/** Local files under dir, "rel: content", sorted. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => `${path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/')}: ${fs.readFileSync(path.join(e.parentPath, e.name), 'utf8').trim()}`)
    .sort();
}

/** Document names of the binder, "folder-path/name", sorted. */
function remoteNames(binderId: string): string[] {
  const folders = new Map(emu.control.listFolders(binderId).map((f) => [f.id, f]));
  const pathOf = (id: string | null): string => {
    const f = id === null ? undefined : folders.get(id);
    return f === undefined ? '' : `${pathOf(f.parentId)}${f.name}/`;
  };
  return emu.control.listDocuments(binderId).map((d) => `${pathOf(d.folderId)}${d.fileName}`).sort();
}

/** A pass after the service's changes (the folder tree read again) that must converge cleanly: no failed step, no issue, no conflict. */
async function cleanPass(p: TestPair): Promise<void> {
  p.rt.cache.foldersAt = 0;
  const r = await runPass(p.rt);
  expect(r.execution?.failures).toEqual([]);
  expect(r.issues).toEqual([]);
  expect(r.plan.groups.flat().filter((a) => a.kind === 'conflict')).toEqual([]);
  expect(r.converged).toBe(true);
}

/** Names a and b of directory `dir` swapped here (`mv a t; mv b a; mv t b`): each file keeps its inode. */
function swapHere(at: (rel: string) => string, dir: string, a: string, b: string): void {
  fs.renameSync(at(`${dir}/${a}.txt`), at(`${dir}/t.txt`));
  fs.renameSync(at(`${dir}/${b}.txt`), at(`${dir}/${a}.txt`));
  fs.renameSync(at(`${dir}/t.txt`), at(`${dir}/${b}.txt`));
}

/** The same swap on the service: document `first` (named aName) and `second` (named bName) trade names. */
function swapOnService(first: string, second: string, aName: string, bName: string): void {
  emu.control.renameDocument(first, 't.txt');
  emu.control.renameDocument(second, aName);
  emu.control.renameDocument(first, bName);
}

function sedInPlace(file: string): void {
  const before = fs.lstatSync(file).ino;
  execFileSync('sed', ['-i', 's/original/edited with sed/', file]);
  expect(fs.lstatSync(file).ino).not.toBe(before); // sed -i writes a new file and renames it over the old one
}

// [what the service did besides the folder's rename, the document's name after it]
const ALIKE_CASES: Array<[string, string | null]> = [
  ['renamed alike, then saved by sed -i before the next pass: the edit is the next version, no conflict copy', null],
  ["the document renamed on the service too: the file moves to the new name and its edit is that document's next version", 'y.txt'],
];
it.each(ALIKE_CASES)('%s', async (_name, renamedTo) => {
  const { p, folder, x, at } = await synced(`alike-sed-${renamedTo ?? 'same'}`);
  try {
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    emu.control.renameFolder(folder, 'G');
    if (renamedTo !== null) emu.control.renameDocument(x, renamedTo);
    sedInPlace(at('Docs/G/x.txt'));
    await cleanPass(p);
    const name = renamedTo ?? 'x.txt';
    expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
    expect(remoteNames(p.binderId)).toEqual([`Docs/G/${name}`, 'Docs/G/z.txt']);
    expect(filesUnder(at('Docs'))).toEqual([`G/${name}: edited with sed x`, 'G/z.txt: untouched z']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it("renamed here first (the old folder restored by a pass, a colleague's version downloaded into it), edited, then renamed alike on the service: the edit is kept both ways, the colleague's version stays the latest (black-box round 38b, F1)", async () => {
  const { p, folder, x, at } = await synced('alike-restored');
  try {
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    const first = await runPass(p.rt);
    // The service cannot rename: the old paths are restored, the new folder's files wait for a remote folder.
    expect(first.issues.filter((i) => i.code === 'waiting-for-remote-folder').map((i) => i.relPath).sort()).toEqual(['Docs/G/x.txt', 'Docs/G/z.txt']);
    expect(filesUnder(at('Docs'))).toEqual(['F/x.txt: original x', 'F/z.txt: untouched z', 'G/x.txt: original x', 'G/z.txt: untouched z']);
    emu.control.addVersion(x, "a colleague's x\n");
    await runPass(p.rt);
    expect(fs.readFileSync(at('Docs/F/x.txt'), 'utf8')).toBe("a colleague's x\n");
    sedInPlace(at('Docs/G/x.txt')); // edited from the original, never having seen the colleague's version
    emu.control.renameFolder(folder, 'G');
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.converged).toBe(true);
    // Not uploaded over the colleague's version as if edited from it: kept both ways, nothing superseded unsaid.
    expect(versions(x)).toEqual(['original x\n', "a colleague's x\n"]);
    const names = remoteNames(p.binderId);
    expect(names.filter((n) => !n.includes('(conflict'))).toEqual(['Docs/G/x.txt', 'Docs/G/z.txt']);
    expect(names.filter((n) => n.includes('(conflict'))).toHaveLength(1);
    const local = filesUnder(at('Docs'));
    expect(local).toContain("G/x.txt: a colleague's x");
    expect(local.filter((l) => l.includes('(conflict')).map((l) => l.split(': ')[1])).toEqual(['edited with sed x']);
    expect(fs.existsSync(at('Docs/F'))).toBe(false);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each([false, true])('renamed here first (the old folder restored by a pass), edited, then renamed alike on the service: the edit is the next version, the restored copies go to the trash (round 38c); a restart in between: %s', async (restart) => {
  const { p, folder, x, at } = await synced(`alike-restored-same-version-${restart}`);
  try {
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    await runPass(p.rt);
    expect(filesUnder(at('Docs'))).toEqual(['F/x.txt: original x', 'F/z.txt: untouched z', 'G/x.txt: original x', 'G/z.txt: untouched z']);
    // What a pass restored is kept in the state DB, so that a restarted process knows it too.
    expect(Object.keys(JSON.parse(p.rt.store.getMeta('restoredVersions') ?? '{}') as object).length).toBe(2);
    if (restart) await p.reopen();
    sedInPlace(at('Docs/G/x.txt'));
    emu.control.renameFolder(folder, 'G');
    await expectEditTakenRestoredTrashed(p, x, at, 'F');
    // Both rows moved on (x to its next version, z to the folder's new place): nothing is remembered any more.
    expect(p.rt.store.getMeta('restoredVersions')).toBeUndefined();
  } finally {
    await p.close();
  }
});

it("renamed here first (the old folder restored by a pass), edited, then renamed on the service in two steps, through another name first (the restored copies follow it), to the user's name: the edit is the next version, the restored copies go to the trash (black-box round 43c, F1: each edit a conflict copy, the files set back)", async () => {
  const { p, folder, x, at } = await synced('alike-restored-two-steps');
  try {
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    await runPass(p.rt);
    expect(filesUnder(at('Docs'))).toEqual(['F/x.txt: original x', 'F/z.txt: untouched z', 'G/x.txt: original x', 'G/z.txt: untouched z']);
    emu.control.renameFolder(folder, 'H');
    p.rt.cache.foldersAt = 0;
    await runPass(p.rt);
    // The restored copies followed the service's first rename; the user's files wait in G.
    expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: original x', 'G/z.txt: untouched z', 'H/x.txt: original x', 'H/z.txt: untouched z']);
    sedInPlace(at('Docs/G/x.txt'));
    emu.control.renameFolder(folder, 'G');
    await expectEditTakenRestoredTrashed(p, x, at, 'H');
  } finally {
    await p.close();
  }
});

/**
 * The next pass after the service renamed the folder to G, where the user's renamed folder is: x's edit (by sed -i in
 * G) is its next version, no conflict, and the restored copies (in `copiesIn`) went to the trash.
 */
async function expectEditTakenRestoredTrashed(p: TestPair, x: string, at: (rel: string) => string, copiesIn: string): Promise<void> {
  p.rt.cache.foldersAt = 0;
  const r = await runPass(p.rt);
  expect(r.execution?.failures).toEqual([]);
  expect(r.plan.groups.flat().filter((a) => a.kind === 'conflict')).toEqual([]);
  expect(r.converged).toBe(true);
  expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
  expect(remoteNames(p.binderId)).toEqual(['Docs/G/x.txt', 'Docs/G/z.txt']);
  expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: edited with sed x', 'G/z.txt: untouched z']);
  expect(listTrashEntries(p.rt.trash.dir).entries.map((e) => e.originalPath).sort()).toEqual([`Docs/${copiesIn}/x.txt`, `Docs/${copiesIn}/z.txt`]);
  expect((await runPass(p.rt)).plan.groups).toEqual([]);
}

// [how the file is edited, the document's name on the service after the rename]
const UPLOAD_CASES: Array<[string, string | null]> = [
  ['sed -i', null],
  ['sed -i', 'y.txt'],
  ['in place', 'y.txt'],
];
it.each(UPLOAD_CASES)("an upload-only pair, the folder renamed alike, the file edited (%s), the document's name after: %s: one pass records it and uploads the edit, no second document (black-box round 38b, F5b)", async (how, renamedTo) => {
  const p = await openTestPair(emu, `alike-upload-${how.replace(/\W/g, '')}-${renamedTo ?? 'same'}`, 'direction: upload');
  const at = (rel: string) => path.join(p.local, ...rel.split('/'));
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
    const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
    fs.mkdirSync(at('Docs/F'), { recursive: true });
    fs.writeFileSync(at('Docs/F/x.txt'), 'original x\n');
    fs.writeFileSync(at('Docs/F/z.txt'), 'untouched z\n');
    expect((await runPass(p.rt)).converged).toBe(true);
    const x = c.listDocuments(p.binderId).find((d) => d.fileName === 'x.txt')!.id;
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    emu.control.renameFolder(folder, 'G');
    if (renamedTo !== null) emu.control.renameDocument(x, renamedTo);
    if (how === 'sed -i') sedInPlace(at('Docs/G/x.txt'));
    else fs.writeFileSync(at('Docs/G/x.txt'), 'edited with sed x\n');
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.issues.map((i) => `${i.relPath} ${i.code}`)).toEqual(renamedTo === null ? [] : [`Docs/G/${renamedTo} upload-only`]);
    expect(r.converged).toBe(true);
    expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
    expect(remoteNames(p.binderId)).toEqual([`Docs/G/${renamedTo ?? 'x.txt'}`, 'Docs/G/z.txt']);
    // An upload-only pair changes no local file.
    expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: edited with sed x', 'G/z.txt: untouched z']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each(['y', 'x and y'])('a chain of renames in the folder renamed alike (y -> w, then x -> y on the service), %s saved by sed -i: each edit is its own document\'s next version, no copy (round 38c, M4)', async (edited) => {
  const { p, folder, x, at } = await synced(`alike-chain-${edited.replace(/\W/g, '')}`);
  try {
    const c = emu.control;
    const y = c.addDocument(p.binderId, folder, 'y.txt', 'original y\n').document.id;
    expect((await runPass(p.rt)).converged).toBe(true);
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    c.renameFolder(folder, 'G');
    c.renameDocument(y, 'w.txt');
    c.renameDocument(x, 'y.txt');
    sedInPlace(at('Docs/G/y.txt'));
    if (edited === 'x and y') sedInPlace(at('Docs/G/x.txt'));
    await cleanPass(p);
    expect(versions(y)).toEqual(['original y\n', 'edited with sed y\n']);
    expect(versions(x)).toEqual(edited === 'y' ? ['original x\n'] : ['original x\n', 'edited with sed x\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/w.txt', 'Docs/G/y.txt', 'Docs/G/z.txt']);
    const xNow = edited === 'y' ? 'original x' : 'edited with sed x';
    expect(filesUnder(at('Docs'))).toEqual(['G/w.txt: edited with sed y', `G/y.txt: ${xNow}`, 'G/z.txt: untouched z']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it('names swapped alike on both sides (mv x t; mv z x; mv t z, the same on the service), then one saved by sed -i: its edit is its document\'s next version, no copy (round 37c F2\'s swaps)', async () => {
  const { p, x, at } = await synced('swap-alike-sed');
  try {
    const c = emu.control;
    const z = c.listDocuments(p.binderId).find((d) => d.fileName === 'z.txt')!.id;
    swapHere(at, 'Docs/F', 'x', 'z');
    swapOnService(x, z, 'x.txt', 'z.txt');
    fs.writeFileSync(at('Docs/F/x.txt'), 'untouched z, with an original line\n');
    sedInPlace(at('Docs/F/x.txt')); // z's file, now at x.txt
    await cleanPass(p);
    expect(versions(z)).toEqual(['untouched z\n', 'untouched z, with an edited with sed line\n']);
    expect(versions(x)).toEqual(['original x\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/F/x.txt', 'Docs/F/z.txt']);
    expect(filesUnder(at('Docs'))).toEqual(['F/x.txt: untouched z, with an edited with sed line', 'F/z.txt: original x']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each([['another edit', 'edited here x\n'], ['the same bytes', 'edited there x\n']])("an upload-only pair, the folder renamed alike, a colleague's version and %s here: compared and settled as a conflict, local-wins, listed; equal bytes make no version (black-box round 39b, F3)", async (_what, mine) => {
  const p = await openTestPair(emu, `alike-upload-conflict-${mine.length}`, 'direction: upload');
  const at = (rel: string) => path.join(p.local, ...rel.split('/'));
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
    const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
    fs.mkdirSync(at('Docs/F'), { recursive: true });
    fs.writeFileSync(at('Docs/F/x.txt'), 'original x\n');
    expect((await runPass(p.rt)).converged).toBe(true);
    const x = c.listDocuments(p.binderId)[0]!.id;
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    c.renameFolder(folder, 'G');
    c.addVersion(x, 'edited there x\n');
    fs.writeFileSync(at('Docs/G/x.txt'), mine);
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.converged).toBe(true);
    const same = mine === 'edited there x\n';
    expect(versions(x)).toEqual(same ? ['original x\n', 'edited there x\n'] : ['original x\n', 'edited there x\n', mine]);
    if (!same) expect(p.rt.store.listConflicts().map((k) => k.relPath)).toEqual(['Docs/G/x.txt']);
    expect(filesUnder(at('Docs'))).toEqual([`G/x.txt: ${mine.trim()}`]);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it('an upload-only pair, a file renamed alike (mv x.txt w.txt, the same on the service), then saved by sed -i: one pass makes its edit the next version (black-box round 39b, F10)', async () => {
  const p = await openTestPair(emu, 'rename-alike-upload-sed', 'direction: upload');
  const at = (rel: string) => path.join(p.local, ...rel.split('/'));
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
    c.createFolder(p.binderId, { name: 'F', parentId: docs });
    fs.mkdirSync(at('Docs/F'), { recursive: true });
    fs.writeFileSync(at('Docs/F/x.txt'), 'original x\n');
    expect((await runPass(p.rt)).converged).toBe(true);
    const x = c.listDocuments(p.binderId)[0]!.id;
    fs.renameSync(at('Docs/F/x.txt'), at('Docs/F/w.txt'));
    c.renameDocument(x, 'w.txt');
    sedInPlace(at('Docs/F/w.txt'));
    await cleanPass(p);
    expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/F/w.txt']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it('renamed here first (the old folder restored by a pass), edited, renamed alike on the service, and the pass that trashed the restored copy stopped before its upload (a crash): the next pass still makes the edit the next version (black-box round 39b, F9)', async () => {
  const { p, folder, x, at } = await synced('alike-restored-crash');
  try {
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    await runPass(p.rt);
    sedInPlace(at('Docs/G/x.txt'));
    emu.control.renameFolder(folder, 'G');
    // What the crashed pass left: the restored copies trashed (their directory still there), the rows as they were.
    fs.rmSync(at('Docs/F/x.txt'));
    fs.rmSync(at('Docs/F/z.txt'));
    await p.reopen();
    await cleanPass(p);
    expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/x.txt', 'Docs/G/z.txt']);
    expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: edited with sed x', 'G/z.txt: untouched z']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each([{ edited: [] as string[] }, { edited: ['a.txt', 'b.txt', 'c.txt'] }])('a chain of three renames in the folder renamed alike (c -> w, b -> c, a -> b on the service), sed -i over $edited: each file follows its own document, no copy (black-box round 39b, F5)', async ({ edited }) => {
  const p = await openTestPair(emu, `alike-chain3-${edited.length}`);
  const at = (rel: string) => path.join(p.local, ...rel.split('/'));
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
    const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
    const ids = new Map(['a', 'b', 'c'].map((n) => [n, c.addDocument(p.binderId, folder, `${n}.txt`, `original ${n}\n`).document.id]));
    expect((await runPass(p.rt)).converged).toBe(true);
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    c.renameFolder(folder, 'G');
    c.renameDocument(ids.get('c')!, 'w.txt');
    c.renameDocument(ids.get('b')!, 'c.txt');
    c.renameDocument(ids.get('a')!, 'b.txt');
    if (edited.length > 0) execFileSync('sed', ['-i', 's/original/edited with sed/', ...edited], { cwd: at('Docs/G') });
    await cleanPass(p);
    const now = (n: string) => (edited.length > 0 ? `edited with sed ${n}` : `original ${n}`);
    for (const n of ['a', 'b', 'c']) expect(versions(ids.get(n)!)).toEqual(edited.length > 0 ? [`original ${n}\n`, `${now(n)}\n`] : [`original ${n}\n`]);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/b.txt', 'Docs/G/c.txt', 'Docs/G/w.txt']);
    expect(filesUnder(at('Docs'))).toEqual([`G/b.txt: ${now('a')}`, `G/c.txt: ${now('b')}`, `G/w.txt: ${now('c')}`]);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each([{ edit: false }, { edit: true }])('renamed here first (the old folder restored by a pass), then alike on the service with a chain of renames (y -> w, x -> y), edited: $edit: each file follows its own document, the restored copies go to the trash (black-box round 39b, F6)', async ({ edit }) => {
  const { p, folder, x, at } = await synced(`alike-restored-chain-${edit}`);
  try {
    const c = emu.control;
    const y = c.addDocument(p.binderId, folder, 'y.txt', 'original y\n').document.id;
    expect((await runPass(p.rt)).converged).toBe(true);
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    await runPass(p.rt);
    expect(filesUnder(at('Docs/F'))).toEqual(['x.txt: original x', 'y.txt: original y', 'z.txt: untouched z']);
    if (edit) execFileSync('sed', ['-i', 's/original/edited with sed/', 'x.txt', 'y.txt'], { cwd: at('Docs/G') });
    c.renameFolder(folder, 'G');
    c.renameDocument(y, 'w.txt');
    c.renameDocument(x, 'y.txt');
    await cleanPass(p);
    const now = (n: string) => (edit ? `edited with sed ${n}` : `original ${n}`);
    expect(versions(x)).toEqual(edit ? ['original x\n', 'edited with sed x\n'] : ['original x\n']);
    expect(versions(y)).toEqual(edit ? ['original y\n', 'edited with sed y\n'] : ['original y\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/w.txt', 'Docs/G/y.txt', 'Docs/G/z.txt']);
    expect(filesUnder(at('Docs'))).toEqual([`G/w.txt: ${now('y')}`, `G/y.txt: ${now('x')}`, 'G/z.txt: untouched z']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each([{ edit: false }, { edit: true }])('names swapped on the service (x <-> z) inside the folder renamed alike, x edited by sed -i: $edit: each file ends at its document\'s name, nothing lost, no copy (black-box round 39b, F7)', async ({ edit }) => {
  const { p, folder, x, at } = await synced(`alike-swap-in-folder-${edit}`);
  try {
    const c = emu.control;
    const z = c.listDocuments(p.binderId).find((d) => d.fileName === 'z.txt')!.id;
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    c.renameFolder(folder, 'G');
    swapOnService(x, z, 'x.txt', 'z.txt');
    if (edit) sedInPlace(at('Docs/G/x.txt'));
    p.rt.cache.foldersAt = 0;
    let r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.plan.groups.flat().filter((a) => a.kind === 'conflict')).toEqual([]);
    // A modified file in the cycle goes up first, and the cycle is broken at it next pass (as for rows).
    if (!r.converged) r = await runPass(p.rt);
    expect(r.converged).toBe(true);
    expect(versions(x)).toEqual(edit ? ['original x\n', 'edited with sed x\n'] : ['original x\n']);
    expect(versions(z)).toEqual(['untouched z\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/x.txt', 'Docs/G/z.txt']);
    expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: untouched z', `G/z.txt: ${edit ? 'edited with sed x' : 'original x'}`]);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

// [the pair's setting that forgets a document whose file is gone here, what is done to the files after the local move]
const MOVED_FIRST_CASES = [
  ['direction: upload', 'no edit'], ['direction: upload', 'both saved by sed -i'], ['direction: upload', 'both saved by sed -i, seen by a pass first'],
  // (Saved by sed -i too, a two-way pair keeps both: the folder it put back at the old name stops the place rule.)
  ['localDeletePolicy: forget', 'no edit'],
  // Every file of the folder saved anew: no inode left to find them by, nor a sibling to tell the folder's place;
  // the earlier pass's record of where each waits does (black-box round 41b, B3).
  ['direction: upload', 'every file saved by sed -i, seen by a pass first'], ['localDeletePolicy: forget', 'every file saved by sed -i, seen by a pass first'],
] as const;
it.each(MOVED_FIRST_CASES)("%s, the folder renamed here first (a pass sees it), then on the service with a chain of renames (y -> w, x -> y), %s: the rows wait with their files, and each document gets only its own file's content (black-box round 39b, F4)", async (setting, edits) => {
  const upload = setting === 'direction: upload';
  const { p, folder, at, ids: [x, y, z] } = await syncedUp(`moved-first-${upload ? 'upload' : 'forget'}-${edits.replace(/\W/g, '')}`, setting, ['x', 'y', 'z']);
  try {
    const c = emu.control;
    // The daemon's usual order: the local move is seen (a pass runs) before the service's renames.
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    const passes = [await runPass(p.rt)];
    // The files saved by a program that writes a new file while they wait: found by their place (z's file went there).
    const sedBoth = () => ['x', 'y'].forEach((n) => sedInPlace(at(`Docs/G/${n}.txt`)));
    if (edits === 'both saved by sed -i, seen by a pass first') {
      sedBoth();
      passes.push(await runPass(p.rt));
    }
    if (edits === 'every file saved by sed -i, seen by a pass first') {
      ['x', 'y', 'z'].forEach((n) => sedInPlace(at(`Docs/G/${n}.txt`)));
      passes.push(await runPass(p.rt));
    }
    for (const [n, waiting] of passes.entries()) {
      // Nothing forgotten, nothing uploaded (a two-way pair puts the emptied folder back: its remote folder is there).
      expect(waiting.plan.groups.flat().map((a) => a.kind)).toEqual(upload || n > 0 ? [] : ['mkdir-local']);
      expect(waiting.issues.map((i) => `${i.relPath} ${i.code} ${i.documentId}`).sort()).toEqual([
        `Docs/G/x.txt waiting-for-remote-folder ${x}`, `Docs/G/y.txt waiting-for-remote-folder ${y}`, `Docs/G/z.txt waiting-for-remote-folder ${z}`,
      ]);
      expect(waiting.issues[0]!.detail).toMatch(/^no remote folder for "Docs\/G" yet; .*\(moved here from "Docs\/F\/x\.txt"/);
    }
    c.renameFolder(folder, 'G');
    c.renameDocument(y, 'w.txt');
    c.renameDocument(x, 'y.txt');
    if (edits === 'both saved by sed -i') sedBoth();
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.converged).toBe(true);
    const edited = edits === 'no edit' ? [] : ['edited with sed'];
    expect(versions(x)).toEqual(['original x\n', ...edited.map((e) => `${e} x\n`)]);
    expect(versions(y)).toEqual(['original y\n', ...edited.map((e) => `${e} y\n`)]);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/w.txt', 'Docs/G/y.txt', 'Docs/G/z.txt']);
    expect(versions(z)).toEqual(['untouched z\n']);
    if (upload) {
      // An upload-only pair changes no local file; the rows follow them (the service's names are upload-only notes).
      expect(r.issues.map((i) => `${i.relPath} ${i.code}`).sort()).toEqual(['Docs/G/w.txt upload-only', 'Docs/G/y.txt upload-only']);
      expect([p.rt.store.getBase(x)?.relPath, p.rt.store.getBase(y)?.relPath]).toEqual(['Docs/G/x.txt', 'Docs/G/y.txt']);
    } else {
      // A two-way pair moves each file on to its document's new name.
      expect(r.issues).toEqual([]);
      const e = edits === 'no edit' ? 'original' : 'edited with sed';
      expect(filesUnder(at('Docs'))).toEqual([`G/w.txt: ${e} y`, `G/y.txt: ${e} x`, 'G/z.txt: untouched z']);
    }
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each(['direction: upload', 'localDeletePolicy: forget'].flatMap((setting) => [[setting, 'no pass'], [setting, 'a pass']]))("%s, two files moved into a new local folder G (a pass sees them wait), both saved by sed -i (%s between) and then swapped here, then the service renames F to G and swaps the two names too: no document gets the other's edit (black-box round 42a, FAIL 1: the places remembered from the wait, taken for the files' own, gave each document the other's edit; 43a, F2: with the new files seen waiting, each edit is its document's)", async (setting, between) => {
  const { p, folder, at, ids: [x, y] } = await syncedUp(`waited-swap-${setting.replace(/\W/g, '')}-${between.replace(' ', '')}`, setting, ['x', 'y', 'z']);
  try {
    const c = emu.control;
    fs.mkdirSync(at('Docs/G'));
    for (const n of ['x', 'y']) fs.renameSync(at(`Docs/F/${n}.txt`), at(`Docs/G/${n}.txt`));
    expect((await runPass(p.rt)).issues.map((i) => `${i.relPath} ${i.code}`).sort()).toEqual(['Docs/G/x.txt waiting-for-remote-folder', 'Docs/G/y.txt waiting-for-remote-folder']);
    for (const n of ['x', 'y']) sedInPlace(at(`Docs/G/${n}.txt`));
    if (between === 'a pass') expect((await runPass(p.rt)).plan.groups.flat().filter((a) => a.kind !== 'mkdir-local')).toEqual([]);
    swapHere(at, 'Docs/G', 'x', 'y');
    c.renameFolder(folder, 'G');
    swapOnService(x, y, 'x.txt', 'y.txt');
    for (let i = 0; i < 3; i++) {
      p.rt.cache.foldersAt = 0;
      expect((await runPass(p.rt)).execution?.failures ?? []).toEqual([]);
    }
    // Each document holds only its own content; every edit is somewhere: in its document, or a copy kept both ways.
    expect(versions(x).every((v) => /^(original|edited with sed) x\n$/.test(v))).toBe(true);
    expect(versions(y).every((v) => /^(original|edited with sed) y\n$/.test(v))).toBe(true);
    const everything = [...c.listDocuments(p.binderId).flatMap((d) => versions(d.id)), ...filesUnder(at('Docs')).map((f) => `${f.slice(f.indexOf(': ') + 2)}\n`)];
    expect(everything).toContain('edited with sed x\n');
    expect(everything).toContain('edited with sed y\n');
    if (between === 'a pass') {
      // The files a pass saw waiting are known by their inodes: exact, each edit in its own document, no copy.
      expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
      expect(versions(y)).toEqual(['original y\n', 'edited with sed y\n']);
      expect(c.listDocuments(p.binderId)).toHaveLength(3);
    }
  } finally {
    await p.close();
  }
});

it.each(['swap', 'rotation'] as const)("an upload-only pair, the folder renamed here (a pass sees the files wait), every file saved by sed -i, then the service renames the folder alike with a %s of the names inside (none here): no document gets another's edit; the files are kept in doubt, not uploaded (black-box round 43a, F6)", async (svc) => {
  const { p, folder, at, ids: [x, y, z] } = await syncedUp(`waited-doubt-${svc}`, 'direction: upload', ['x', 'y', 'z']);
  try {
    const c = emu.control;
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    expect((await runPass(p.rt)).issues.map((i) => i.code)).toEqual(['waiting-for-remote-folder', 'waiting-for-remote-folder', 'waiting-for-remote-folder']);
    for (const n of ['x', 'y', 'z']) sedInPlace(at(`Docs/G/${n}.txt`));
    c.renameFolder(folder, 'G');
    if (svc === 'swap') swapOnService(x, y, 'x.txt', 'y.txt');
    else {
      c.renameDocument(x, 't.txt');
      c.renameDocument(z, 'x.txt');
      c.renameDocument(y, 'z.txt');
      c.renameDocument(x, 'y.txt');
    }
    const moved = svc === 'swap' ? ['x', 'y'] : ['x', 'y', 'z'];
    for (let i = 0; i < 3; i++) {
      p.rt.cache.foldersAt = 0;
      const r = await runPass(p.rt);
      expect(r.execution?.failures ?? []).toEqual([]);
      expect(r.issues.filter((i) => i.code !== 'upload-only').map((i) => `${i.relPath} ${i.code}`).sort()).toEqual(moved.map((n) => `Docs/G/${n}.txt unknown-state`));
      expect(r.converged).toBe(false);
    }
    // No document holds another file's edit, and no row was forgotten; every edit is still here.
    for (const [id, n] of [[x, 'x'], [y, 'y'], [z, 'z']] as const) {
      expect(versions(id).every((v) => v === `original ${n}\n` || v === `untouched ${n}\n` || v === `edited with sed ${n}\n`)).toBe(true);
      expect(p.rt.store.getBase(id)).toBeDefined();
    }
    expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: edited with sed x', 'G/y.txt: edited with sed y', 'G/z.txt: untouched z']);
  } finally {
    await p.close();
  }
});

it.each(['direction: upload', 'localDeletePolicy: forget'].flatMap((setting) => [[setting, 'a pass'], [setting, 'no pass']]))("%s, the folder renamed here (a pass sees the files wait), every file saved by sed -i (%s between), the folder renamed here again (a pass), then the service renames the folder to that name with a chain of renames inside: each document gets only its own file's edit (black-box rounds 42b, F1 and 43a, F1: the rows were forgotten, one document got another's edit)", async (setting, between) => {
  const upload = setting === 'direction: upload';
  const { p, folder, at, ids: [x, y, z] } = await syncedUp(`waited-twice-${upload ? 'upload' : 'forget'}-${between.replace(' ', '')}`, setting, ['x', 'y', 'z']);
  try {
    const c = emu.control;
    const waiting = async (dir: string) => {
      const r = await runPass(p.rt);
      expect(r.plan.groups.flat().filter((a) => a.kind !== 'mkdir-local')).toEqual([]);
      expect(r.issues.map((i) => `${i.relPath} ${i.code} ${i.documentId}`).sort()).toEqual([x, y, z].map((id, n) => `Docs/${dir}/${'xyz'[n]}.txt waiting-for-remote-folder ${id}`));
    };
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    await waiting('G');
    for (const n of ['x', 'y', 'z']) sedInPlace(at(`Docs/G/${n}.txt`));
    if (between === 'a pass') await waiting('G');
    fs.renameSync(at('Docs/G'), at('Docs/H'));
    await waiting('H');
    c.renameFolder(folder, 'H');
    c.renameDocument(y, 'w.txt');
    c.renameDocument(x, 'y.txt');
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.converged).toBe(true);
    expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
    expect(versions(y)).toEqual(['original y\n', 'edited with sed y\n']);
    expect(versions(z)).toEqual(['untouched z\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/H/w.txt', 'Docs/H/y.txt', 'Docs/H/z.txt']);
    if (!upload) expect(filesUnder(at('Docs'))).toEqual(['H/w.txt: edited with sed y', 'H/y.txt: edited with sed x', 'H/z.txt: untouched z']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it("an upload-only pair, a folder renamed here that the service then gets as a new, empty folder: a local move after all, each file a new document there and the old ones no longer synced (39b F4's other end)", async () => {
  const { p, at, ids: [x] } = await syncedUp('moved-first-upload-new-folder', 'direction: upload', ['x']);
  try {
    const c = emu.control;
    const docs = c.listFolders(p.binderId).find((f) => f.name === 'Docs')!.id;
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    expect((await runPass(p.rt)).issues.map((i) => i.code)).toEqual(['waiting-for-remote-folder']);
    c.createFolder(p.binderId, { name: 'G', parentId: docs });
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.issues.map((i) => `${i.relPath} ${i.code}`)).toEqual(['Docs/F/x.txt local-delete-not-propagated']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/F/x.txt', 'Docs/G/x.txt']);
    expect(p.rt.store.getBase(x)).toBeUndefined();
    expect(versions(c.listDocuments(p.binderId).find((d) => d.id !== x)!.id)).toEqual(['original x\n']);
  } finally {
    await p.close();
  }
});

it("an upload-only pair, a hard link made at the name the service then gives the document (ln x.txt w.txt, x -> w): converged with the rename as a note, and an edit through the link goes up as the next version (black-box round 39c, N-E)", async () => {
  const { p, at, ids: [x] } = await syncedUp('hard-link-upload', 'direction: upload', ['x']);
  try {
    await linkedAtServiceName(p, at, x);
    fs.appendFileSync(at('Docs/F/w.txt'), 'more\n');
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(versions(x)).toEqual(['original x\n', 'original x\nmore\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/F/w.txt']);
  } finally {
    await p.close();
  }
});

// [case, what is made at the name the service gave x (x -> w)]: an upload-only pair, x.txt untouched.
const NEW_FILE_AT_SERVICE_NAME = [
  ["a copy made to follow the rename (the same bytes): the document's file under its new name, the old name a new document (black-box round 41b, B4)", 'copy'],
  ["the link saved by sed -i (other bytes): a path collision, nothing sent (black-box round 43b, F1: taken as the next version, as an unrelated file was)", 'link-sed'],
  ["an unrelated file that only has that name: a path collision, the document's content stays (black-box round 43b, F1: it became the document's next version)", 'unrelated'],
] as const;

it.each(NEW_FILE_AT_SERVICE_NAME)('an upload-only pair, the service renames x to w, and at w: %s', async (_, made) => {
  const { p, at, ids: [x] } = await syncedUp(`new-at-service-name-${made}`, 'direction: upload', ['x']);
  try {
    if (made === 'link-sed') {
      await linkedAtServiceName(p, at, x);
      sedInPlace(at('Docs/F/w.txt'));
    } else {
      emu.control.renameDocument(x, 'w.txt');
      if (made === 'copy') fs.copyFileSync(at('Docs/F/x.txt'), at('Docs/F/w.txt'));
      else fs.writeFileSync(at('Docs/F/w.txt'), 'an unrelated file\n');
    }
    for (let i = 0; i < 3; i++) {
      const r = await runPass(p.rt);
      expect(r.execution?.failures ?? []).toEqual([]);
      const open = r.issues.filter((i) => i.code !== 'upload-only').map((i) => `${i.relPath} ${i.code}`);
      expect(open).toEqual(made === 'copy' ? [] : ['Docs/F/w.txt path-collision']);
    }
    // The document's content is never replaced by another file's.
    expect(versions(x)).toEqual(['original x\n']);
    if (made === 'copy') {
      expect(p.rt.store.getBase(x)?.relPath).toBe('Docs/F/w.txt');
      expect(remoteNames(p.binderId)).toEqual(['Docs/F/w.txt', 'Docs/F/x.txt']);
      const old = emu.control.listDocuments(p.binderId).find((d) => d.fileName === 'x.txt')!.id;
      expect(versions(old)).toEqual(['original x\n']);
    } else {
      expect(remoteNames(p.binderId)).toEqual(['Docs/F/w.txt']);
    }
  } finally {
    await p.close();
  }
});

it("an upload-only pair, a chain of renames on the service (y -> v, then x -> y) and a copy of x made at v: no document gets another's file; the copy stays a path collision (black-box round 43a, F3: Y got x's bytes, X got y's untouched file, x a third document)", async () => {
  const { p, at, ids: [x, y] } = await syncedUp('chain-copy-upload', 'direction: upload', ['x', 'y']);
  try {
    const c = emu.control;
    c.renameDocument(y, 'v.txt');
    c.renameDocument(x, 'y.txt');
    await runPass(p.rt);
    fs.copyFileSync(at('Docs/F/x.txt'), at('Docs/F/v.txt'));
    for (let i = 0; i < 3; i++) {
      const r = await runPass(p.rt);
      expect(r.execution?.failures ?? []).toEqual([]);
      expect(r.issues.filter((i) => i.code !== 'upload-only').map((i) => `${i.relPath} ${i.code}`)).toEqual(['Docs/F/v.txt path-collision']);
    }
    expect(versions(x)).toEqual(['original x\n']);
    expect(versions(y)).toEqual(['original y\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/F/v.txt', 'Docs/F/y.txt']);
    expect(filesUnder(at('Docs'))).toEqual(['F/v.txt: original x', 'F/x.txt: original x', 'F/y.txt: original y']);
  } finally {
    await p.close();
  }
});

/** `ln x.txt w.txt` here and the service's x -> w: two passes with nothing to do but the rename's upload-only note. */
async function linkedAtServiceName(p: TestPair, at: (rel: string) => string, x: string): Promise<void> {
  fs.linkSync(at('Docs/F/x.txt'), at('Docs/F/w.txt'));
  emu.control.renameDocument(x, 'w.txt');
  for (let i = 0; i < 2; i++) {
    const r = await runPass(p.rt);
    expect(r.issues.map((i) => `${i.relPath} ${i.code}`)).toEqual(['Docs/F/w.txt upload-only']);
    expect(r.plan.groups).toEqual([]);
    expect(r.converged).toBe(true);
  }
}

// [case, what the user and the service did]: an upload-only pair, one pass, exit 0, each edit its own document's.
const UPLOAD_ONE_PASS_CASES = [
  ['names swapped alike (x <-> y on both sides), then x.txt (y\'s file now) saved by sed -i', 'swap'],
  ['x.txt alone moved into a new local folder G (y.txt stays in F), the service renames folder F to G, then x saved by sed -i', 'partial'],
] as const;
it.each(UPLOAD_ONE_PASS_CASES)('an upload-only pair, %s: one pass (black-box round 39b, F10)', async (_what, how) => {
  const { p, folder, at, ids: [x, y] } = await syncedUp(`upload-one-pass-${how}`, 'direction: upload', ['x', 'y']);
  try {
    const c = emu.control;
    if (how === 'swap') {
      swapHere(at, 'Docs/F', 'x', 'y');
      swapOnService(x, y, 'x.txt', 'y.txt');
      sedInPlace(at('Docs/F/x.txt'));
    } else {
      fs.mkdirSync(at('Docs/G'));
      fs.renameSync(at('Docs/F/x.txt'), at('Docs/G/x.txt'));
      c.renameFolder(folder, 'G');
      sedInPlace(at('Docs/G/x.txt'));
    }
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.issues.filter((i) => i.code !== 'upload-only')).toEqual([]);
    expect(r.converged).toBe(true);
    if (how === 'swap') {
      expect(versions(y)).toEqual(['original y\n', 'edited with sed y\n']);
      expect(versions(x)).toEqual(['original x\n']);
    } else {
      expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
      expect(versions(y)).toEqual(['original y\n']);
    }
    expect(remoteNames(p.binderId)).toEqual(how === 'swap' ? ['Docs/F/x.txt', 'Docs/F/y.txt'] : ['Docs/G/x.txt', 'Docs/G/y.txt']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each(['direction: both', 'direction: upload'])('%s: names swapped alike inside a folder renamed alike (F -> G, x <-> y on both sides), then x.txt (y\'s file now) saved by sed -i: one pass, y\'s edit its next version, no copy (black-box round 39c, N-D)', async (setting) => {
  const { p, folder, at, ids: [x, y] } = await syncedUp(`swap-in-renamed-${setting.slice(11)}`, setting, ['x', 'y']);
  try {
    const c = emu.control;
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    swapHere(at, 'Docs/G', 'x', 'y');
    c.renameFolder(folder, 'G');
    swapOnService(x, y, 'x.txt', 'y.txt');
    sedInPlace(at('Docs/G/x.txt'));
    await cleanPass(p);
    expect(versions(y)).toEqual(['original y\n', 'edited with sed y\n']);
    expect(versions(x)).toEqual(['original x\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/x.txt', 'Docs/G/y.txt']);
    expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: edited with sed y', 'G/y.txt: original x']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

// [names swapped or rotated on the service, whether the user made the same renames here]
const AMBIGUOUS_CYCLES = [['swapped', 'here too'], ['swapped', 'only on the service'], ['rotated', 'here too'], ['rotated', 'only on the service']] as const;
it.each(AMBIGUOUS_CYCLES)("names %s inside a folder renamed alike (%s), every file saved by sed -i: nothing tells whose each file is, so none goes up as a document's version; each edit is kept as a conflict copy (black-box rounds 39c C1, 40b A6)", async (how, where) => {
  const p = await openTestPair(emu, `ambiguous-${how}-${where.replace(/\W/g, '')}`);
  const at = (rel: string) => path.join(p.local, ...rel.split('/'));
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
    const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
    const [x, y, z] = ['x', 'y', 'z'].map((n) => c.addDocument(p.binderId, folder, `${n}.txt`, `${n.toUpperCase()}: original\n`).document.id) as [string, string, string];
    expect((await runPass(p.rt)).converged).toBe(true);
    const names = new Map([[x, 'x'], [y, 'y'], [z, 'z']]);
    // swapped: x <-> z; rotated: x -> y -> z -> x (each document takes the next one's name).
    const next = how === 'swapped' ? new Map([[x, 'z'], [z, 'x']]) : new Map([[x, 'y'], [y, 'z'], [z, 'x']]);
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    c.renameFolder(folder, 'G');
    for (const id of next.keys()) c.renameDocument(id, `t-${names.get(id)!}.txt`);
    for (const [id, to] of next) c.renameDocument(id, `${to}.txt`);
    if (where === 'here too') {
      for (const id of next.keys()) fs.renameSync(at(`Docs/G/${names.get(id)!}.txt`), at(`Docs/G/t-${names.get(id)!}.txt`));
      for (const [id, to] of next) fs.renameSync(at(`Docs/G/t-${names.get(id)!}.txt`), at(`Docs/G/${to}.txt`));
    }
    for (const n of ['x', 'y', 'z']) sedInPlace(at(`Docs/G/${n}.txt`));
    p.rt.cache.foldersAt = 0;
    for (let i = 0; i < 2; i++) expect((await runPass(p.rt)).execution?.failures ?? []).toEqual([]);
    const last = await runPass(p.rt);
    expect(last.plan.groups).toEqual([]);
    expect(last.converged).toBe(true);
    // No document has another's content in its history, and every edit is on the service and here.
    for (const [id, n] of names) for (const v of versions(id)) expect(v.startsWith(`${n.toUpperCase()}:`), `${n}: ${v}`).toBe(true);
    const everywhere = c.listDocuments(p.binderId).flatMap((d) => versions(d.id));
    const here = filesUnder(at('Docs'));
    for (const n of ['X', 'Y', 'Z']) {
      expect(everywhere, n).toContain(`${n}: edited with sed\n`);
      expect(here.some((f) => f.endsWith(`: ${n}: edited with sed`)), n).toBe(true);
    }
  } finally {
    await p.close();
  }
});

// [how the copies were made]. As new files (cp x t; cp y x; cp t y after rm: no inode left, as an overlayfs copy-up
// too: black-box round 40b, A2), or onto the files (`cp y x` writes into x: each keeps its inode and birth time, so
// each row's own file at its own path reads as an edit made in place; an upload-only pair sent each document the
// other's content: round 41b, B1).
const COPY_SWAPS = {
  'as new files': (at: (rel: string) => string) => {
    fs.copyFileSync(at('Docs/F/x.txt'), at('Docs/F/t.txt'));
    fs.rmSync(at('Docs/F/x.txt'));
    fs.copyFileSync(at('Docs/F/y.txt'), at('Docs/F/x.txt'));
    fs.rmSync(at('Docs/F/y.txt'));
    fs.copyFileSync(at('Docs/F/t.txt'), at('Docs/F/y.txt'));
    fs.rmSync(at('Docs/F/t.txt'));
  },
  'onto the files': (at: (rel: string) => string) => {
    const inodes = [fs.statSync(at('Docs/F/x.txt')).ino, fs.statSync(at('Docs/F/y.txt')).ino];
    const tx = fs.readFileSync(at('Docs/F/x.txt'));
    fs.writeFileSync(at('Docs/F/x.txt'), fs.readFileSync(at('Docs/F/y.txt')));
    fs.writeFileSync(at('Docs/F/y.txt'), tx);
    expect([fs.statSync(at('Docs/F/x.txt')).ino, fs.statSync(at('Docs/F/y.txt')).ino]).toEqual(inodes);
  },
};
it.each(['direction: upload', 'direction: both'].flatMap((setting) => (Object.keys(COPY_SWAPS) as Array<keyof typeof COPY_SWAPS>).map((how) => [setting, how] as const)))("%s: names swapped alike by copying %s, no edit: each file is its document's by its bytes, nothing sent", async (setting, how) => {
  const { p, at, ids: [x, y] } = await syncedUp(`swap-by-copy-${setting.slice(11)}-${how.replace(/ /g, '-')}`, setting, ['x', 'y']);
  try {
    COPY_SWAPS[how](at);
    swapOnService(x, y, 'x.txt', 'y.txt');
    await cleanPass(p);
    expect(versions(x)).toEqual(['original x\n']);
    expect(versions(y)).toEqual(['original y\n']);
    expect(filesUnder(at('Docs'))).toEqual(['F/x.txt: original y', 'F/y.txt: original x']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

// Two documents with the same bytes (a template copied twice), their names swapped on the service only, one file
// saved here as a new file (sed -i): the other file, unmoved and unchanged at its own row's path, holds exactly
// the edited document's last synced bytes too. Taken for that document's file renamed alike (the bytes rule of
// 40b A2), the edit went to the other document (black-box round 41b, B2).
it.each(['', 'EMPTY'])('direction: both: identical files %s, names swapped on the service only, one saved anew here: the edit is its own document\'s (black-box round 41b, B2)', async (empty) => {
  const p = await openTestPair(emu, `identical-swap-${empty || 'text'}`);
  try {
    const c = emu.control;
    const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
    const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
    const same = empty === '' ? 'template original\n' : '';
    const a = c.addDocument(p.binderId, folder, 'a.txt', same).document.id;
    const b = c.addDocument(p.binderId, folder, 'b.txt', same).document.id;
    c.addDocument(p.binderId, folder, 'z.txt', 'untouched z\n');
    expect((await runPass(p.rt)).converged).toBe(true);
    const at = (rel: string) => path.join(p.local, ...rel.split('/'));
    swapOnService(a, b, 'a.txt', 'b.txt');
    // sed -i: a new file renamed over a.txt (a new inode)
    fs.writeFileSync(at('Docs/F/.a.new'), 'a edit\n');
    fs.renameSync(at('Docs/F/.a.new'), at('Docs/F/a.txt'));
    p.rt.cache.foldersAt = 0;
    await runPass(p.rt);
    await runPass(p.rt);
    expect(versions(a)).toEqual([same, 'a edit\n']);
    expect(versions(b)).toEqual([same]);
    expect(filesUnder(at('Docs'))).toEqual(['F/a.txt: ' + same.trim(), 'F/b.txt: a edit', 'F/z.txt: untouched z'].sort());
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});


// Black-box round 41a, FAIL 3 (a regression of 52f41ea): a two-way `forget` pair, `mv F G` and `sed -i G/x` before
// a pass, the service's `F -> G` after it. The pass put the emptied F back (its remote folder was there), which
// stopped the place rule, and x's edit became a keep-both conflict copy. Where x waited is remembered.
it('localDeletePolicy: forget, mv F G then sed -i on a file before a pass, then the service renames F alike: the edit is the document\'s next version (black-box round 41a, FAIL 3)', async () => {
  const { p, folder, at, ids: [x, z] } = await syncedUp('moved-first-forget-sed-before', 'localDeletePolicy: forget', ['x', 'z']);
  try {
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    sedInPlace(at('Docs/G/x.txt'));
    const waiting = await runPass(p.rt);
    expect(waiting.issues.map((i) => `${i.relPath} ${i.code} ${i.documentId}`).sort()).toEqual([`Docs/G/x.txt waiting-for-remote-folder ${x}`, `Docs/G/z.txt waiting-for-remote-folder ${z}`]);
    emu.control.renameFolder(folder, 'G');
    await cleanPass(p);
    expect(versions(x)).toEqual(['original x\n', 'edited with sed x\n']);
    expect(versions(z)).toEqual(['untouched z\n']);
    expect(remoteNames(p.binderId)).toEqual(['Docs/G/x.txt', 'Docs/G/z.txt']);
    expect(filesUnder(at('Docs'))).toEqual(['G/x.txt: edited with sed x', 'G/z.txt: untouched z']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

// The same swap by copying onto the files, then one of them edited in place: the other file holds exactly its
// document's bytes at the document's new name, so the edited one is what the copies left, by elimination. Read by
// path, each document got the other's content as a version and the local swap was undone (black-box round 41b, B1).
it('direction: both: names swapped alike by copying onto the files, then one edited in place: the edit is its own document\'s, the swap stays (black-box round 41b, B1)', async () => {
  const { p, at, ids: [x, y] } = await syncedUp('swap-by-copy-onto-edit', 'direction: both', ['x', 'y']);
  try {
    COPY_SWAPS['onto the files'](at);
    fs.appendFileSync(at('Docs/F/x.txt'), 'appended\n'); // in place: x.txt keeps its inode
    swapOnService(x, y, 'x.txt', 'y.txt');
    await cleanPass(p);
    expect(versions(x)).toEqual(['original x\n']);
    expect(versions(y)).toEqual(['original y\n', 'original y\nappended\n']);
    expect(filesUnder(at('Docs'))).toEqual(['F/x.txt: original y\nappended', 'F/y.txt: original x']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});
