// What `binder-sync trash` lists from a real trash folder, and the path each file is restored to by default.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Trash } from '../../src/local/fs-ops.js';
import { listTrashEntries, originalPathIn, originalPathOf } from '../../src/local/trash-entries.js';
import { restoreFromTrash } from '../../src/local/trash-restore.js';
import { MAX_PATH_BYTES } from '../../src/local/name-limits.js';

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

  it('keeps a file whose mirrored trash path would pass PATH_MAX under ~long/, lists it by its own path and restores it there (round 28a, T3)', async () => {
    // A stateDir deeper than the sync root: the trash path of a deep file is longer than the file's own path.
    const root = tmp();
    const seg = 'd'.repeat(200);
    const deepState = path.join(tmp(), ...Array.from({ length: 14 }, () => seg));
    const rel = [...Array.from({ length: 8 }, (_, i) => `${seg.slice(0, 190)}${i}`), 'report.txt'].join('/');
    expect(Buffer.byteLength(path.join(root, rel))).toBeLessThan(MAX_PATH_BYTES);
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), 'deep content');
    const dir = path.join(deepState, 'trash');
    expect(Buffer.byteLength(path.join(dir, '2026-11-27', rel))).toBeGreaterThan(MAX_PATH_BYTES);
    const trash = new Trash(dir, root, { now: () => new Date('2026-11-27T12:00:00') });

    const kept = await trash.keep(path.join(root, rel), rel);
    const again = await trash.keep(path.join(root, rel), rel); // the same file twice that day: a second entry
    expect(path.relative(path.join(dir, '2026-11-27'), kept)).toMatch(/^~long\/[0-9a-f]{16}\/report\.txt$/);
    expect(again).not.toBe(kept);
    expect(fs.readFileSync(kept, 'utf8')).toBe('deep content');
    expect(fs.statSync(path.join(dir, '2026-11-27', '~long')).mode & 0o777).toBe(0o700);

    const { entries } = listTrashEntries(dir);
    expect(entries.map((e) => e.originalPath)).toEqual([rel, rel]); // the records are not listed as files
    expect(entries.every((e) => /^2026-11-27\/~long\/[0-9a-f]{16}\/report\.txt$/.test(e.entry))).toBe(true);

    fs.rmSync(path.join(root, rel));
    const restored = await restoreFromTrash(trash, entries[0]!.entry, entries[0]!.originalPath);
    expect(restored.restoredTo).toBe(path.join(root, rel));
    expect(fs.readFileSync(path.join(root, rel), 'utf8')).toBe('deep content');

    // Without its record (or with a record that is not a relative path), an entry is named as it lies.
    const inDay = entries[1]!.entry.slice('2026-11-27/'.length);
    const record = path.join(dir, '2026-11-27', `${path.dirname(inDay)}.path`);
    fs.writeFileSync(record, '../../etc/passwd');
    expect(originalPathIn(path.join(dir, '2026-11-27'), inDay)).toBe(inDay);
    fs.rmSync(record);
    expect(originalPathIn(path.join(dir, '2026-11-27'), inDay)).toBe(inDay);
  });

  it('a restore stopped midway (Ctrl-C) leaves nothing in the sync root: no partial temp file, no target (round 29a, F5)', async () => {
    const root = tmp();
    const dir = path.join(tmp(), 'trash');
    const trash = new Trash(dir, root, { now: () => new Date('2026-11-27T12:00:00') });
    fs.mkdirSync(path.join(root, 'Docs'));
    fs.writeFileSync(path.join(root, 'Docs', 'big.bin'), Buffer.alloc(48 * 1024 * 1024, 7));
    await trash.keep(path.join(root, 'Docs', 'big.bin'), 'Docs/big.bin');
    fs.rmSync(path.join(root, 'Docs', 'big.bin'));
    const stop = new AbortController();
    const restoring = restoreFromTrash(trash, '2026-11-27/Docs/big.bin', 'Docs/big.bin', { signal: stop.signal });
    setImmediate(() => stop.abort(new Error('stopped by SIGINT')));
    await expect(restoring).rejects.toThrow();
    expect(fs.readdirSync(path.join(root, 'Docs'))).toEqual([]);
    expect(fs.statSync(path.join(dir, '2026-11-27', 'Docs', 'big.bin')).size).toBe(48 * 1024 * 1024); // still kept
  });

  it('says a trash it cannot read is unreadable, not empty', () => {
    const notADir = path.join(tmp(), 'trash');
    fs.writeFileSync(notADir, 'x');
    expect(() => listTrashEntries(notADir)).toThrow(/cannot read the trash .*: ENOTDIR/);
  });
});
