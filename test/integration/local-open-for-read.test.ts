// Opening a file to read it (hash, upload) never follows a symbolic link put at its path, never waits on a FIFO,
// and (openSameFileSync) refuses a file that is not the one planned or that lies outside the root: real files,
// links and FIFOs in a temp dir (black-box round 37a, F1 and F2).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { toFileStat } from '../../src/local/fs-ops.js';
import { hashFile } from '../../src/local/hash.js';
import { copyRegularFile, NotTheFileError, openRegularFile, openSameFileSync } from '../../src/local/open-for-read.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(): { root: string; outside: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'open-for-read-'));
  dirs.push(dir);
  const root = path.join(dir, 'root');
  const outside = path.join(dir, 'outside');
  fs.mkdirSync(path.join(root, 'Docs'), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'not for upload');
  return { root, outside };
}

const mkfifo = (p: string) => execFileSync('mkfifo', [p]);

describe('openRegularFile / hashFile', () => {
  it('a regular file opens and hashes', async () => {
    const { root } = tmp();
    fs.writeFileSync(path.join(root, 'Docs', 'a.txt'), 'abc');
    const { handle, size } = await openRegularFile(path.join(root, 'Docs', 'a.txt'));
    await handle.close();
    expect(size).toBe(3);
    expect((await hashFile(path.join(root, 'Docs', 'a.txt'))).sha256).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
  it('a symbolic link is not followed (ELOOP), even to a file', async () => {
    const { root, outside } = tmp();
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(root, 'Docs', 'a.txt'));
    await expect(hashFile(path.join(root, 'Docs', 'a.txt'))).rejects.toMatchObject({ code: 'ELOOP' });
  });
  it('a FIFO is refused at once (ENOTREG), not waited on for a writer', async () => {
    const { root } = tmp();
    mkfifo(path.join(root, 'Docs', 'a.txt'));
    await expect(hashFile(path.join(root, 'Docs', 'a.txt'))).rejects.toMatchObject({ code: 'ENOTREG' });
  });
});

describe('openSameFileSync', () => {
  it('opens the planned file and reads its bytes', () => {
    const { root } = tmp();
    const abs = path.join(root, 'Docs', 'a.txt');
    fs.writeFileSync(abs, 'abc');
    const fd = openSameFileSync(abs, toFileStat(fs.lstatSync(abs)), root);
    try {
      expect(fs.readFileSync(fd, 'utf8')).toBe('abc');
    } finally {
      fs.closeSync(fd);
    }
  });
  it('another file put at the path (another inode) is refused', () => {
    const { root } = tmp();
    const abs = path.join(root, 'Docs', 'a.txt');
    fs.writeFileSync(abs, 'abc');
    const planned = toFileStat(fs.lstatSync(abs));
    fs.writeFileSync(`${abs}.new`, 'abc');
    fs.renameSync(`${abs}.new`, abs);
    expect(() => openSameFileSync(abs, planned, root)).toThrow(NotTheFileError);
  });
  it('a symbolic link or a FIFO put at the path is refused without waiting', () => {
    const { root, outside } = tmp();
    const abs = path.join(root, 'Docs', 'a.txt');
    fs.writeFileSync(abs, 'abc');
    const planned = toFileStat(fs.lstatSync(abs));
    fs.rmSync(abs);
    fs.symlinkSync(path.join(outside, 'secret.txt'), abs);
    expect(() => openSameFileSync(abs, planned, root)).toThrow(expect.objectContaining({ code: 'ELOOP' }));
    fs.rmSync(abs);
    mkfifo(abs);
    expect(() => openSameFileSync(abs, planned, root)).toThrow(expect.objectContaining({ code: 'ENOTREG' }));
  });
  it('a parent directory turned into a symbolic link out of the root is refused, even for the very file planned', () => {
    // The planned stat is the outside file's own, so only the check of where the descriptor lies can refuse it.
    const { root, outside } = tmp();
    fs.rmSync(path.join(root, 'Docs'), { recursive: true });
    fs.symlinkSync(outside, path.join(root, 'Docs'));
    const abs = path.join(root, 'Docs', 'secret.txt');
    const planned = toFileStat(fs.lstatSync(path.join(outside, 'secret.txt')));
    expect(() => openSameFileSync(abs, planned, root)).toThrow(/outside the sync root/);
    // The same file reached from inside a root that is itself a symbolic link is fine.
    const linkedRoot = `${outside}-root`;
    fs.symlinkSync(outside, linkedRoot);
    dirs.push(linkedRoot);
    const fd = openSameFileSync(path.join(linkedRoot, 'secret.txt'), planned, linkedRoot);
    fs.closeSync(fd);
  });
});

describe('copyRegularFile (the trash and moves across disks)', () => {
  it('copies a regular file, never over an existing one', async () => {
    const { root } = tmp();
    const src = path.join(root, 'Docs', 'a.txt');
    fs.writeFileSync(src, 'abc');
    await copyRegularFile(src, path.join(root, 'copy.txt'));
    expect(fs.readFileSync(path.join(root, 'copy.txt'), 'utf8')).toBe('abc');
    await expect(copyRegularFile(src, path.join(root, 'copy.txt'))).rejects.toMatchObject({ code: 'EEXIST' });
  });
  it('refuses a symbolic link (ELOOP) and a FIFO (ENOTREG, at once), copying nothing', async () => {
    const { root, outside } = tmp();
    const link = path.join(root, 'Docs', 'link.txt');
    fs.symlinkSync(path.join(outside, 'secret.txt'), link);
    await expect(copyRegularFile(link, path.join(root, 'c1'))).rejects.toMatchObject({ code: 'ELOOP' });
    const fifo = path.join(root, 'Docs', 'fifo');
    mkfifo(fifo);
    await expect(copyRegularFile(fifo, path.join(root, 'c2'))).rejects.toMatchObject({ code: 'ENOTREG' });
    expect(fs.existsSync(path.join(root, 'c1')) || fs.existsSync(path.join(root, 'c2'))).toBe(false);
  });
});
