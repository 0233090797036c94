// What `binder-sync trash` lists from a real trash folder, and the path each file is restored to by default.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Trash } from '../../src/local/fs-ops.js';
import { listTrashEntries, originalPathOf } from '../../src/local/trash-entries.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'trash-entries-'));
  dirs.push(d);
  return d;
};

describe('originalPathOf', () => {
  it.each([
    ['Docs/a.txt', 'Docs/a.txt'],
    ['Docs/a~1.txt', 'Docs/a.txt'],
    ['Docs/a~12', 'Docs/a'],
    ['report.tar~3.gz', 'report.tar.gz'],
    ['.bashrc~2', '.bashrc'],
    ['~1/a/b.txt', 'a/b.txt'],
    ['~1', '~1'],
    ['~x/a.txt', '~x/a.txt'],
    ['notes~draft.txt', 'notes~draft.txt'],
  ])('%s was %s', (inDay, expected) => {
    expect(originalPathOf(inDay)).toBe(expected);
  });
});

describe('listTrashEntries', () => {
  it('lists what the Trash kept, newest day first, with the path each came from, and caps at the limit', async () => {
    const root = tmp();
    const dir = path.join(tmp(), 'trash');
    let day = new Date('2026-11-25T12:00:00');
    const trash = new Trash(dir, root, { now: () => day });
    const put = async (rel: string, content: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), content);
      return trash.keep(path.join(root, rel), rel);
    };
    await put('Docs/a.txt', 'a1');
    day = new Date('2026-11-26T12:00:00');
    await put('Docs/a.txt', 'a2');
    await put('Docs/a.txt', 'a3'); // same day, same name: a~1.txt
    await put('b', 'b as a file');
    fs.rmSync(path.join(root, 'b'));
    await put('b/c.txt', 'c'); // "b" is a file in that day's folder: a side folder ~0/
    expect(fs.existsSync(path.join(dir, '2026-11-26', '~0', 'b', 'c.txt'))).toBe(true);

    const { entries, capped } = listTrashEntries(dir);
    expect(capped).toBe(false);
    expect(entries.map((e) => [e.entry, e.originalPath, e.size])).toEqual([
      ['2026-11-26/Docs/a.txt', 'Docs/a.txt', 2],
      ['2026-11-26/Docs/a~1.txt', 'Docs/a.txt', 2],
      ['2026-11-26/b', 'b', 11],
      ['2026-11-26/~0/b/c.txt', 'b/c.txt', 1],
      ['2026-11-25/Docs/a.txt', 'Docs/a.txt', 2],
    ]);
    expect(fs.readFileSync(path.join(dir, entries[1]!.entry), 'utf8')).toBe('a3');
    expect(listTrashEntries(dir, 2)).toMatchObject({ capped: true, entries: [{ entry: '2026-11-26/Docs/a.txt' }, { entry: '2026-11-26/Docs/a~1.txt' }] });
    expect(listTrashEntries(path.join(dir, 'missing'))).toEqual({ entries: [], capped: false });
  });

  it('says a trash it cannot read is unreadable, not empty', () => {
    const notADir = path.join(tmp(), 'trash');
    fs.writeFileSync(notADir, 'x');
    expect(() => listTrashEntries(notADir)).toThrow(/cannot read the trash .*: ENOTDIR/);
  });
});
