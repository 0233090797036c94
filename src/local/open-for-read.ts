// Opening a file of the sync root to read its bytes (to hash it, to upload it) without trusting the path the
// scan saw: between the scan's lstat and the open, a program (or an attacker sharing the folder) may put a
// symbolic link, a FIFO or another file there, or turn a parent directory into a symbolic link that leads
// out of the root. Read through such a path, an upload sent a file from outside the root to storage, and a
// FIFO blocked the pass forever (open(2) waits for a writer) (black-box round 37a, F1 and F2).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { sameStat, type FileStat } from '../sync/model.js';

/**
 * O_NOFOLLOW: a symbolic link at the path fails (ELOOP) instead of being followed. O_NONBLOCK: a FIFO opens at
 * once instead of waiting for a writer (it then fails the regular-file check); no effect on regular files.
 */
export const READ_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/** What the caller is told when the path no longer names the file it planned for (an errno-like code). */
export class NotTheFileError extends Error {
  constructor(
    readonly abs: string,
    readonly why: string,
    readonly code = 'ENOTREG',
  ) {
    super(`${abs}: ${why}`);
    this.name = 'NotTheFileError';
  }
}

/**
 * Opens abs for reading when it is a regular file (not followed through a final symbolic link, never waiting on a
 * FIFO). Rejects with the fs error (ENOENT, EACCES, ELOOP for a symbolic link...) or NotTheFileError (ENOTREG).
 */
export async function openRegularFile(abs: string): Promise<{ handle: fsp.FileHandle; size: number }> {
  const handle = await fsp.open(abs, READ_FLAGS);
  try {
    // fstat synchronously: microseconds, where a thread-pool round trip per file showed on a scan of many small
    // files. Its size is handed on, so the caller needs no second fstat.
    const st = fs.fstatSync(handle.fd);
    if (!st.isFile()) throw new NotTheFileError(abs, 'not a regular file any more');
    return { handle, size: st.size };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * Copies the regular file at src to a new file dest (COPYFILE_EXCL), never through a final symbolic link nor
 * waiting on a FIFO: the file is opened first (openRegularFile), then copied from that open file through
 * /proc/self/fd (the very inode checked, whatever is at the path by then), or from src where /proc is missing.
 */
export async function copyRegularFile(src: string, dest: string): Promise<void> {
  const { handle } = await openRegularFile(src);
  try {
    const opened = `/proc/self/fd/${handle.fd}`;
    await fsp.copyFile(fs.existsSync(opened) ? opened : src, dest, fs.constants.COPYFILE_EXCL);
  } finally {
    await handle.close();
  }
}

/**
 * Opens abs for reading only when it is still the very file `expect` describes (its inode, size, mtime and
 * ctime, as sameStat compares them) and, where /proc shows it, the open file lies inside `root`: a parent
 * directory swapped for a symbolic link leads to another file, or outside the root. Returns the descriptor
 * (the caller closes it). Throws NotTheFileError, or the fs error of the open (ENOENT, ELOOP...).
 */
export function openSameFileSync(abs: string, expect: FileStat, root: string): number {
  const fd = fs.openSync(abs, READ_FLAGS);
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new NotTheFileError(abs, 'it is not a regular file any more');
    if (!sameStat({ size: st.size, mtimeMs: st.mtimeMs, inode: st.ino, ctimeMs: st.ctimeMs }, expect)) throw new NotTheFileError(abs, 'it is not the file that was read (replaced, or reached through a symbolic link now)');
    const opened = openedPath(fd);
    if (opened !== null && !insideRealRoot(root, opened)) throw new NotTheFileError(abs, 'its path leads outside the sync root through a symbolic link now');
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/** Where the kernel says descriptor fd is open (Linux /proc), or null when it cannot tell. */
function openedPath(fd: number): string | null {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

function insideRealRoot(root: string, real: string): boolean {
  let realRoot: string;
  try {
    realRoot = fs.realpathSync.native(root);
  } catch {
    return false;
  }
  const rel = path.relative(realRoot, real);
  return rel !== '' && !rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel);
}
