// The tree digest (local/scanner.ts) on real temp trees: what a full scan records for the in-sync mark, and what
// a new process compares it with. Any change a full scan would see must change it; a tree it cannot vouch for
// has none.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createIgnoreMatcher } from '../../src/local/ignore.js';
import { scanLocal } from '../../src/local/scanner.js';
import { digestLocalTree } from '../../src/local/tree-digest.js';

let tmp: string;
let root: string;
const ignoreGlobs = ['*.bak', 'cache/'];
const ignore = createIgnoreMatcher(ignoreGlobs);

function write(rel: string, content: string): void {
  const abs = path.join(root, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
}

const digest = () => digestLocalTree({ root, caseInsensitive: false, ignoreGlobs });

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-digest-'));
  root = path.join(tmp, 'root');
  fs.mkdirSync(root);
  write('Reports/2026/q1.txt', 'first quarter');
  write('Reports/summary.md', '# summary');
  write('a-b.txt', 'sorts before a/');
  fs.mkdirSync(path.join(root, 'Empty'));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('digestLocalTree', () => {
  it('is what a full scan records, and stays the same while nothing changes', async () => {
    const d = await digest();
    expect(d).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    const scanned = await scanLocal({ root, caseInsensitive: false, ignore, prior: () => undefined });
    expect(scanned.digest).toBe(d);
    expect(await digest()).toBe(d);
    // A partial scan describes only some subtrees: it has no digest.
    expect((await scanLocal({ root, caseInsensitive: false, ignore, prior: () => undefined, subtrees: ['Reports'] })).digest).toBeUndefined();
  });

  it('counts the stats of every file of a large folder (past the first thousand, where the scratch space grows)', async () => {
    for (let i = 0; i < 1500; i++) write(`Big/f${String(i).padStart(4, '0')}.txt`, 'x');
    const seen = [await digest()];
    // A file among the first (copied when the space grew) and one past them: each changes the digest.
    for (const name of ['f0005.txt', 'f1400.txt']) {
      const file = path.join(root, 'Big', name);
      const { atime, mtime } = fs.statSync(file);
      fs.utimesSync(file, atime, new Date(mtime.getTime() + 2000));
      const d = await digest();
      expect(seen, name).not.toContain(d);
      seen.push(d);
    }
    expect((await scanLocal({ root, caseInsensitive: false, ignore, prior: () => undefined })).digest).toBe(seen.at(-1));
  });

  it('changes with every change a scan would see: content size, mtime, inode, a new file or folder, a rename', async () => {
    const seen = new Set([await digest()]);
    const expectNew = async (what: string) => {
      const d = await digest();
      expect(d, what).not.toBeNull();
      expect(seen.has(d as string), what).toBe(false);
      seen.add(d as string);
    };
    write('Reports/summary.md', '# summary, longer');
    await expectNew('size');
    const abs = path.join(root, 'Reports/summary.md');
    fs.utimesSync(abs, new Date(), new Date(Date.now() - 3_600_000));
    await expectNew('mtime');
    // Same size and mtime, another inode (a program that writes a new file and renames it over the old one).
    const st = fs.statSync(abs);
    fs.writeFileSync(`${abs}.new`, 'X'.repeat(st.size));
    fs.utimesSync(`${abs}.new`, st.atime, st.mtime);
    fs.renameSync(`${abs}.new`, abs);
    expect(fs.statSync(abs).mtimeMs).toBe(st.mtimeMs);
    await expectNew('inode');
    write('Reports/new.txt', '');
    await expectNew('new empty file');
    fs.mkdirSync(path.join(root, 'Empty', 'Sub'));
    await expectNew('new empty folder');
    fs.renameSync(path.join(root, 'Empty'), path.join(root, 'Vide'));
    await expectNew('folder rename');
    fs.renameSync(path.join(root, 'a-b.txt'), path.join(root, 'a-c.txt'));
    await expectNew('file rename');
  });

  it('ignores what the scan ignores', async () => {
    const d = await digest();
    write('notes.bak', 'ignored by the config');
    write('cache/x.bin', 'ignored folder');
    write('.DS_Store', 'ignored by the built-in rules');
    expect(await digest()).toBe(d);
  });

  it('is null when the scan would report a problem, or a file of the daemon is there', async () => {
    fs.symlinkSync('/etc/hostname', path.join(root, 'Reports', 'link'));
    expect(await digest()).toBeNull();
    expect((await scanLocal({ root, caseInsensitive: false, ignore, prior: () => undefined })).digest).toBeUndefined();
    fs.rmSync(path.join(root, 'Reports', 'link'));
    expect(await digest()).not.toBeNull();
    write('Reports/2026/.binder-sync-tmp-123', 'left by a crash');
    expect(await digest()).toBeNull();
    fs.rmSync(path.join(root, 'Reports/2026/.binder-sync-tmp-123'));
    write('Case.txt', 'one');
    write('case.txt', 'two');
    expect(await digestLocalTree({ root, caseInsensitive: true, ignoreGlobs })).toBeNull();
    expect(await digest()).not.toBeNull();
  });
});

describe('digestLocalTree on two threads (the compiled worker)', () => {
  it('gives the digest of a single walk, and still sees a change anywhere', async () => {
    // The worker runs compiled code: this test uses the build that `npm test` makes first.
    const dist = path.resolve('dist/local/tree-digest.js');
    expect(fs.existsSync(dist), 'run `npm run build` first').toBe(true);
    const built = (await import(dist)) as typeof import('../../src/local/tree-digest.js');
    for (let t = 0; t < 6; t++) for (let d = 0; d < 9; d++) for (let f = 0; f < 4; f++) write(`T${t}/D${d}/f${f}.txt`, `${t}${d}${f}`);
    write('T1/D1/deeper/x.txt', 'x');
    const many = { root, caseInsensitive: false, ignoreGlobs, expectedFiles: built.PARALLEL_FROM_FILES };
    const single = await digest();
    expect(await built.digestLocalTree(many)).toBe(single);
    // Every sub-tree walked by the worker (the main thread only listed the top): the same digest.
    const by = { main: 0, worker: 0 };
    expect(await built.digestLocalTree({ ...many, workerOnly: true, onSegment: (t) => by[t]++ })).toBe(single);
    expect(by.worker).toBeGreaterThanOrEqual(48);
    expect(by.main).toBe(0);
    expect(await built.digestLocalTree({ ...many, expectedFiles: 0 })).toBe(single);
    write('T5/D8/f3.txt', 'changed');
    const changed = await digest();
    expect(changed).not.toBe(single);
    expect(await built.digestLocalTree(many)).toBe(changed);
    write('T0/D0/.binder-sync-tmp-1', 'left by a crash');
    expect(await built.digestLocalTree(many)).toBeNull();
  });

  it('gives the digest of a single walk for an uneven tree, whichever thread takes which sub-tree', async () => {
    // Sub-trees are taken largest first, not in walk order: each result must still land in its walk-order place.
    const built = (await import(path.resolve('dist/local/tree-digest.js'))) as typeof import('../../src/local/tree-digest.js');
    write('a/b/c/d/e/f/g/deep.txt', 'deep chain');
    for (let d = 0; d < 40; d++) write(`wide/W${String(d).padStart(2, '0')}/one.txt`, `w${d}`);
    for (let d = 0; d < 12; d++) for (let s = 0; s < d; s++) write(`uneven/U${d}/S${s}/f.txt`, `${d}-${s}`);
    for (let f = 0; f < 30; f++) write(`flat-${f}.txt`, `flat ${f}`);
    write('z/only-a-file.txt', 'z');
    const many = { root, caseInsensitive: false, ignoreGlobs, expectedFiles: built.PARALLEL_FROM_FILES };
    const single = await digest();
    for (const workerOnly of [false, true]) {
      const by = { main: 0, worker: 0 };
      expect(await built.digestLocalTree({ ...many, workerOnly, onSegment: (t) => by[t]++ })).toBe(single);
      expect(by.main + by.worker).toBeGreaterThanOrEqual(48);
      if (workerOnly) expect(by.main).toBe(0);
    }
    write('uneven/U11/S10/f.txt', 'changed');
    const changed = await digest();
    expect(changed).not.toBe(single);
    expect(await built.digestLocalTree({ ...many, workerOnly: true })).toBe(changed);
  });

  it('takes a prewarmed worker, which never keeps the process alive when nothing takes it', async () => {
    const built = (await import(path.resolve('dist/local/tree-digest.js'))) as typeof import('../../src/local/tree-digest.js');
    for (let t = 0; t < 6; t++) for (let d = 0; d < 9; d++) write(`T${t}/D${d}/f.txt`, `${t}${d}`);
    const single = await digest();
    built.prewarmDigestWorker();
    expect(built.hasWarmWorker()).toBe(true);
    const by = { main: 0, worker: 0 };
    expect(await built.digestLocalTree({ root, caseInsensitive: false, ignoreGlobs, expectedFiles: built.PARALLEL_FROM_FILES, workerOnly: true, onSegment: (t) => by[t]++ })).toBe(single);
    expect(built.hasWarmWorker()).toBe(false);
    expect(by.worker).toBeGreaterThanOrEqual(48);
    // A process that prewarms, goes on for a while (the worker is up by then) and then takes another path exits
    // when its own work is done: the worker is unref'd.
    const script = `const m = await import(${JSON.stringify(pathToFileURL(path.resolve('dist/local/tree-digest.js')).href)}); m.prewarmDigestWorker(); if (!m.hasWarmWorker()) process.exit(3); setTimeout(() => {}, 500);`;
    const file = path.join(tmp, 'prewarm.mjs'); // a file, not --eval: a process running --eval exits when it is done, worker or not
    fs.writeFileSync(file, script);
    const started = Date.now();
    const child = spawnSync(process.execPath, [file], { timeout: 20_000 });
    expect(child.status).toBe(0);
    expect(Date.now() - started).toBeLessThan(8_000); // the unused worker is let go after 10 s at the latest
  });

  it('lets the event loop run between the sub-trees the main thread walks (the listing goes on beside it)', async () => {
    const built = (await import(path.resolve('dist/local/tree-digest.js'))) as typeof import('../../src/local/tree-digest.js');
    for (let t = 0; t < 6; t++) for (let d = 0; d < 9; d++) write(`T${t}/D${d}/f.txt`, `${t}${d}`);
    let turns = 0;
    let done = false;
    const turn = () => {
      turns++;
      if (!done) setImmediate(turn);
    };
    setImmediate(turn);
    const seenAt: number[] = [];
    await built.digestLocalTree({ root, caseInsensitive: false, ignoreGlobs, expectedFiles: built.PARALLEL_FROM_FILES, onSegment: (t) => void (t === 'main' && seenAt.push(turns)) });
    done = true;
    expect(seenAt.length).toBeGreaterThan(2);
    // Each sub-tree of the main thread is walked in an event-loop turn of its own.
    for (let i = 1; i < seenAt.length; i++) expect(seenAt[i]).toBeGreaterThan(seenAt[i - 1] as number);
  });
});
