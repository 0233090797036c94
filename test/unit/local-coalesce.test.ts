// The pure watcher-event coalescer: one test per rule (VS Code style), plus a property over random events.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { coalesceEvents, HintCoalescer, type RawEvent, type RawEventType } from '../../src/local/coalesce.js';
import { createIgnoreMatcher } from '../../src/local/ignore.js';

const ignore = createIgnoreMatcher(['node_modules/', '*.log']);
const ev = (type: RawEventType, relPath: string): RawEvent => ({ type, relPath });
const dirsOf = (events: RawEvent[], limits?: Parameters<typeof coalesceEvents>[2]) =>
  coalesceEvents(events, ignore, limits)?.dirs;

describe('coalesceEvents: one rule per test', () => {
  it('a file event dirties its parent directory; a file in the root dirties the root', () => {
    expect(dirsOf([ev('change', 'a/b/x.txt')])).toEqual(['a/b']);
    expect(dirsOf([ev('add', 'top.txt')])).toEqual(['']);
  });

  it('a directory event dirties the directory itself (its subtree)', () => {
    expect(dirsOf([ev('addDir', 'a/new')])).toEqual(['a/new']);
    expect(dirsOf([ev('unlinkDir', 'a/old')])).toEqual(['a/old']);
  });

  it('create then delete of a temp file collapses to one dirty dir', () => {
    expect(dirsOf([ev('add', 'd/scratch.txt'), ev('change', 'd/scratch.txt'), ev('unlink', 'd/scratch.txt')])).toEqual(['d']);
  });

  it('delete then create (a replace) is one dirty dir', () => {
    expect(dirsOf([ev('unlink', 'd/f.txt'), ev('add', 'd/f.txt')])).toEqual(['d']);
  });

  it("an editor's save-by-rename yields only the target's dir", () => {
    // vim: probe file 4913, swap file, backup by rename, write the target, drop the backup.
    const vim = [
      ev('add', 'docs/.report.txt.swp'),
      ev('add', 'docs/4913'),
      ev('unlink', 'docs/4913'),
      ev('unlink', 'docs/report.txt'),
      ev('add', 'docs/report.txt~'),
      ev('add', 'docs/report.txt'),
      ev('unlink', 'docs/report.txt~'),
      ev('unlink', 'docs/.report.txt.swp'),
    ];
    expect(dirsOf(vim)).toEqual(['docs']);
    // write-temp-then-rename-over (many apps): the temp is ignored, the target's change is what counts.
    expect(dirsOf([ev('add', 'a/b/.x.tmp'), ev('unlink', 'a/b/.x.tmp'), ev('change', 'a/b/x.pdf')])).toEqual(['a/b']);
  });

  it('a dir already covered by an ancestor in the set is dropped, whatever the order', () => {
    expect(dirsOf([ev('change', 'a/b/c/x'), ev('addDir', 'a/b')])).toEqual(['a/b']);
    expect(dirsOf([ev('addDir', 'a/b'), ev('change', 'a/b/c/x'), ev('addDir', 'a/b/c/d')])).toEqual(['a/b']);
    // A sibling with a common prefix is not inside: 'a/bc' is not under 'a/b'.
    expect(dirsOf([ev('addDir', 'a/b'), ev('change', 'a/bc/x')])).toEqual(['a/b', 'a/bc']);
  });

  it("a deleted folder swallows its children's deletes", () => {
    const rmrf = [
      ev('unlink', 'proj/old/a.txt'),
      ev('unlink', 'proj/old/deep/b.txt'),
      ev('unlinkDir', 'proj/old/deep'),
      ev('unlink', 'proj/old/c.txt'),
      ev('unlinkDir', 'proj/old'),
    ];
    expect(dirsOf(rmrf)).toEqual(['proj/old']);
  });

  it('a `tar x` burst of 2,000 files in 50 new dirs folds into the extracted top dir', () => {
    const events: RawEvent[] = [ev('addDir', 'dl/pkg')];
    for (let d = 0; d < 50; d++) events.push(ev('addDir', `dl/pkg/d${d}`));
    for (let i = 0; i < 2000; i++) events.push(ev('add', `dl/pkg/d${i % 50}/f${i}.dat`));
    expect(dirsOf(events)).toEqual(['dl/pkg']);
  });

  it('files landing in 50 existing dirs stay 50 dirs (under the per-parent threshold)', () => {
    const events: RawEvent[] = [];
    for (let i = 0; i < 2000; i++) events.push(ev('add', `lib/d${i % 50}/f${i}.dat`));
    const dirs = dirsOf(events) ?? [];
    expect(dirs).toHaveLength(50);
    expect(dirs.every((d) => /^lib\/d\d+$/.test(d))).toBe(true);
  });

  it('more than 64 dirty dirs under one parent fold into the parent', () => {
    const events: RawEvent[] = [ev('change', 'other/x')];
    for (let i = 0; i < 65; i++) events.push(ev('change', `lib/d${i}/f`));
    expect(dirsOf(events)).toEqual(['lib', 'other']);
    // 64 is still under the threshold.
    expect(dirsOf(events.slice(0, 65))).toHaveLength(65);
  });

  it('folding cascades upwards when the parent then pushes its own parent over the threshold', () => {
    const limits = { maxChildrenPerDir: 2 };
    const events = [
      ev('change', 'r/a/1/f'),
      ev('change', 'r/a/2/f'),
      ev('change', 'r/b/f'),
      ev('change', 'r/c/f'),
      ev('change', 'r/a/3/f'), // r/a folds (3 children), which makes r/{a,b,c}: 3 children of r
    ];
    expect(dirsOf(events, limits)).toEqual(['r']);
  });

  it('more than 1000 dirs in total fold into their common ancestor (the root if nothing is shared)', () => {
    const events: RawEvent[] = [];
    for (let p = 0; p < 40; p++) for (let c = 0; c < 30; c++) events.push(ev('change', `home/u/p${p}/c${c}/f`));
    expect(dirsOf(events)).toEqual(['home/u']);
    // The same burst after a change elsewhere: the only common ancestor is the root.
    expect(dirsOf([ev('change', 'elsewhere/f'), ...events])).toEqual(['']);
    // Once folded, later events inside the folded dir add nothing, others add a dir again.
    expect(dirsOf([...events, ev('change', 'home/u/p1/new/f'), ev('change', 'elsewhere/f')])).toEqual(['elsewhere', 'home/u']);
  });

  it('events under ignored paths are dropped and report "not relevant"', () => {
    const c = new HintCoalescer(ignore);
    expect(c.push(ev('add', '.binder-sync-tmp-x'))).toBe(false);
    expect(c.push(ev('add', 'd/.binder-sync-tmp-upload-1'))).toBe(false);
    expect(c.push(ev('change', 'd/.foo.swp'))).toBe(false);
    expect(c.push(ev('add', 'd/run.log'))).toBe(false); // user glob
    expect(c.push(ev('addDir', 'src/node_modules'))).toBe(false); // user dir-only glob
    expect(c.push(ev('add', 'src/node_modules/x/index.js'))).toBe(false); // inside an ignored dir
    expect(c.pending).toBe(false);
    expect(c.take()).toBeNull();
    // A file merely named like a dir-only rule is not ignored.
    expect(c.push(ev('add', 'src/node_modules'))).toBe(true);
    expect(c.take()).toEqual({ dirs: ['src'], full: false });
  });

  it('an error or overflow means a full rescan, and swallows everything else until taken', () => {
    for (const type of ['error', 'overflow'] as const) {
      const c = new HintCoalescer(ignore);
      c.push(ev('change', 'a/x'));
      expect(c.push(ev(type, ''))).toBe(true);
      c.push(ev('change', 'b/y'));
      expect(c.take()).toEqual({ dirs: [''], full: true });
      expect(c.take()).toBeNull();
    }
  });

  it('take() hands out what accumulated since the last take, then starts afresh', () => {
    const c = new HintCoalescer(ignore);
    c.push(ev('change', 'a/x'));
    c.push(ev('change', 'b/y'));
    expect(c.take()).toEqual({ dirs: ['a', 'b'], full: false });
    expect(c.take()).toBeNull();
    c.push(ev('unlink', 'c/z'));
    expect(c.take()).toEqual({ dirs: ['c'], full: false });
  });
});

describe('coalesceEvents: properties', () => {
  const seg = fc.constantFrom('a', 'b', 'c', 'ab', 'node_modules', 'x.log', '.s.swp');
  const relPath = fc.array(seg, { minLength: 1, maxLength: 4 }).map((s) => s.join('/'));
  const type = fc.constantFrom<RawEventType>('add', 'change', 'unlink', 'addDir', 'unlinkDir');
  const events = fc.array(fc.record({ type, relPath }), { maxLength: 200 });
  const parentOf = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');
  const covers = (dirs: string[], d: string) => dirs.some((h) => h === '' || h === d || d.startsWith(h + '/'));

  it('every relevant event is covered, no hinted dir lies inside another, and the output is sorted', () => {
    fc.assert(
      fc.property(events, fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 30 }), (evs, perDir, total) => {
        const hints = coalesceEvents(evs, ignore, { maxChildrenPerDir: perDir, maxDirs: total });
        const relevant = evs.filter((e) => !ignore.ignores(e.relPath, e.type === 'addDir' || e.type === 'unlinkDir'));
        if (relevant.length === 0) return hints === null;
        if (hints === null || hints.full) return false;
        const { dirs } = hints;
        for (const e of relevant) {
          const target = e.type === 'addDir' || e.type === 'unlinkDir' ? e.relPath : parentOf(e.relPath);
          if (!covers(dirs, target)) return false;
        }
        const nested = dirs.some((a) => dirs.some((b) => a !== b && (b === '' || a.startsWith(b + '/'))));
        return !nested && dirs.length <= total && JSON.stringify(dirs) === JSON.stringify([...dirs].sort());
      }),
      { numRuns: 300 },
    );
  });
});
