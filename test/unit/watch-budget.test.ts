// binder-sync check's inotify line: the watches each watcher needs (real temp dirs), and the verdict against the limit.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchBudget } from '../../src/cli/check-command.js';
import { inotifyWatchLimit, watchesNeeded } from '../../src/local/watch-budget.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'watch-budget-'));
  for (const d of ['a/b', 'a/c', 'node_modules/x', 'd']) fs.mkdirSync(path.join(root, d), { recursive: true });
  for (const f of ['a/1.txt', 'a/b/2.txt', 'd/3.txt', 'top.txt', 'node_modules/x/4.js', 'a/.binder-sync-tmp-1']) fs.writeFileSync(path.join(root, f), 'x');
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe('watchesNeeded', () => {
  it('counts the folders that are not ignored, the root included; chokidar counts files too; off and a missing root need none', () => {
    expect(watchesNeeded({ localPath: root, ignore: [], watcher: 'auto' })).toBe(7); // root, a, a/b, a/c, node_modules, node_modules/x, d
    expect(watchesNeeded({ localPath: root, ignore: ['node_modules/'], watcher: 'folders' })).toBe(5);
    // chokidar: the 5 folders and the 4 files that are not ignored (the daemon's temp file is).
    expect(watchesNeeded({ localPath: root, ignore: ['node_modules/'], watcher: 'chokidar' })).toBe(9);
    expect(watchesNeeded({ localPath: root, ignore: [], watcher: 'off' })).toBe(0);
    expect(watchesNeeded({ localPath: path.join(root, 'missing'), ignore: [], watcher: 'auto' })).toBe(0);
  });
});

describe('watchBudget', () => {
  it('passes below 80% of the limit, warns from there and past it with the sysctl hint, skips without a limit', () => {
    expect(watchBudget(800, 1000)).toEqual({ outcome: 'PASS', message: '800 needed, the limit is 1000 per user' });
    const near = watchBudget(801, 1000);
    expect(near).toMatchObject({ outcome: 'WARN', message: expect.stringContaining('close to it') });
    expect(near.hint).toContain('fs.inotify.max_user_watches');
    expect(watchBudget(1001, 1000)).toMatchObject({ outcome: 'WARN', message: expect.stringContaining('rescans only') });
    expect(watchBudget(5, null)).toMatchObject({ outcome: 'SKIP' });
  });

  it('reads the limit from its proc file, and nothing from a missing or garbled one', () => {
    const file = path.join(root, 'limit');
    fs.writeFileSync(file, '8192\n');
    expect(inotifyWatchLimit(file)).toBe(8192);
    fs.writeFileSync(file, 'garbage');
    expect(inotifyWatchLimit(file)).toBeNull();
    expect(inotifyWatchLimit(path.join(root, 'none'))).toBeNull();
  });
});
