// Putting a file kept in a pair's trash back into its sync root (`binder-sync trash restore`). It is written
// like every other file this tool writes there: a temp file in the target folder, fsynced, then linked into
// place without clobbering anything; a file already at the target is replaced only when asked, and then kept
// in the trash first. The trash copy stays until its day is purged. The daemon (or the next `sync`) sees the
// restored file as a local change and uploads it.
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { BinderSyncError } from '../errors.js';
import { commitTempFile, createTempFor, localIo, replaceFile, resolveInside, syncTempFile, toFileStat, type Trash } from './fs-ops.js';
import { isPartialCopy, isTrashRecord } from './trash-entries.js';

export interface RestoreResult {
  /** Absolute path of the restored file. */
  restoredTo: string;
  bytes: number;
  /** Where the file that was at the target went (only with `replace`). */
  replacedKeptAt: string | null;
}

/**
 * Copies the trash entry `<day>/<path>` of `trash` to relPath under `trash.root`. Refuses an entry outside the
 * trash or not a file (TRASH_ENTRY_UNKNOWN), a target that exists unless `replace` (RESTORE_TARGET_EXISTS),
 * and a relPath that leaves the root (PATH_ESCAPE).
 */
export async function restoreFromTrash(trash: Trash, entry: string, relPath: string, opts: { replace?: boolean; signal?: AbortSignal } = {}): Promise<RestoreResult> {
  try {
    return await restore(trash, entry, relPath, opts);
  } catch (err) {
    // A filesystem error (EACCES, ENOSPC, ENAMETOOLONG...) said as the local failure it is, with the path.
    throw localIo(err, 'restore from the trash', path.join(trash.root, relPath));
  }
}

async function restore(trash: Trash, entry: string, relPath: string, opts: { replace?: boolean; signal?: AbortSignal }): Promise<RestoreResult> {
  const source = trashEntryPath(trash.dir, entry);
  let target: string;
  try {
    target = resolveInside(trash.root, relPath);
  } catch (err) {
    // The path came from the user, not from the service: say so.
    if (err instanceof BinderSyncError && err.code === 'PATH_ESCAPE') {
      throw new BinderSyncError(err.message, { code: 'PATH_ESCAPE', retryable: false, context: { entry, relPath }, hint: '--to names a path inside the sync root, relative to it (or absolute inside it); nothing was written' });
    }
    throw err;
  }
  const existing = fs.lstatSync(target, { throwIfNoEntry: false });
  if (existing !== undefined && !existing.isFile()) {
    throw new BinderSyncError(`cannot restore to ${target}: ${existing.isDirectory() ? 'a folder' : 'something other than a file'} is there`, {
      code: 'RESTORE_TARGET_EXISTS',
      retryable: false,
      context: { entry, target },
      hint: 'name another path with --to',
    });
  }
  if (existing !== undefined && opts.replace !== true) {
    throw new BinderSyncError(`cannot restore to ${target}: a file is there (nothing was changed)`, {
      code: 'RESTORE_TARGET_EXISTS',
      retryable: false,
      context: { entry, target },
      hint: 'name another path with --to, or add --replace: the file that is there is then kept in the trash first',
    });
  }
  const kept = fs.statSync(source);
  const temp = await createTempFor(path.dirname(target));
  try {
    const out = fs.createWriteStream('', { fd: temp.fd, autoClose: false });
    // A stop (Ctrl-C) ends the copy; the temp file is removed below, so nothing is left in the sync root.
    await pipeline(fs.createReadStream(source), out, opts.signal ? { signal: opts.signal } : {});
    // The content's own modification time, as `cp -p` keeps it: the restored file is the kept one.
    fs.futimesSync(temp.fd, kept.atime, kept.mtime);
    await syncTempFile(temp.fd, temp.path);
  } catch (err) {
    fs.rmSync(temp.path, { force: true });
    try {
      fs.closeSync(temp.fd);
    } catch {
      /* the stream closed it as it was torn down */
    }
    throw err;
  }
  const own = fs.fstatSync(temp.fd);
  fs.closeSync(temp.fd);
  const written = { ino: own.ino, dev: own.dev, size: own.size, root: trash.root };
  if (opts.signal?.aborted === true) {
    fs.rmSync(temp.path, { force: true });
    throw opts.signal.reason;
  }
  try {
    if (existing === undefined) {
      // Its own mode, as kept (a private file stays private), not its new directory's.
      await commitTempFile(temp.path, target, null, { synced: true, mode: kept.mode & 0o7777, written });
      return { restoredTo: target, bytes: kept.size, replacedKeptAt: null };
    }
    const { trashPath } = await replaceFile(temp.path, target, toFileStat(existing), trash, relPath, written);
    return { restoredTo: target, bytes: kept.size, replacedKeptAt: trashPath };
  } catch (err) {
    throw restoreCutShort(err, target);
  }
}

/**
 * The target's folder moved (to another disk and back, or replaced by a symbolic link) while the file was copied
 * into it: said for a restore, which no later pass takes up, not as a pass's "changed since it was scanned"
 * (black-box round 33a, F3).
 */
function restoreCutShort(err: unknown, target: string): unknown {
  if (!(err instanceof BinderSyncError) || err.code !== 'LOCAL_CHANGED' || err.context.folderMoved !== true) return err;
  return new BinderSyncError(`cannot restore to ${target}: its folder was moved or replaced by a symbolic link while the file was copied into it; nothing was restored (the trash still holds it)`, {
    code: 'LOCAL_TARGET_MOVED',
    retryable: true,
    context: { target },
    hint: 'put the folder back where it belongs (or name another place with --to), then run the restore again',
    cause: err,
  });
}

/** The absolute path of a trash entry (`<YYYY-MM-DD>/<path>`), which must be a file inside the trash. */
export function trashEntryPath(trashDir: string, entry: string): string {
  const unknown = (why: string) =>
    new BinderSyncError(`no file ${JSON.stringify(entry)} in the trash ${trashDir}: ${why}`, {
      code: 'TRASH_ENTRY_UNKNOWN',
      retryable: false,
      context: { entry, trashDir },
      hint: '`binder-sync trash -c <config> --pair <name>` lists what the trash holds, as <day>/<path>',
    });
  const parts = entry.split('/');
  if (parts.length < 2 || !/^\d{4}-\d{2}-\d{2}$/.test(parts[0]!)) throw unknown('an entry is <YYYY-MM-DD>/<path>');
  if (parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\0'))) throw unknown('not a path inside the trash');
  if (isTrashRecord(path.join(trashDir, parts[0]!), parts.slice(1).join('/'))) throw unknown('a record of where a kept file came from, not a kept file');
  // A copy into the trash cut short by a crash, or still being made (black-box round 36a, F2: restored, a
  // truncated file was uploaded as a new document).
  if (isPartialCopy(parts.slice(1).join('/'))) throw unknown('a copy into the trash not finished (cut short by a crash, or under way), not a kept file');
  const abs = path.join(trashDir, ...parts);
  const st = fs.lstatSync(abs, { throwIfNoEntry: false });
  if (st === undefined) throw unknown('not there (purged after trashRetentionDays, or mistyped)');
  if (!st.isFile()) throw unknown(st.isDirectory() ? 'a folder, not a file' : 'not a regular file');
  return abs;
}
