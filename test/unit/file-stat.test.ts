// sameStat: when a file counts as unchanged without reading it. ctime is what catches a rewrite that keeps
// size, mtime and inode (cp -p, tar x, rsync --inplace); a row recorded before ctimes were kept (0) is
// compared on the other three, once.
import { describe, expect, it } from 'vitest';
import { reconcile } from '../../src/sync/reconcile.js';
import { sameStat, type FileStat } from '../../src/sync/model.js';
import { ctxOf, World } from './reconcile-fixtures.js';

const rec: FileStat = { size: 10, mtimeMs: 1_700_000_000_000, inode: 42, ctimeMs: 1_700_000_000_500 };

describe('sameStat', () => {
  it('needs size, mtime, inode and ctime all equal', () => {
    expect(sameStat({ ...rec }, rec)).toBe(true);
    for (const k of ['size', 'mtimeMs', 'inode', 'ctimeMs'] as const) expect(sameStat({ ...rec, [k]: rec[k] + 1 }, rec), k).toBe(false);
  });

  it('a recorded ctime of 0 (a row from before ctimes were kept) is not compared', () => {
    expect(sameStat({ ...rec }, { ...rec, ctimeMs: 0 })).toBe(true);
    expect(sameStat({ ...rec, mtimeMs: 1 }, { ...rec, ctimeMs: 0 })).toBe(false);
    // ...but a file's own ctime is always known: the recorded side decides.
    expect(sameStat({ ...rec, ctimeMs: 0 }, rec)).toBe(false);
  });
});

describe('a base row without a ctime', () => {
  it('takes the file ctime at the next pass (adopt), with nothing transferred', () => {
    const w = new World().folder('f1', 'docs').dir('docs');
    w.baseRow('d1', 'docs/a.txt', 'v1', 'f1', 'h1');
    w.file('docs/a.txt', 'h1');
    w.doc('d1', 'docs/a.txt', 'v1', 'f1');
    const file = w.local.files.get('docs/a.txt')!;
    const b = w.base.get('d1')!;
    w.base.set('d1', { ...b, ctimeMs: 0 });
    const plan = reconcile(w.base, w.local, w.remote, ctxOf());
    const actions = plan.groups.flat();
    expect(actions.map((a) => a.kind)).toEqual(['adopt']);
    const adopt = actions[0] as Extract<(typeof actions)[number], { kind: 'adopt' }>;
    expect(adopt.base.ctimeMs).toBe(file.ctimeMs);
    expect(adopt.reason).toBe('local-stat');
  });
});
