// Downloads a remote version into a temp file beside its destination (ignored by scans), verifying the byte
// count; the caller decides how the temp is committed (new file, replace, or compare for a conflict).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { WriteStream } from 'node:fs';
import { createTempFor, syncTempFile } from '../local/fs-ops.js';
import { isRetryable } from '../errors.js';
import type { RemoteDoc } from './model.js';
import type { ExecutorDeps } from './executor-deps.js';

export interface DownloadedTemp {
  tempPath: string;
  sha256: string;
  bytes: number;
}

const ATTEMPTS = 3;

/**
 * How much body the temp file's stream buffers while a write is in flight (the default is 16 KiB, less than
 * one socket read). Chunks arriving meanwhile go to disk together in one writev, and the socket is not
 * paused after every chunk: measured on 4 x 50 MiB, ~860 write calls instead of ~4,150 (each one a
 * thread-pool round trip), for at most 1 MiB buffered per transfer.
 */
const WRITE_BUFFER = 1 << 20;

/**
 * The file functions the temp's stream uses: node:fs's, except close, which is synchronous. Closing a file
 * fsynced just before takes microseconds; a thread-pool round trip per file costs more. (The stream calls it
 * only once no write is in flight.)
 */
const SYNC_CLOSE = {
  open: fs.open,
  write: fs.write,
  writev: fs.writev,
  close(fd: number, cb: (err: NodeJS.ErrnoException | null) => void): void {
    let err: NodeJS.ErrnoException | null = null;
    try {
      fs.closeSync(fd);
    } catch (e) {
      err = e as NodeJS.ErrnoException;
    }
    process.nextTick(cb, err);
  },
};

/**
 * Downloads doc's version next to destAbs (its folder is created when missing). The temp is fsynced and
 * closed on return, so the commit need not reopen it to sync it. A failure mid-body restarts with a fresh
 * temp file.
 */
export async function downloadToTemp(d: ExecutorDeps, doc: RemoteDoc, destAbs: string): Promise<DownloadedTemp> {
  const dir = path.dirname(destAbs);
  for (let attempt = 1; ; attempt++) {
    const { path: tempPath, fd } = await createTempFor(dir);
    // The stream owns the descriptor from here on: it is closed only through it (closeStream), never
    // behind a write it may still have in flight. autoClose false: the stream finishes once the last byte is
    // written, which ends the transfer and frees its slot in the client's transfer queue; the fsync (slow for
    // a large file) happens after that. WRITE_BUFFER: see there.
    const out = fs.createWriteStream(tempPath, { fd, autoClose: false, highWaterMark: WRITE_BUFFER, fs: SYNC_CLOSE });
    try {
      const res = await d.client.downloadVersionTo(doc.documentId, doc.versionId, out, {
        ...(d.signal ? { signal: d.signal } : {}),
        ...(d.onBytes ? { onBytes: d.onBytes } : {}),
      });
      if (out.bytesWritten !== res.bytes) throw new Error(`wrote ${out.bytesWritten} bytes of ${res.bytes}`);
      await syncTempFile(fd, tempPath);
      await closeStream(out);
      return { tempPath, sha256: res.sha256, bytes: res.bytes };
    } catch (err) {
      await closeStream(out).catch(() => undefined);
      await fsp.rm(tempPath, { force: true });
      if (attempt >= ATTEMPTS || !isRetryable(err)) throw err;
      d.log.debug({ relPath: doc.relPath, attempt }, 'download interrupted; starting again');
    }
  }
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
