// What `binder-sync trash` lists from a real trash folder, and the path each file is restored to by default.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toFileStat, Trash } from '../../src/local/fs-ops.js';
import { listTrashEntries, originOf, RECORDS_DIR, recordPathOf } from '../../src/local/trash-entries.js';
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

describe('originOf an entry without a record (kept by a version before the records)', () => {
  // Read from the name only where that day's folder shows the naming was used (trash-entries.ts legacyOrigin).
  it.each([
    [['Docs/a.txt'], 'Docs/a.txt', 'Docs/a.txt', false],
    [['Docs/a.txt', 'Docs/a~1.txt'], 'Docs/a~1.txt', 'Docs/a.txt', true],
    [['Docs/a.txt', 'Docs/a~1.txt', 'Docs/a~1~1.txt'], 'Docs/a~1~1.txt', 'Docs/a~1.txt', true],
    [['Docs/a', 'Docs/a~12'], 'Docs/a~12', 'Docs/a', true],
    [['report.tar.gz', 'report.tar~3.gz'], 'report.tar~3.gz', 'report.tar.gz', true],
    [['Docs/report~2.txt'], 'Docs/report~2.txt', 'Docs/report~2.txt', false], // no report.txt that day: its own name
    [['Docs/N~12345678.txt'], 'Docs/N~12345678.txt', 'Docs/N~12345678.txt', false], // a name shortened for 255 bytes
    [['b', '~0/b/c.txt'], '~0/b/c.txt', 'b/c.txt', false], // b is a file that day: a side folder
    [['~0/b/c.txt'], '~0/b/c.txt', '~0/b/c.txt', false], // a folder of the user's own named ~0
    [['~x/a.txt'], '~x/a.txt', '~x/a.txt', false],
    [['notes~draft.txt'], 'notes~draft.txt', 'notes~draft.txt', false],
  ])('%j: %s was %s (guessed: %s)', (files, inDay, expected, guessed) => {
    const dayDir = tmp();
    for (const f of files) {
      fs.mkdirSync(path.dirname(path.join(dayDir, f)), { recursive: true });
      fs.writeFileSync(path.join(dayDir, f), f);
    }
    expect(originOf(dayDir, inDay)).toEqual({ path: expected, guessed });
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

    // Without its record (or with a record that is not a relative path), an entry is named as it lies; a record
    // beside its folder, as versions before the origin records kept it, is read.
    const inDay = entries[1]!.entry.slice('2026-11-27/'.length);
    const dayDir = path.join(dir, '2026-11-27');
    const record = path.join(dayDir, recordPathOf(inDay));
    fs.writeFileSync(record, '../../etc/passwd');
    expect(originOf(dayDir, inDay)).toEqual({ path: inDay, guessed: false });
    fs.rmSync(record);
    expect(originOf(dayDir, inDay)).toEqual({ path: inDay, guessed: false });
    fs.writeFileSync(path.join(dayDir, `${path.dirname(inDay)}.path`), rel);
    expect(originOf(dayDir, inDay)).toEqual({ path: rel, guessed: false });
    expect(listTrashEntries(dir).entries.map((e) => e.originalPath)).toEqual([rel, rel]); // that record is no entry either
  });

  it('records the origin of every entry whose path does not tell it: a name of its own ending in ~N is not read as a copy (round 30b, F5)', async () => {
    const root = tmp();
    const dir = path.join(tmp(), 'trash');
    const trash = new Trash(dir, root, { now: () => new Date('2026-11-27T12:00:00') });
    const put = async (rel: string, content: string, how: 'keep' | 'move' = 'keep') => {
      const abs = path.join(root, rel);
      fs.mkdirSync(path.dirname(abs), { recursive: true });
      fs.rmSync(abs, { force: true }); // a new file, as a download's is: keep() hard-links the one it keeps
      fs.writeFileSync(abs, content);
      const kept = how === 'keep' ? await trash.keep(abs, rel) : await trash.moveToTrash(abs, rel, toFileStat(fs.statSync(abs)));
      return path.relative(path.join(dir, '2026-11-27'), kept);
    };
    const long = `${'n'.repeat(251)}.txt`; // 255 bytes: its copy's name is shortened to fit "~1"
    expect(await put('Docs/report~2.txt', 'report~2 v1')).toBe('Docs/report~2.txt');
    expect(await put('Docs/x.txt', 'x v1')).toBe('Docs/x.txt');
    expect(await put('Docs/x~1.txt', 'x~1 v1')).toBe('Docs/x~1.txt');
    expect(await put('Docs/x.txt', 'x v2')).toBe('Docs/x~2.txt');
    expect(await put('Docs/x~1.txt', 'x~1 v2', 'move')).toBe('Docs/x~1~1.txt');
    expect(await put('Docs/N~12345678.txt', 'shortened by the product')).toBe('Docs/N~12345678.txt');
    expect(await put(`Docs/${long}`, 'long v1')).toBe(`Docs/${long}`);
    const shortened = await put(`Docs/${long}`, 'long v2');
    expect(shortened).toBe(`Docs/${'n'.repeat(249)}~1.txt`);
    expect(await put('b', 'b as a file')).toBe('b');
    fs.rmSync(path.join(root, 'b'));
    expect(await put('b/c.txt', 'c')).toBe('~0/b/c.txt');

    const { entries } = listTrashEntries(dir);
    expect(entries.map((e) => [e.entry.slice('2026-11-27/'.length), e.originalPath, e.originalPathGuessed, fs.readFileSync(path.join(dir, e.entry), 'utf8')])).toEqual([
      ['Docs/N~12345678.txt', 'Docs/N~12345678.txt', false, 'shortened by the product'],
      [`Docs/${long}`, `Docs/${long}`, false, 'long v1'],
      [shortened, `Docs/${long}`, false, 'long v2'],
      ['Docs/report~2.txt', 'Docs/report~2.txt', false, 'report~2 v1'],
      ['Docs/x.txt', 'Docs/x.txt', false, 'x v1'],
      ['Docs/x~1.txt', 'Docs/x~1.txt', false, 'x~1 v1'],
      ['Docs/x~1~1.txt', 'Docs/x~1.txt', false, 'x~1 v2'],
      ['Docs/x~2.txt', 'Docs/x.txt', false, 'x v2'],
      ['b', 'b', false, 'b as a file'],
      ['~0/b/c.txt', 'b/c.txt', false, 'c'],
    ]); // the records are not listed

    // Restored by default to the path it had, not over another file's path.
    fs.rmSync(path.join(root, 'Docs'), { recursive: true });
    fs.mkdirSync(path.join(root, 'Docs'));
    for (const e of entries.filter((x) => x.entry.includes('report~2') || x.entry.endsWith('x~1.txt'))) await restoreFromTrash(trash, e.entry, e.originalPath);
    expect(fs.readdirSync(path.join(root, 'Docs')).sort()).toEqual(['report~2.txt', 'x~1.txt']);
    expect(fs.readFileSync(path.join(root, 'Docs', 'x~1.txt'), 'utf8')).toBe('x~1 v1');

    // A record is no file to restore; the day's purge takes the records with it.
    const records = fs.readdirSync(path.join(dir, '2026-11-27', RECORDS_DIR));
    expect(records.length).toBe(7); // report~2, x~1, x~2, x~1~1, N~12345678, the shortened copy, ~0/b/c.txt
    const err = await restoreFromTrash(trash, `2026-11-27/${RECORDS_DIR}/${records[0]!}`, 'Docs/r.txt').catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'TRASH_ENTRY_UNKNOWN' });
    const later = new Trash(dir, root, { now: () => new Date('2027-01-27T12:00:00') });
    expect(await later.purgeOlderThan(30)).toBe(1);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('writes an origin record before its file: a crash between the two leaves a record of no file, which is never listed and takes that path (round 30b, F5)', async () => {
    const root = tmp();
    const dir = path.join(tmp(), 'trash');
    const dayDir = path.join(dir, '2026-11-27');
    fs.mkdirSync(path.join(root, 'Docs'));
    const file = path.join(root, 'Docs', 'y~1.txt');
    fs.writeFileSync(file, 'y~1');
    const seen: string[] = [];
    let fail: NodeJS.ErrnoException | null = null;
    const trash = new Trash(dir, root, {
      now: () => new Date('2026-11-27T12:00:00'),
      // Where the file goes in: its record must be there already, with its origin.
      link: async (from, to) => {
        const inDay = path.relative(dayDir, to);
        seen.push(`${inDay} <- ${fs.readFileSync(path.join(dayDir, recordPathOf(inDay)), 'utf8')}`);
        if (fail !== null) throw fail;
        fs.linkSync(from, to);
      },
    });
    // A crash after the record of Docs/y~1.txt, before its file: the path is taken, the record is no entry.
    fs.mkdirSync(path.join(dayDir, RECORDS_DIR), { recursive: true });
    fs.writeFileSync(path.join(dayDir, recordPathOf('Docs/y~1.txt')), 'Docs/y.txt');
    expect(path.relative(dayDir, await trash.keep(file, 'Docs/y~1.txt'))).toBe('Docs/y~1~1.txt');
    expect(seen).toEqual(['Docs/y~1~1.txt <- Docs/y~1.txt']);
    expect(listTrashEntries(dir).entries.map((e) => [e.entry, e.originalPath])).toEqual([['2026-11-27/Docs/y~1~1.txt', 'Docs/y~1.txt']]);

    // A keep that fails before its file is there takes its record back; a copy dropped (a replace that did not
    // happen) goes with its record.
    fail = Object.assign(new Error('I/O error'), { code: 'EIO' });
    await expect(trash.keep(file, 'Docs/y~1.txt')).rejects.toThrow();
    expect(seen.at(-1)).toBe('Docs/y~1~2.txt <- Docs/y~1.txt');
    expect(fs.existsSync(path.join(dayDir, recordPathOf('Docs/y~1~2.txt')))).toBe(false);
    fail = null;
    const kept = await trash.keep(file, 'Docs/y~1.txt');
    expect(path.relative(dayDir, kept)).toBe('Docs/y~1~2.txt');
    trash.discard(kept);
    expect(fs.existsSync(kept)).toBe(false);
    expect(fs.existsSync(path.join(dayDir, recordPathOf('Docs/y~1~2.txt')))).toBe(false);
    expect(fs.readdirSync(path.join(dayDir, RECORDS_DIR)).length).toBe(2); // the crash's and y~1~1's
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
