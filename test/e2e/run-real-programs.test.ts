// Real programs writing into a watched folder: tar, sed -i, vim, rsync and a slow writer. Each file they
// produce must reach the service exactly once, complete, and none of their temp files may become a document.
// Run with the default watcher (auto: the folders backend) and with chokidar.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256 } from './harness.js';
import { has, remoteVersions, sleep, watchedFolderFixture } from './real-programs-helpers.js';
import { eventually } from './run-helpers.js';

const fx = watchedFolderFixture('real-programs-');
afterEach(() => fx.dispose());

const started = (watcher: 'auto' | 'chokidar') => fx.start(watcher === 'auto' ? {} : { pair: { watcher } });

// The two slow writers (a slow rsync of large files, a file written over two seconds) run with the default
// watcher only: they test the wait for a file to be still, which comes after the watcher and is the same for
// every backend (and they take 17 s of the suite's time).
describe.each(['auto', 'chokidar'] as const)('binder-sync run (watcher %s) with real programs writing into the folder', (watcher) => {
  it('tar x of 60 files uploads each once, complete', async () => {
    const { w, d } = await started(watcher);
    const src = path.join(fx.scratch, 'Docs');
    fs.mkdirSync(src);
    const want = new Map<string, string>();
    for (let i = 0; i < 60; i++) {
      const content = `file ${i} `.repeat(200 + i * 50);
      fs.writeFileSync(path.join(src, `t${i}.txt`), content);
      want.set(`t${i}.txt`, sha256(content));
    }
    execFileSync('tar', ['-cf', path.join(fx.scratch, 'docs.tar'), '-C', fx.scratch, 'Docs']);
    execFileSync('tar', ['-xf', path.join(fx.scratch, 'docs.tar'), '-C', w.local]);
    await eventually(() => remoteVersions(w).size === 60, 20_000, '60 documents', d.tail);
    await sleep(2_500);
    const remote = remoteVersions(w);
    expect(remote.size, d.tail()).toBe(60);
    for (const [name, hash] of want) expect(remote.get(name), name).toEqual([hash]);
  });

  it('sed -i and vim edits become one new version each; their temp and swap files never upload', async () => {
    const { w, d } = await started(watcher);
    const file = path.join(w.local, 'Docs', 'notes.txt');
    fs.writeFileSync(file, 'alpha\nbeta\ngamma\n');
    await eventually(() => remoteVersions(w).get('notes.txt')?.length === 1, 10_000, 'first upload', d.tail);

    execFileSync('sed', ['-i', 's/beta/BETA/', file]);
    await eventually(() => remoteVersions(w).get('notes.txt')?.length === 2, 10_000, 'sed edit uploaded', d.tail);

    if (has('vim')) {
      execFileSync('vim', ['-u', 'NONE', '-N', '-n', '-es', '-c', '%s/gamma/GAMMA/', '-c', 'wq', file], { stdio: 'ignore', timeout: 10_000 });
      await eventually(() => remoteVersions(w).get('notes.txt')?.length === 3, 10_000, 'vim edit uploaded', d.tail);
    }
    await sleep(2_500);
    const remote = remoteVersions(w);
    expect([...remote.keys()], d.tail()).toEqual(['notes.txt']);
    const versions = remote.get('notes.txt')!;
    expect(versions.at(-1)).toBe(sha256(fs.readFileSync(file)));
    expect(new Set(versions).size).toBe(versions.length);
  });

  it.skipIf(!has('rsync'))('rsync of a folder uploads each file once and none of its .name.XXXXXX temp files', async () => {
    const { w, d } = await started(watcher);
    const src = path.join(fx.scratch, 'src');
    fs.mkdirSync(src);
    const want = new Map<string, string>();
    for (let i = 0; i < 30; i++) {
      const content = Buffer.alloc(20_000 + i * 1000, i);
      fs.writeFileSync(path.join(src, `r${i}.bin`), content);
      want.set(`r${i}.bin`, sha256(content));
    }
    execFileSync('rsync', ['-a', `${src}/`, path.join(w.local, 'Docs') + '/']);
    await eventually(() => remoteVersions(w).size === 30, 20_000, '30 documents', d.tail);
    await sleep(2_500);
    const remote = remoteVersions(w);
    expect([...remote.keys()].sort(), d.tail()).toEqual([...want.keys()].sort());
    for (const [name, hash] of want) expect(remote.get(name), name).toEqual([hash]);

    // Updates: rsync -a (temp file + rename) and --inplace (same inode), both setting an mtime older than the
    // synced copy's, one of the same size. Each changed file gets exactly one new version.
    const history = new Map([...want].map(([name, hash]) => [name, [hash]]));
    const edit = (name: string, content: Buffer) => {
      fs.writeFileSync(path.join(src, name), content);
      fs.utimesSync(path.join(src, name), new Date('2020-01-02T03:04:05Z'), new Date('2020-01-02T03:04:05Z'));
      history.get(name)!.push(sha256(content));
    };
    edit('r1.bin', Buffer.alloc(21_000, 0xee)); // same size as before
    edit('r2.bin', Buffer.alloc(5_000, 0xdd));
    execFileSync('rsync', ['-a', `${src}/`, path.join(w.local, 'Docs') + '/']);
    edit('r3.bin', Buffer.alloc(23_000, 0xcc)); // same size, written in place
    execFileSync('rsync', ['-a', '--inplace', `${src}/`, path.join(w.local, 'Docs') + '/']);
    const updated = ['r1.bin', 'r2.bin', 'r3.bin'];
    await eventually(() => updated.every((n) => remoteVersions(w).get(n)?.length === 2), 20_000, 'three updates', d.tail);
    await sleep(2_500);
    const after = remoteVersions(w);
    expect([...after.keys()].sort(), d.tail()).toEqual([...want.keys()].sort());
    for (const [name, hashes] of history) expect(after.get(name), name).toEqual(hashes);
  });

  it.skipIf(!has('rsync') || watcher !== 'auto')('a slow rsync of large files (which the scan leaves to their upload to read) uploads each once, complete; an in-place update is one new version', async () => {
    const { w, d } = await started(watcher);
    const src = path.join(fx.scratch, 'src');
    fs.mkdirSync(src);
    const history = new Map<string, string[]>();
    const put = (name: string, content: Buffer) => {
      fs.writeFileSync(path.join(src, name), content);
      history.set(name, [...(history.get(name) ?? []), sha256(content)]);
    };
    // 6 MiB each, over the scan's 4 MiB threshold; --bwlimit makes rsync's temp files grow for about 3 s.
    put('big-a.bin', Buffer.alloc(6 << 20, 0xa1));
    put('big-b.bin', Buffer.alloc(6 << 20, 0xb2));
    execFileSync('rsync', ['-a', '--bwlimit=4000', `${src}/`, path.join(w.local, 'Docs') + '/']);
    await eventually(() => remoteVersions(w).size === 2, 20_000, '2 documents', d.tail);
    await sleep(2_500);
    expect(remoteVersions(w), d.tail()).toEqual(history);

    // Rewritten in place with the same size and an older mtime: the synced file is read again and changed.
    put('big-a.bin', Buffer.alloc(6 << 20, 0xc3));
    fs.utimesSync(path.join(src, 'big-a.bin'), new Date('2020-01-02T03:04:05Z'), new Date('2020-01-02T03:04:05Z'));
    execFileSync('rsync', ['-a', '--inplace', `${src}/`, path.join(w.local, 'Docs') + '/']);
    await eventually(() => remoteVersions(w).get('big-a.bin')?.length === 2, 20_000, 'the update', d.tail);
    await sleep(2_500);
    expect(remoteVersions(w), d.tail()).toEqual(history);
  });

  it.skipIf(watcher !== 'auto')('a file written slowly over two seconds is uploaded once, complete', async () => {
    const { w, d } = await started(watcher);
    const file = path.join(w.local, 'Docs', 'slow.log');
    const fd = fs.openSync(file, 'w');
    for (let i = 0; i < 8; i++) {
      fs.writeSync(fd, `chunk ${i}\n`.repeat(1000));
      await sleep(250);
    }
    fs.closeSync(fd);
    await eventually(() => remoteVersions(w).get('slow.log')?.length === 1, 10_000, 'slow file uploaded', d.tail);
    await sleep(2_500);
    expect(remoteVersions(w).get('slow.log'), d.tail()).toEqual([sha256(fs.readFileSync(file))]);
  });
});

describe('binder-sync run (default watcher) with folders removed and made again', () => {
  it('rm -r then mkdir -p of a synced folder tree: files written into it later still upload at once', async () => {
    const { w, d, folderId } = await started('auto');
    const c = w.emulator.control;
    const r = c.createFolder(w.binderId, { name: 'r', parentId: folderId });
    const s = c.createFolder(w.binderId, { name: 's', parentId: r.id });
    c.addDocument(w.binderId, s.id, 'kept.txt', 'on the service');
    c.addDocument(w.binderId, folderId, 'elsewhere.txt', 'keeps the tree from looking emptied');
    await eventually(() => fs.existsSync(path.join(w.local, 'Docs/r/s/kept.txt')) && fs.existsSync(path.join(w.local, 'Docs/elsewhere.txt')), 20_000, 'the remote tree downloaded', d.tail);
    // Made again at once, as a script or a build does: the new folders may get the old ones' inode numbers back
    // (ext4 often gives them; the watcher-level test of that case is in local-watcher.test.ts).
    execFileSync('sh', ['-c', 'rm -r Docs/r && mkdir -p Docs/r/s'], { cwd: w.local });
    // The removed file comes back from the service (localDeletePolicy: restore); then a few quiet polls, after
    // which the daemon looks into a folder again only when its watcher reports something there.
    await eventually(() => fs.existsSync(path.join(w.local, 'Docs/r/s/kept.txt')), 10_000, 'the removed file restored', d.tail);
    await sleep(5_000);
    fs.writeFileSync(path.join(w.local, 'Docs/r/s/late.txt'), 'written after the folders came back');
    fs.writeFileSync(path.join(w.local, 'Docs/r/later.txt'), 'one level up');
    // Well before any periodic rescan: only the watcher can have reported them.
    await eventually(() => c.listDocuments(w.binderId).filter((x) => ['late.txt', 'later.txt'].includes(x.fileName)).length === 2, 10_000, 'both files uploaded', d.tail);
    const byName = new Map(c.listDocuments(w.binderId).map((x) => [x.fileName, x]));
    expect(byName.get('late.txt')?.folderId).toBe(s.id);
    expect(byName.get('later.txt')?.folderId).toBe(r.id);
  });
});
