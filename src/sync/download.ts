// Downloads a remote version into a temp file beside its destination (ignored by scans), verifying the byte
// count; the caller decides how the temp is committed (new file, replace, or compare for a conflict).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { WriteStream } from 'node:fs';
import { createTempFor, localChanged, removeStrayTemp, strayTempOf, syncTempFile, type WrittenTemp } from '../local/fs-ops.js';
import { freeBytes } from '../local/fs-probe.js';
import { hashOpenFile, WORKER_MIN_BYTES } from '../local/hash.js';
import { BinderSyncError, isRetryable } from '../errors.js';
import { fmtBytes } from '../format-bytes.js';
import type { RemoteDoc } from './model.js';
import type { ExecutorDeps } from './executor-deps.js';

export interface DownloadedTemp {
  tempPath: string;
  sha256: string;
  bytes: number;
  /** The file written, as commitTempFile / replaceFile check it before it gets its name. */
  written: WrittenTemp;
}

const ATTEMPTS = 3;

/** Failures that a fresh start of the download would only meet again (see downloadToTemp). */
const NOT_RESTARTED: ReadonlySet<string> = new Set(['LOCAL_IO', 'LOCAL_CHANGED', 'STORAGE_LINK_EXPIRED']);

/**
 * How much body the temp file's stream buffers while a write is in flight (the default is 16 KiB, less than
 * one socket read). Chunks arriving meanwhile go to disk together in one writev, and the socket is not
 * paused after every chunk: measured on 4 x 50 MiB, ~860 write calls instead of ~4,150 (each one a
 * thread-pool round trip), for at most 1 MiB buffered per transfer.
 */
const WRITE_BUFFER = 1 << 20;

/**
 * Written bytes after which the temp file's data is flushed early (fdatasync, in the background, one at a time
 * per file) while the download goes on. A download must be fsynced before it is committed, and without these
 * the disk would only start writing a file once its last byte arrived: the final fsync of a large file then
 * waits for all of it (measured on 20 x 50 MiB: the fsyncs made up most of the gap to the floor, which never
 * fsyncs). Early flushes keep the disk busy during the transfer, so the final fsync finds little left to write.
 * Files smaller than this are not affected.
 */
const EARLY_FLUSH_BYTES = 8 << 20;

type WriteCb = (err: NodeJS.ErrnoException | null, written: number, buffer: unknown) => void;
type CloseCb = (err: NodeJS.ErrnoException | null) => void;

/** The file functions a WriteStream calls (its `fs` option). */
interface StreamFs {
  open: typeof fs.open;
  write(fd: number, buffer: Buffer, offset: number, length: number, position: number | null, cb: WriteCb): void;
  writev(fd: number, buffers: Buffer[], position: number | null, cb: WriteCb): void;
  close(fd: number, cb: CloseCb): void;
}

/**
 * The file functions of one temp file's stream: node:fs's, with an early fdatasync every EARLY_FLUSH_BYTES
 * written, and a synchronous close (closing a file fsynced just before takes microseconds; a thread-pool
 * round trip per file costs more). The descriptor is never closed while an early flush is in flight (its
 * number could be reused by another open before the flush runs), and a flush's error is kept and reported by
 * settle(): once an fdatasync has reported a write-back error, Linux does not report it again to the final
 * fsync on the same descriptor, so ignoring it could commit a file whose data never reached the disk.
 */
export function tempFileFs(earlyFlushBytes = EARLY_FLUSH_BYTES): {
  fs: StreamFs;
  /** Waits for the early flush in flight, if any; rejects with the first early flush's error. */
  settle(): Promise<void>;
} {
  let unflushed = 0;
  let inFlight: Promise<void> | null = null;
  let failure: NodeJS.ErrnoException | null = null;
  const wrote = (fd: number, n: number): void => {
    unflushed += n;
    if (inFlight !== null || unflushed < earlyFlushBytes) return;
    unflushed = 0;
    inFlight = new Promise((resolve) => {
      fs.fdatasync(fd, (err) => {
        failure ??= err;
        inFlight = null;
        resolve();
      });
    });
  };
  const closeNow = (fd: number, cb: CloseCb): void => {
    let err: NodeJS.ErrnoException | null = null;
    try {
      fs.closeSync(fd);
    } catch (e) {
      err = e as NodeJS.ErrnoException;
    }
    process.nextTick(cb, err);
  };
  return {
    fs: {
      open: fs.open,
      write(fd: number, buffer: Buffer, offset: number, length: number, position: number | null, cb: WriteCb): void {
        fs.write(fd, buffer, offset, length, position, (err, n, b) => {
          if (err === null) wrote(fd, n);
          cb(err, n, b);
        });
      },
      writev(fd: number, buffers: Buffer[], position: number | null, cb: WriteCb): void {
        fs.writev(fd, buffers, position, (err, n, b) => {
          if (err === null) wrote(fd, n);
          cb(err, n, b);
        });
      },
      close(fd: number, cb: CloseCb): void {
        if (inFlight === null) closeNow(fd, cb);
        else void inFlight.then(() => closeNow(fd, cb));
      },
    },
    async settle(): Promise<void> {
      while (inFlight !== null) await inFlight;
      if (failure !== null) throw failure;
    },
  };
}

/**
 * Downloads doc's version next to destAbs (its folder is created when missing). The temp is fsynced and
 * closed on return, so the commit need not reopen it to sync it. A failure mid-body restarts with a fresh
 * temp file.
 */
export async function downloadToTemp(d: ExecutorDeps, doc: Pick<RemoteDoc, 'documentId' | 'versionId' | 'relPath'>, destAbs: string): Promise<DownloadedTemp> {
  const dir = path.dirname(destAbs);
  for (let attempt = 1; ; attempt++) {
    const { path: tempPath, fd } = await createTempFor(dir);
    // The stream owns the descriptor from here on: it is closed only through it (closeStream), never
    // behind a write it may still have in flight. autoClose false: the stream finishes once the last byte is
    // written, which ends the transfer and frees its slot in the client's transfer queue; the fsync (slow for
    // a large file) happens after that. WRITE_BUFFER and early flushes: see there.
    const temp = tempFileFs();
    const out = fs.createWriteStream(tempPath, { fd, autoClose: false, highWaterMark: WRITE_BUFFER, fs: temp.fs });
    try {
      const res = await d.client.downloadVersionTo(doc.documentId, doc.versionId, out, {
        ...(d.signal ? { signal: d.signal } : {}),
        ...(d.windDown ? { windDown: d.windDown } : {}),
        ...(d.onBytes ? { onBytes: d.onBytes } : {}),
        hashBelowBytes: WORKER_MIN_BYTES,
        beforeBody: (bytes) => ensureRoomFor(dir, bytes, destAbs),
      });
      if (out.bytesWritten !== res.bytes) throw new Error(`wrote ${out.bytesWritten} bytes of ${res.bytes}`);
      // A large file was only counted on its way in: it is hashed from the temp file by a worker while the
      // fsync runs (the hash describes exactly the bytes written), instead of on the event loop during the transfer.
      // Both settle before the descriptor may be closed (neither may be left running on it).
      const [hashed, synced] = await Promise.allSettled([res.sha256 ?? hashWritten(fd, tempPath, res.bytes, d.signal), syncTempFile(fd, tempPath, temp.settle)]);
      if (synced.status === 'rejected') throw synced.reason;
      if (hashed.status === 'rejected') throw hashed.reason;
      const sha256 = hashed.value;
      // Its folder moved away during the transfer (maybe out of the root): the file went with it, and cannot be
      // put in place from there. Removed where it went; the next pass plans again.
      const strayed = strayTempOf(fd, tempPath);
      if (strayed !== null) throw localChanged(destAbs, 'its folder was moved or removed during the download');
      const own = fs.fstatSync(fd);
      await closeStream(out);
      return { tempPath, sha256, bytes: res.bytes, written: { ino: own.ino, dev: own.dev, size: res.bytes, root: d.root } };
    } catch (err) {
      const stray = strayTempOf(fd, tempPath); // before the descriptor is closed
      await closeStream(out).catch(() => undefined);
      await fsp.rm(tempPath, { force: true }).catch(() => undefined);
      if (stray !== null && removeStrayTemp(stray)) d.log.debug({ relPath: doc.relPath, at: stray.path }, 'removed the temp file that moved with its folder');
      // A local failure (no room, a write error) is not mended by fetching the version again at once; nor is a
      // link storage refused, for which the client already asked fresh ones (black-box round 37b, F7: started
      // over three times, each with its own fresh links).
      if (attempt >= ATTEMPTS || !isRetryable(err) || (err instanceof BinderSyncError && NOT_RESTARTED.has(err.code))) throw err;
      d.log.debug({ relPath: doc.relPath, attempt }, 'download interrupted; starting again');
    }
  }
}

const ROOM_CHECK_FROM_BYTES = 1024 * 1024;

/**
 * Refuses a download the disk has no room for before its body is read: a full disk otherwise cost the whole
 * version on every pass, only to fail at the last block (black-box round 28b, F2). When the free space cannot
 * be read, the write itself decides.
 */
function ensureRoomFor(dir: string, bytes: number | undefined, destAbs: string): void {
  // A small file costs little to fetch in vain; a statfs for each of 10,000 small downloads would cost more.
  if (bytes === undefined || bytes < ROOM_CHECK_FROM_BYTES) return;
  const free = freeBytes(dir);
  if (free === null || free >= bytes) return;
  throw new BinderSyncError(`not enough free space (ENOSPC) for ${destAbs}: the version is ${fmtBytes(bytes)}, the disk has ${fmtBytes(free)} free`, {
    code: 'LOCAL_IO',
    retryable: true,
    context: { path: destAbs, errno: 'ENOSPC', bytes, free },
    hint: 'free some disk space; nothing of it was fetched, and a pass after that downloads it',
  });
}

/** The SHA-256 of the temp file just written, which must hold exactly `bytes`. */
async function hashWritten(fd: number, tempPath: string, bytes: number, signal: AbortSignal | undefined): Promise<string> {
  const h = await hashOpenFile(fd, signal);
  if (h.size !== bytes) throw new Error(`${tempPath} holds ${h.size} bytes after writing ${bytes}`);
  return h.sha256;
}

/** Closes the stream and with it the temp's descriptor (destroy waits for a write in flight). */
function closeStream(out: WriteStream): Promise<void> {
  if (out.closed) return Promise.resolve();
  return new Promise((resolve, reject) => {
    out.once('close', () => resolve());
    out.once('error', reject);
    out.destroy();
  });
}
