// scanLocal on real temp trees: hashing, re-use of prior hashes, ignore rules, and every kind of problem.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import { createIgnoreMatcher } from '../../src/local/ignore.js';
import { scanLocal, type PriorFile, type ScanOptions } from '../../src/local/scanner.js';
import type { LocalObservation } from '../../src/sync/model.js';

let tmp: string;
let root: string;
const isRoot = process.getuid?.() === 0;
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

function write(rel: string, content: string | Buffer): void {
  const abs = path.join(root, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
}

async function scan(over: Partial<ScanOptions> = {}): Promise<{ obs: LocalObservation; hashed: string[] }> {
  const hashed: string[] = [];
  const obs = await scanLocal({
    root,
    caseInsensitive: false,
    ignore: createIgnoreMatcher(['*.bak']),
    prior: () => undefined,
    onHash: (p) => hashed.push(p),
    ...over,
  });
  return { obs, hashed: hashed.sort() };
}

/** A prior lookup built from an earlier observation, as the base would provide it. */
function priorOf(obs: LocalObservation): (key: string) => PriorFile | undefined {
  return (key) => obs.files.get(key);
}

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-scan-'));
  root = path.join(tmp, 'root');
  fs.mkdirSync(root);
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('scanLocal', () => {
  it('gives the inode of every directory it walked (what a directory move checks before it moves one)', async () => {
    write('Docs/Sub/a.txt', 'a');
    write('Other/b.txt', 'b');
    const { obs } = await scan();
    for (const rel of ['Docs', 'Docs/Sub', 'Other']) expect(obs.dirInodes?.get(rel)).toBe(fs.lstatSync(path.join(root, rel)).ino);
    expect([...(obs.dirInodes?.keys() ?? [])].sort()).toEqual([...obs.dirs.keys()].sort());
    const { obs: partial } = await scan({ subtrees: ['Docs'] });
    expect(partial.dirInodes?.get('Docs')).toBe(fs.lstatSync(path.join(root, 'Docs')).ino);
  });

  it('walks a nested tree: files with stat and SHA-256, directories, ignored entries left out', async () => {
    write('Reports/2026/q1.txt', 'first quarter');
    write('Reports/summary.md', '# summary');
    write('Empty/.keep', '');
    write('zero.bin', '');
    write('Reports/.DS_Store', 'x');
    write('Reports/.binder-sync-tmp-1234', 'partial');
    write('old.bak', 'user-ignored');
    fs.mkdirSync(path.join(root, 'node_modules_like', 'deep'), { recursive: true });

    const { obs, hashed } = await scan();
    expect([...obs.files.keys()].sort()).toEqual(['Empty/.keep', 'Reports/2026/q1.txt', 'Reports/summary.md', 'zero.bin']);
    const q1 = obs.files.get('Reports/2026/q1.txt');
    const st = fs.lstatSync(path.join(root, 'Reports/2026/q1.txt'));
    expect(q1).toEqual({
      relPath: 'Reports/2026/q1.txt',
      key: 'Reports/2026/q1.txt',
      size: 13,
      mtimeMs: st.mtimeMs,
      inode: st.ino,
      ctimeMs: st.ctimeMs,
      bornMs: st.birthtimeMs, // 0 where the filesystem keeps none
      sha256: sha('first quarter'),
    });
    // A rename keeps the birth time (it is how a moved file is told from a new one given its inode number).
    fs.renameSync(path.join(root, 'Reports/2026/q1.txt'), path.join(root, 'Reports/q1.txt'));
    expect((await scan()).obs.files.get('Reports/q1.txt')).toMatchObject({ inode: st.ino, bornMs: st.birthtimeMs });
    expect(obs.files.get('zero.bin')?.sha256).toBe(sha(''));
    expect([...obs.dirs.values()].sort()).toEqual(['Empty', 'Reports', 'Reports/2026', 'node_modules_like', 'node_modules_like/deep']);
    expect(obs.problems).toEqual([]);
    expect(hashed).toEqual(['Empty/.keep', 'Reports/2026/q1.txt', 'Reports/summary.md', 'zero.bin']);
  });

  it('re-hashes only files whose size, mtime or inode changed since the prior scan', async () => {
    write('a.txt', 'aaa');
    write('b.txt', 'bbb');
    write('c.txt', 'ccc');
    write('d/e.txt', 'eee');
    const first = await scan();
    expect(first.hashed).toHaveLength(4);

    const unchanged = await scan({ prior: priorOf(first.obs) });
    expect(unchanged.hashed).toEqual([]);
    expect(unchanged.obs.files).toEqual(first.obs.files);

    write('a.txt', 'aaaa'); // size changes
    fs.utimesSync(path.join(root, 'b.txt'), new Date(2001, 1, 1), new Date(2001, 1, 1)); // mtime only
    fs.rmSync(path.join(root, 'c.txt'));
    write('c.txt', 'ccc'); // same content and size, new inode
    const changed = await scan({ prior: priorOf(first.obs) });
    expect(changed.hashed).toEqual(['a.txt', 'b.txt', 'c.txt']);
    expect(changed.obs.files.get('a.txt')?.sha256).toBe(sha('aaaa'));
    expect(changed.obs.files.get('c.txt')?.sha256).toBe(sha('ccc'));
  });

  it('trusts the prior hash when the stat matches (the file is not read)', async () => {
    write('a.txt', 'real content');
    const st = fs.lstatSync(path.join(root, 'a.txt'));
    const prior = { size: st.size, mtimeMs: st.mtimeMs, inode: st.ino, ctimeMs: st.ctimeMs, sha256: 'f'.repeat(64) };
    const { obs, hashed } = await scan({ prior: (k) => (k === 'a.txt' ? prior : undefined) });
    expect(hashed).toEqual([]);
    expect(obs.files.get('a.txt')?.sha256).toBe('f'.repeat(64));
  });

  it('reports symlinks without following them', async () => {
    const outside = path.join(tmp, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside the root');
    fs.symlinkSync(outside, path.join(root, 'linkdir'));
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'link.txt'));
    write('real.txt', 'r');
    const { obs, hashed } = await scan();
    expect([...obs.files.keys()]).toEqual(['real.txt']);
    expect(hashed).toEqual(['real.txt']);
    expect(obs.dirs.size).toBe(0);
    expect(obs.problems.map((p) => [p.relPath, p.reason]).sort()).toEqual([
      ['link.txt', 'symlink'],
      ['linkdir', 'symlink'],
    ]);
  });

  it('reports FIFOs as special files', async () => {
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    const { obs } = await scan();
    expect(obs.problems).toEqual([expect.objectContaining({ relPath: 'pipe', key: 'pipe', reason: 'special-file' })]);
    expect(obs.files.size).toBe(0);
  });

  it.skipIf(isRoot)('reports an unreadable directory itself as a problem (its subtree is unknown)', async () => {
    write('locked/inner.txt', 'x');
    write('open.txt', 'y');
    fs.chmodSync(path.join(root, 'locked'), 0o000);
    try {
      const { obs } = await scan();
      expect(obs.problems).toEqual([expect.objectContaining({ relPath: 'locked', reason: 'unreadable' })]);
      expect([...obs.files.keys()]).toEqual(['open.txt']);
      expect(obs.dirs.has('locked')).toBe(false);
    } finally {
      fs.chmodSync(path.join(root, 'locked'), 0o755);
    }
  });

  it.skipIf(isRoot)('reports an unreadable file', async () => {
    write('secret.txt', 'x');
    fs.chmodSync(path.join(root, 'secret.txt'), 0o000);
    const { obs } = await scan();
    expect(obs.problems).toEqual([expect.objectContaining({ relPath: 'secret.txt', reason: 'unreadable' })]);
    expect(obs.files.size).toBe(0);
  });

  it('reports a file that changes while it is being hashed', async () => {
    write('growing.log', 'line 1\n');
    write('still.txt', 'still');
    const { obs } = await scan({
      onHash: (rel) => {
        if (rel === 'growing.log') fs.appendFileSync(path.join(root, rel), 'line 2\n');
      },
    });
    expect(obs.problems).toEqual([expect.objectContaining({ relPath: 'growing.log', reason: 'changing' })]);
    expect([...obs.files.keys()]).toEqual(['still.txt']);
  });

  it('reports names that are not valid UTF-8 and does not descend into such directories', async () => {
    const bad = Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0x62, 0xff, 0x61, 0x64])]);
    fs.writeFileSync(bad, 'content');
    fs.mkdirSync(Buffer.concat([bad, Buffer.from('-dir')]));
    fs.writeFileSync(Buffer.concat([bad, Buffer.from('-dir/inner.txt')]), 'x');
    write('good.txt', 'g');
    const { obs } = await scan();
    expect([...obs.files.keys()]).toEqual(['good.txt']);
    // Each bad byte is shown as \xNN (black-box round 30b, F4: U+FFFD would read like a valid name that holds it).
    expect(obs.problems.map((p) => [p.relPath, p.reason]).sort()).toEqual([
      ['b\\xffad', 'name-not-representable'],
      ['b\\xffad-dir', 'name-not-representable'],
    ]);
    expect(obs.problems[0]?.detail).toContain('the name is not valid UTF-8');
  });

  // Black-box round 30b, F4: U+FFFD (bytes ef bf bd) is a valid character, which a remote name may hold and the
  // pass writes; a name holding it was called "not valid UTF-8" and nothing under it synced again.
  it('a valid name holding U+FFFD is a file or folder like any other; a Latin-1 name beside one that reads the same is the only problem', async () => {
    write('Docs/caf\uFFFD.txt', 'valid');
    write('Docs/R\uFFFDsum\uFFFD/inside.txt', 'inside');
    // caf\xe9.txt decodes to the same string as the valid caf\uFFFD.txt, and R\xe9sum\xe9 as the valid folder.
    fs.writeFileSync(Buffer.concat([Buffer.from(`${root}/Docs/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]), 'latin-1');
    fs.mkdirSync(Buffer.concat([Buffer.from(`${root}/Docs/R`), Buffer.from([0xe9]), Buffer.from('sum'), Buffer.from([0xe9])]));
    // A lone continuation byte and a truncated 3-byte sequence before valid multi-byte characters.
    fs.writeFileSync(Buffer.concat([Buffer.from(`${root}/Docs/`), Buffer.from([0x80, 0xe2, 0x82]), Buffer.from('é€.txt')]), 'mixed');
    const { obs } = await scan();
    expect([...obs.files.keys()].sort()).toEqual(['Docs/R\uFFFDsum\uFFFD/inside.txt', 'Docs/caf\uFFFD.txt'].sort());
    expect([...obs.dirs.values()].sort()).toEqual(['Docs', 'Docs/R\uFFFDsum\uFFFD']);
    expect(obs.problems.map((p) => [p.relPath, p.reason]).sort()).toEqual([
      ['Docs/R\\xe9sum\\xe9', 'name-not-representable'],
      ['Docs/\\x80\\xe2\\x82é€.txt', 'name-not-representable'],
      ['Docs/caf\\xe9.txt', 'name-not-representable'],
    ]);
    // A second scan with the first as prior sees the same (the folder is walked again, the file not re-read).
    const again = await scan({ prior: priorOf(obs) });
    expect([...again.obs.files.keys()].sort()).toEqual([...obs.files.keys()].sort());
    expect(again.hashed).toEqual([]);
  });

  it('on a case-insensitive scan, a second name with the same key is a collision problem', async () => {
    write('Docs/Report.txt', 'upper');
    write('Docs/report.TXT', 'lower');
    const ci = await scan({ caseInsensitive: true });
    expect([...ci.obs.files.values()].map((f) => [f.key, f.relPath])).toEqual([['docs/report.txt', 'Docs/Report.txt']]);
    expect(ci.obs.problems).toEqual([
      {
        relPath: 'Docs/report.TXT',
        key: 'docs/report.txt',
        reason: 'name-not-representable',
        detail: 'collides with Docs/Report.txt: the two names differ only in case, which this disk does not tell apart; neither is synced while both are there: rename one of the two',
      },
    ]);
    expect([...ci.obs.dirs.entries()]).toEqual([['docs', 'Docs']]);

    const cs = await scan({ caseInsensitive: false });
    expect(cs.obs.files.size).toBe(2);
    expect(cs.obs.problems).toEqual([]);
  });

  it('with lazyHashFromBytes, leaves a large file it has no hash for unread; one it has a hash for is hashed when changed', async () => {
    write('big-new.bin', Buffer.alloc(4096, 1));
    write('big-synced.bin', Buffer.alloc(4096, 2));
    write('small.txt', 'small');
    const synced = (await scan()).obs.files.get('big-synced.bin');
    const prior = (key: string): PriorFile | undefined => (key === 'big-synced.bin' ? synced : undefined);
    const lazy = await scan({ lazyHashFromBytes: 4096, prior });
    // The new large file: not read (null), with its stat. The synced one is unchanged: its hash is reused.
    expect(lazy.hashed).toEqual(['small.txt']);
    expect(lazy.obs.files.get('big-new.bin')).toMatchObject({ sha256: null, size: 4096 });
    expect(lazy.obs.files.get('big-synced.bin')?.sha256).toBe(synced?.sha256);
    // Changed: the synced one is read again (reconcile compares it with its base); the unread one stays unread.
    write('big-synced.bin', Buffer.alloc(4097, 3));
    write('big-new.bin', Buffer.alloc(4097, 4));
    const again = await scan({ lazyHashFromBytes: 4096, prior: (key) => (key === 'big-new.bin' ? lazy.obs.files.get(key) : prior(key)) });
    expect(again.hashed).toEqual(['big-synced.bin', 'small.txt']);
    expect(again.obs.files.get('big-synced.bin')?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(again.obs.files.get('big-new.bin')).toMatchObject({ sha256: null, size: 4097 });
    // Without the option every file is read.
    expect((await scan()).obs.files.get('big-new.bin')?.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('of two colliding folders only the first is walked: the files under the second are neither seen nor reported on their own', async () => {
    // Collisions are looked for per directory (tree-walk.ts): this is the case that makes that enough.
    write('Docs/a.txt', 'first');
    write('Docs/Sub/b.txt', 'first deep');
    write('docs/a.txt', 'second');
    write('docs/Sub/b.txt', 'second deep');
    write('docs/only-here.txt', 'second only');
    const ci = await scan({ caseInsensitive: true });
    expect([...ci.obs.files.values()].map((f) => f.relPath).sort()).toEqual(['Docs/Sub/b.txt', 'Docs/a.txt']);
    expect(ci.obs.problems).toEqual([{ relPath: 'docs', key: 'docs', reason: 'name-not-representable', detail: expect.stringMatching(/^collides with Docs: the two names differ only in case/) }]);
    expect(ci.obs.digest).toBeUndefined();
  });

  it('keys are NFC: an NFD and an NFC spelling of one name collide even case-sensitively', async () => {
    write('Cafe\u0301.txt', 'nfd');
    write('Caf\u00e9.txt', 'nfc');
    const { obs } = await scan();
    expect(obs.files.size).toBe(1);
    const [only] = [...obs.files.values()];
    expect(only?.key).toBe('Caf\u00e9.txt');
    expect(obs.problems).toHaveLength(1);
    // Said so that two names that look alike on screen can be told apart.
    expect(obs.problems[0]?.detail).toMatch(/^collides with Cafe\u0301\.txt: the two names differ only in Unicode form/);
  });

  it('throws LOCAL_ROOT when the root is missing or not a directory', async () => {
    for (const bad of [path.join(tmp, 'missing'), path.join(tmp, 'file')]) {
      if (bad.endsWith('file')) fs.writeFileSync(bad, 'x');
      const err = await scanLocal({ root: bad, caseInsensitive: false, ignore: createIgnoreMatcher([]), prior: () => undefined }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(BinderSyncError);
      expect((err as BinderSyncError).code).toBe('LOCAL_ROOT');
      expect((err as BinderSyncError).hint).toMatch(/mounted/);
    }
  });

  it('accepts a root that is itself a symlink to a directory', async () => {
    write('x.txt', 'x');
    const alias = path.join(tmp, 'alias');
    fs.symlinkSync(root, alias);
    const { obs } = await scan({ root: alias });
    expect([...obs.files.keys()]).toEqual(['x.txt']);
  });

  it('stops with the abort reason when the signal fires', async () => {
    write('a.txt', 'a');
    const ac = new AbortController();
    ac.abort(new Error('shutting down'));
    await expect(scan({ signal: ac.signal })).rejects.toThrow('shutting down');
  });
});
