// Downloads a remote version into a temp file beside its destination (ignored by scans), verifying the byte
// count; the caller decides how the temp is committed (new file, replace, or compare for a conflict).
import fs from 'node:fs/promises';
import path from 'node:path';
import { createTempFileIn, ensureDir } from '../local/fs-ops.js';
import { isRetryable } from '../errors.js';
import type { RemoteDoc } from './model.js';
import type { ExecutorDeps } from './executor-deps.js';

export interface DownloadedTemp {
  tempPath: string;
  sha256: string;
  bytes: number;
}

const ATTEMPTS = 3;

/** Downloads doc's version next to destAbs. A failure mid-body restarts with a fresh temp file. */
export async function downloadToTemp(d: ExecutorDeps, doc: RemoteDoc, destAbs: string): Promise<DownloadedTemp> {
  const dir = path.dirname(destAbs);
  await ensureDir(dir);
  for (let attempt = 1; ; attempt++) {
    const { path: tempPath, handle } = await createTempFileIn(dir);
    try {
      // flush: the descriptor is fsynced before it closes, so the commit need not reopen the file to sync it.
      const out = handle.createWriteStream({ flush: true });
      const closed = new Promise<void>((resolve) => out.once('close', () => resolve()));
      const res = await d.client.downloadVersionTo(doc.documentId, doc.versionId, out, {
        ...(d.signal ? { signal: d.signal } : {}),
        ...(d.onBytes ? { onBytes: d.onBytes } : {}),
      });
      await closed;
      if (out.bytesWritten !== res.bytes) throw new Error(`wrote ${out.bytesWritten} bytes of ${res.bytes}`);
      return { tempPath, sha256: res.sha256, bytes: res.bytes };
    } catch (err) {
      await handle.close().catch(() => undefined);
      await fs.rm(tempPath, { force: true });
      if (attempt >= ATTEMPTS || !isRetryable(err)) throw err;
      d.log.debug({ relPath: doc.relPath, attempt }, 'download interrupted; starting again');
    }
  }
}
