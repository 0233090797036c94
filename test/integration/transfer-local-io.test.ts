// Local I/O of large transfers: the download temp file's early flushes (a flush's failure is reported, the
// descriptor is not closed under a flush in flight) and hashing of large files in worker threads (same
// digest, errors and aborts surface, the descriptor stays the caller's).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HashPool } from '../../src/local/hash-pool.js';
import { hashFile, WORKER_MIN_BYTES } from '../../src/local/hash.js';
import { syncTempFile } from '../../src/local/fs-ops.js';
import { tempFileFs } from '../../src/sync/download.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'transfer-io-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function pattern(size: number, seed: number): Buffer {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

/** Writes `chunks` through a WriteStream using `impl` and waits until every byte is written (not closed). */
async function writeThrough(fd: number, p: string, impl: ReturnType<typeof tempFileFs>['fs'], chunks: Buffer[]): Promise<fs.WriteStream> {
  const out = fs.createWriteStream(p, { fd, autoClose: false, highWaterMark: 64 * 1024, fs: impl });
  for (const c of chunks) if (!out.write(c)) await new Promise<void>((r) => out.once('drain', () => r()));
  await new Promise<void>((resolve, reject) => {
    out.once('error', reject);
    out.end(resolve);
  });
  return out;
}

describe('download temp file with early flushes', () => {
  it('writes every byte in order, flushes along the way, then syncs and closes the descriptor', async () => {
    const p = path.join(dir, 'temp');
    const fd = fs.openSync(p, 'wx', 0o600);
    const data = pattern(1024 * 1024 + 123, 7);
    const chunks = Array.from({ length: Math.ceil(data.length / 10_000) }, (_, i) => data.subarray(i * 10_000, (i + 1) * 10_000));
    const temp = tempFileFs(64 * 1024);
    let flushes = 0;
    const fdatasync = fs.fdatasync;
    fs.fdatasync = ((fdArg: number, cb: fs.NoParamCallback) => {
      flushes++;
      fdatasync(fdArg, cb);
    }) as typeof fs.fdatasync;
    try {
      const out = await writeThrough(fd, p, temp.fs, chunks);
      await syncTempFile(fd, p, temp.settle);
      await new Promise<void>((resolve) => {
        out.once('close', () => resolve());
        out.destroy();
      });
    } finally {
      fs.fdatasync = fdatasync;
    }
    expect(flushes).toBeGreaterThanOrEqual(1);
    expect(sha(fs.readFileSync(p))).toBe(sha(data));
    expect(() => fs.fstatSync(fd)).toThrow(/EBADF/);
  });

  it('reports an early flush that failed: the final sync fails too, as LOCAL_IO', async () => {
    // fdatasync on a pipe fails (EINVAL) where writes succeed: a stand-in for a write-back error.
    // Opened read-write, a FIFO's own pipe buffer (64 KiB) takes the 8 KiB written without a reader.
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const fd = fs.openSync(fifo, fs.constants.O_RDWR);
    const temp = tempFileFs(1024);
    const out = await writeThrough(fd, fifo, temp.fs, [pattern(4096, 1), pattern(4096, 2)]);
    await expect(temp.settle()).rejects.toMatchObject({ code: 'EINVAL' });
    await expect(syncTempFile(fd, fifo, temp.settle)).rejects.toMatchObject({ code: 'LOCAL_IO' });
    await new Promise<void>((resolve) => {
      out.once('close', () => resolve());
      out.destroy();
    });
  });
});

describe('hashing large files in worker threads', () => {
  it('hashFile gives the same digest and size for a file above the worker threshold', async () => {
    const data = pattern(WORKER_MIN_BYTES + 4097, 3);
    const p = path.join(dir, 'big');
    fs.writeFileSync(p, data);
    expect(await hashFile(p)).toEqual({ sha256: sha(data), size: data.length });
    fs.mkdirSync(path.join(dir, 'sub'));
    await expect(hashFile(path.join(dir, 'sub', 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('runs more files than workers, keeps the descriptors the callers own, and passes read errors on', async () => {
    const pool = new HashPool(2);
    try {
      const files = [0, 1, 2, 3, 4].map((i) => {
        const data = pattern(1024 * 1024 + i, i);
        const p = path.join(dir, `f${i}`);
        fs.writeFileSync(p, data);
        return { fd: fs.openSync(p, 'r'), digest: sha(data), size: data.length };
      });
      const got = await Promise.all(files.map((f) => pool.hashFd(f.fd)));
      expect(got).toEqual(files.map((f) => ({ sha256: f.digest, size: f.size })));
      expect(pool.size).toBeLessThanOrEqual(2);
      for (const f of files) fs.closeSync(f.fd); // still open: the pool never closes them
      const dirFd = fs.openSync(dir, 'r');
      try {
        await expect(pool.hashFd(dirFd)).rejects.toMatchObject({ code: 'EISDIR' });
      } finally {
        fs.closeSync(dirFd);
      }
      const again = fs.openSync(path.join(dir, 'f0'), 'r');
      expect(await pool.hashFd(again)).toMatchObject({ sha256: files[0]?.digest });
      fs.closeSync(again);
    } finally {
      await pool.close();
    }
    expect(pool.size).toBe(0);
  });

  it('an abort stops the worker before rejecting, and the pool goes on with a fresh one', async () => {
    const pool = new HashPool(1);
    try {
      // 256 MiB take the worker well over the 20 ms before the abort; stopping it ends the job at once.
      const big = path.join(dir, 'huge');
      const fdw = fs.openSync(big, 'w');
      const mib = pattern(1024 * 1024, 5);
      for (let i = 0; i < 256; i++) fs.writeSync(fdw, mib);
      fs.closeSync(fdw);
      const fd = fs.openSync(big, 'r');
      const ac = new AbortController();
      const started = performance.now();
      const pending = pool.hashFd(fd, ac.signal);
      setTimeout(() => ac.abort(new Error('stop')), 20);
      await expect(pending).rejects.toThrow('stop');
      expect(performance.now() - started).toBeLessThan(2_000);
      fs.closeSync(fd);
      const data = pattern(5000, 9);
      const p = path.join(dir, 'after');
      fs.writeFileSync(p, data);
      const fd2 = fs.openSync(p, 'r');
      expect(await pool.hashFd(fd2)).toEqual({ sha256: sha(data), size: data.length });
      fs.closeSync(fd2);
    } finally {
      await pool.close();
    }
  });
});
