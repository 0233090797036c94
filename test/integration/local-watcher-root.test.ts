// The sync root's own events on real temp dirs: an attribute change of the root (touch, chmod, utimes, and
// `rsync -a`, which sets the root's times last) is not the root gone, while the root deleted, moved away, or
// deleted and made again (even with its old inode number back) still is.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BinderSyncError } from '../../src/errors.js';
import { createIgnoreMatcher } from '../../src/local/ignore.js';
import { createWatcher, type LocalWatcher, type WatcherBackend, type WatchHints } from '../../src/local/watcher.js';

let tmp: string;
let root: string;
let watcher: LocalWatcher | undefined;
let calls: WatchHints[];
let errors: BinderSyncError[];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const abs = (rel: string) => path.join(root, rel);
const hintedDirs = () => calls.flatMap((h) => h.dirs);
const covered = (dir: string) => hintedDirs().some((d) => d === '' || d === dir || dir.startsWith(d + '/'));
const rootGone = () => errors.filter((e) => e.code === 'WATCH_ROOT_GONE');
const hasRsync = spawnSync('rsync', ['--version']).status === 0;

async function waitFor(pred: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!pred()) {
    if (Date.now() - start > timeoutMs) {
      throw new Error(`condition not met within ${timeoutMs} ms; hints: ${JSON.stringify(calls)}; errors: ${errors.map((e) => e.code).join(',')}`);
    }
    await sleep(20);
  }
}

async function start(backend: WatcherBackend): Promise<LocalWatcher> {
  watcher = await createWatcher({
    root,
    backend,
    ignore: createIgnoreMatcher([]),
    onHints: (h) => calls.push(h),
    onError: (e) => errors.push(e),
    settleMs: 100,
  });
  expect(watcher.backend).toBe(backend);
  return watcher;
}

/** A write in docs is hinted as docs: events still arrive, and whatever came before had its chance. */
async function expectStillWatching(): Promise<void> {
  await sleep(300);
  calls = [];
  fs.writeFileSync(abs(`docs/probe-${Date.now()}.txt`), 'p');
  await waitFor(() => hintedDirs().includes('docs'));
}

beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bs-watch-root-'));
  root = path.join(tmp, 'root');
  for (const d of ['docs', 'sub/deep']) fs.mkdirSync(path.join(root, d), { recursive: true });
  fs.writeFileSync(path.join(root, 'docs/old.txt'), 'old');
  calls = [];
  errors = [];
  watcher = undefined;
});

afterEach(async () => {
  await watcher?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe.each(['folders', 'chokidar', 'native'] as const)('%s backend: the root', (backend) => {
  it('touch, chmod and utimes of the root are not the root gone', async () => {
    await start(backend);
    execFileSync('touch', [root]);
    await sleep(150);
    fs.chmodSync(root, 0o700);
    await sleep(150);
    fs.chmodSync(root, 0o755);
    await sleep(150);
    fs.utimesSync(root, new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'));
    await expectStillWatching();
    expect(errors).toEqual([]);
  });

  it.skipIf(!hasRsync)('rsync -a into the root is not the root gone, and what it wrote is hinted', async () => {
    const src = path.join(tmp, 'src');
    fs.mkdirSync(path.join(src, 'docs'), { recursive: true });
    fs.mkdirSync(path.join(src, 'fresh/inner'), { recursive: true });
    fs.writeFileSync(path.join(src, 'docs/synced.txt'), 'a');
    fs.writeFileSync(path.join(src, 'fresh/inner/deep.txt'), 'b');
    fs.chmodSync(src, 0o700); // rsync then sets the root's mode too, not only its times
    // An old mtime on the source: rsync sets the root's (and docs') times to it at the end.
    for (const d of [path.join(src, 'docs'), src]) fs.utimesSync(d, new Date('2020-01-01T00:00:00Z'), new Date('2020-01-01T00:00:00Z'));
    await start(backend);
    execFileSync('rsync', ['-a', `${src}/`, `${root}/`]);
    expect(fs.statSync(root).mode & 0o777).toBe(0o700);
    await waitFor(() => covered('docs') && covered('fresh/inner'));
    await expectStillWatching();
    expect(errors).toEqual([]);
  });
});

describe('folders backend: the root', () => {
  it('an attribute change of the root hints nothing (no rescan of the whole tree)', async () => {
    await start('folders');
    execFileSync('touch', [root]);
    fs.chmodSync(root, 0o700);
    await sleep(400);
    expect(calls).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('an entry named like the root is still an entry: created, changed and deleted, it is hinted', async () => {
    const namesake = abs('root');
    await start('folders');
    for (const act of [
      () => fs.writeFileSync(namesake, 'x'),
      () => fs.chmodSync(namesake, 0o600),
      () => fs.unlinkSync(namesake),
      () => fs.mkdirSync(namesake),
      () => fs.rmdirSync(namesake),
    ]) {
      calls = [];
      act();
      await waitFor(() => covered('root'));
    }
    expect(errors).toEqual([]);
  });

  it('reports the root moved away as WATCH_ROOT_GONE', async () => {
    await start('folders');
    fs.renameSync(root, path.join(tmp, 'moved'));
    await waitFor(() => rootGone().length > 0);
    expect(errors.every((e) => e.code === 'WATCH_ROOT_GONE')).toBe(true);
  });

  it('reports the root removed (rm -rf) as WATCH_ROOT_GONE', async () => {
    await start('folders');
    execFileSync('rm', ['-rf', root]);
    await waitFor(() => rootGone().length > 0);
    expect(errors.every((e) => e.code === 'WATCH_ROOT_GONE')).toBe(true);
  });

  it('reports the root replaced by another folder moved into its place as WATCH_ROOT_GONE', async () => {
    fs.mkdirSync(path.join(tmp, 'other'));
    await start('folders');
    fs.renameSync(root, path.join(tmp, 'moved'));
    fs.renameSync(path.join(tmp, 'other'), root);
    await waitFor(() => rootGone().length > 0);
  });

  // ext4 gives a folder made again at once its old inode number back: only its birth time tells,
  // where the filesystem keeps one.
  it('reports the root deleted and made again at once as WATCH_ROOT_GONE, even with its old inode number', async (ctx) => {
    if (fs.statSync(root, { bigint: true }).birthtimeNs === 0n) ctx.skip();
    await start('folders');
    fs.rmSync(root, { recursive: true });
    fs.mkdirSync(root);
    await waitFor(() => rootGone().length > 0);
  });
});
