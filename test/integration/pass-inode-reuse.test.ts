// A new file handed a freed inode number is no synced file moved there. ext4 gives a freed inode number to the next
// new file at once: `sed -i a b` renames its temp file over a (freeing a's old inode) just before it makes b's temp
// file, which gets that number. By the inode alone, b's new file read as a's document's own file moved to b: its
// edit went into the other document (black-box round 39b, F1/F2/F8). The birth time (statx) tells them apart.
// Real passes, real sed, a real state DB, the emulator on loopback.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { runPass } from '../../src/sync/pass.js';
import { openTestPair, type TestPair } from './pass-fixture.js';

let emu: Emulator;

beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await emu?.close();
});

/** Does the filesystem of the temp dir report birth times? Without them the inode alone decides (documented). */
function birthTimesKnown(): boolean {
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'born-'));
  try {
    fs.writeFileSync(path.join(probe, 'f'), 'x');
    return fs.statSync(path.join(probe, 'f')).birthtimeMs > 0;
  } finally {
    fs.rmSync(probe, { recursive: true, force: true });
  }
}

function versions(documentId: string): string[] {
  return emu.control.listVersions(documentId).map((v) => emu.control.readContent(documentId, v.id).toString('utf8').trim());
}

/** Folder Docs/F with the given files ("name" -> "T<NAME>: <name> original"), synced by a first pass; their ids. */
async function synced(p: TestPair, names: string[], uploadPair: boolean): Promise<{ folder: string; ids: Map<string, string>; at: (rel: string) => string }> {
  const c = emu.control;
  const at = (rel: string) => path.join(p.local, ...rel.split('/'));
  const docs = c.createFolder(p.binderId, { name: 'Docs' }).id;
  const folder = c.createFolder(p.binderId, { name: 'F', parentId: docs }).id;
  const text = (n: string) => `T${n.toUpperCase()}: ${n} original\n`;
  if (uploadPair) {
    fs.mkdirSync(at('Docs/F'), { recursive: true });
    for (const n of names) fs.writeFileSync(at(`Docs/F/${n}.txt`), text(n));
  } else for (const n of names) c.addDocument(p.binderId, folder, `${n}.txt`, text(n));
  expect((await runPass(p.rt)).converged).toBe(true);
  const ids = new Map(c.listDocuments(p.binderId).map((d) => [d.fileName.replace('.txt', ''), d.id]));
  return { folder, ids, at };
}

function sed(dir: string, files: string[]): void {
  execFileSync('sed', ['-i', 's/original/edit/', ...files], { cwd: dir });
}

it.skipIf(!birthTimesKnown())('upload-only pair, a chain of renames on the service in a folder renamed alike, sed -i over both files: each edit is its own document\'s next version (round 39b, F2)', async () => {
  const p = await openTestPair(emu, 'reuse-upload-chain', 'direction: upload');
  try {
    const { folder, ids, at } = await synced(p, ['x', 'y'], true);
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    emu.control.renameFolder(folder, 'G');
    emu.control.renameDocument(ids.get('y')!, 'w.txt');
    emu.control.renameDocument(ids.get('x')!, 'y.txt');
    sed(at('Docs/G'), ['x.txt', 'y.txt']); // y.txt's new file gets x.txt's old inode (where the filesystem reuses it)
    p.rt.cache.foldersAt = 0;
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.converged).toBe(true);
    expect(versions(ids.get('x')!)).toEqual(['TX: x original', 'TX: x edit']);
    expect(versions(ids.get('y')!)).toEqual(['TY: y original', 'TY: y edit']);
    expect(emu.control.listDocuments(p.binderId)).toHaveLength(2);
  } finally {
    await p.close();
  }
});

it.skipIf(!birthTimesKnown())('two-way pair, a chain of three renames on the service (c -> w, b -> c, a -> b), sed -i a b c here: each edit follows its own document (round 39b, F8)', async () => {
  const p = await openTestPair(emu, 'reuse-two-way-chain');
  try {
    const { ids, at } = await synced(p, ['a', 'b', 'c'], false);
    emu.control.renameDocument(ids.get('c')!, 'w.txt');
    emu.control.renameDocument(ids.get('b')!, 'c.txt');
    emu.control.renameDocument(ids.get('a')!, 'b.txt');
    sed(at('Docs/F'), ['a.txt', 'b.txt', 'c.txt']);
    const r = await runPass(p.rt);
    expect(r.execution?.failures).toEqual([]);
    expect(r.converged).toBe(true);
    expect(versions(ids.get('a')!)).toEqual(['TA: a original', 'TA: a edit']);
    expect(versions(ids.get('b')!)).toEqual(['TB: b original', 'TB: b edit']);
    expect(versions(ids.get('c')!)).toEqual(['TC: c original', 'TC: c edit']);
    expect(emu.control.listDocuments(p.binderId)).toHaveLength(3);
    const local = fs.readdirSync(at('Docs/F')).sort().map((n) => `${n}: ${fs.readFileSync(at(`Docs/F/${n}`), 'utf8').trim()}`);
    expect(local).toEqual(['b.txt: TA: a edit', 'c.txt: TB: b edit', 'w.txt: TC: c edit']);
    expect((await runPass(p.rt)).plan.groups).toEqual([]);
  } finally {
    await p.close();
  }
});

it.each(['upload', 'both'] as const)("%s pair: names swapped alike inside a folder renamed alike, one file then saved by sed -i: no document gets the other's content (round 39c, N-A)", async (direction) => {
  const p = await openTestPair(emu, `swap-in-renamed-folder-${direction}`, direction === 'upload' ? 'direction: upload' : '');
  try {
    const { folder, ids, at } = await synced(p, ['a', 'b'], direction === 'upload');
    fs.renameSync(at('Docs/F'), at('Docs/G'));
    emu.control.renameFolder(folder, 'G');
    fs.renameSync(at('Docs/G/a.txt'), at('Docs/G/t.txt'));
    fs.renameSync(at('Docs/G/b.txt'), at('Docs/G/a.txt'));
    fs.renameSync(at('Docs/G/t.txt'), at('Docs/G/b.txt'));
    emu.control.renameDocument(ids.get('a')!, 't.txt');
    emu.control.renameDocument(ids.get('b')!, 'a.txt');
    emu.control.renameDocument(ids.get('a')!, 'b.txt');
    sed(at('Docs/G'), ['b.txt']); // a's file, now at b.txt
    p.rt.cache.foldersAt = 0;
    for (let pass = 0; pass < 3; pass++) await runPass(p.rt);
    // Each document holds only its own content, whatever else a pass said.
    for (const n of ['a', 'b']) for (const v of versions(ids.get(n)!)) expect(v, `${n}: ${versions(ids.get(n)!).join(' | ')}`).toMatch(new RegExp(`^T${n.toUpperCase()}: `));
    expect(versions(ids.get('b')!).at(-1)).toBe('TB: b original');
    // The edit is a's next version (upload-only), or kept both ways (two-way: a conflict copy, as documented).
    if (direction === 'upload') expect(versions(ids.get('a')!).at(-1)).toBe('TA: a edit');
    else expect(emu.control.listDocuments(p.binderId).some((d) => versions(d.id).at(-1) === 'TA: a edit')).toBe(true);
  } finally {
    await p.close();
  }
});

it("upload-only pair, a chain of renames made alike (mv x w; mv y x, the same on the service), sed -i over both: each edit reaches its own document, none the other (round 39c, N)", async () => {
  const p = await openTestPair(emu, 'upload-chain-alike-sed', 'direction: upload');
  try {
    const { ids, at } = await synced(p, ['x', 'y'], true);
    fs.renameSync(at('Docs/F/x.txt'), at('Docs/F/w.txt'));
    fs.renameSync(at('Docs/F/y.txt'), at('Docs/F/x.txt'));
    emu.control.renameDocument(ids.get('x')!, 'w.txt');
    emu.control.renameDocument(ids.get('y')!, 'x.txt');
    sed(at('Docs/F'), ['x.txt', 'w.txt']);
    for (let pass = 0; pass < 3; pass++) await runPass(p.rt);
    for (const n of ['x', 'y']) for (const v of versions(ids.get(n)!)) expect(v, `${n}: ${versions(ids.get(n)!).join(' | ')}`).toMatch(new RegExp(`^T${n.toUpperCase()}: `));
    expect(versions(ids.get('x')!).at(-1)).toBe('TX: x edit');
    expect(versions(ids.get('y')!).at(-1)).toBe('TY: y edit');
    expect(emu.control.listDocuments(p.binderId)).toHaveLength(2);
    expect((await runPass(p.rt)).converged).toBe(true);
  } finally {
    await p.close();
  }
});
