// Worker threads that hash large files, so a scan that finds several big new files uses every core instead of
// hashing them one after another on the event loop (measured on 20 x 50 MiB: ~0.63 s of hashing before the
// first upload could start, about half of that with two workers). Workers start on demand and stop when idle.
import os from 'node:os';
import { Worker } from 'node:worker_threads';

/** The worker's code (CommonJS, eval'd: no file to locate in dist/ or under vitest). */
const WORKER_CODE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const buf = Buffer.allocUnsafe(1 << 20);
parentPort.on('message', ({ id, fd }) => {
  try {
    const hash = createHash('sha256');
    let size = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, size);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      size += n;
    }
    parentPort.postMessage({ id, sha256: hash.digest('hex'), size });
  } catch (e) {
    parentPort.postMessage({ id, error: { message: String(e && e.message), code: e && e.code } });
  }
});`;

type Reply = { id: number; sha256: string; size: number } | { id: number; error: { message: string; code?: string } };

/** A worker left idle this long is stopped (each one holds a few MiB; a daemon idles most of the time). */
const IDLE_MS = 10_000;

export class HashPool {
  private readonly idle: Array<{ worker: Worker; timer: NodeJS.Timeout }> = [];
  private readonly waiting: Array<(w: Worker | null) => void> = [];
  private started = 0;
  private nextId = 1;

  constructor(readonly max: number = Math.max(1, Math.min(4, os.availableParallelism()))) {}

  /**
   * Hashes the file open at `fd` from offset 0 in a worker, or returns null when no worker can be started
   * (the caller then hashes on its own thread). The caller keeps the descriptor and closes it after this
   * settles: on abort the worker is stopped first, so no read is left running on it.
   */
  async hashFd(fd: number, signal?: AbortSignal): Promise<{ sha256: string; size: number } | null> {
    signal?.throwIfAborted();
    const worker = await this.take();
    if (worker === null) return null;
    let healthy = false;
    try {
      const reply = await new Promise<Reply>((resolve, reject) => {
        const id = this.nextId++;
        const cleanup = (): void => {
          worker.off('message', onMessage);
          worker.off('error', onError);
          worker.off('exit', onExit);
          signal?.removeEventListener('abort', onAbort);
        };
        const onMessage = (m: Reply): void => {
          if (m.id !== id) return;
          cleanup();
          resolve(m);
        };
        const onError = (err: Error): void => {
          cleanup();
          reject(err);
        };
        const onExit = (code: number): void => {
          cleanup();
          reject(new Error(`hash worker exited (${code})`));
        };
        const onAbort = (): void => {
          cleanup();
          // Stopped before the promise settles, so the caller may close fd right after.
          const fail = (): void => reject(signal?.reason);
          worker.terminate().then(fail, fail);
        };
        worker.on('message', onMessage);
        worker.on('error', onError);
        worker.on('exit', onExit);
        signal?.addEventListener('abort', onAbort, { once: true });
        signal?.throwIfAborted();
        worker.postMessage({ id, fd });
      });
      healthy = true;
      if ('error' in reply) throw Object.assign(new Error(reply.error.message), reply.error.code ? { code: reply.error.code } : {});
      return { sha256: reply.sha256, size: reply.size };
    } finally {
      if (healthy) this.give(worker);
      else void this.drop(worker);
    }
  }

  /** Workers running now (busy or idle); for tests. */
  get size(): number {
    return this.started;
  }

  /** Stops the idle workers (a busy one is stopped once idle). */
  async close(): Promise<void> {
    const all = this.idle.splice(0);
    for (const { timer } of all) clearTimeout(timer);
    await Promise.all(all.map(({ worker }) => this.drop(worker)));
  }

  /** An idle worker, a new one (up to max), or the next one freed; null when a worker cannot be started. */
  private take(): Promise<Worker | null> {
    const free = this.idle.pop();
    if (free) {
      clearTimeout(free.timer);
      free.worker.ref();
      return Promise.resolve(free.worker);
    }
    if (this.started >= this.max) return new Promise((resolve) => this.waiting.push(resolve));
    let worker: Worker;
    try {
      worker = new Worker(WORKER_CODE, { eval: true });
    } catch {
      return Promise.resolve(null);
    }
    this.started++;
    // An idle worker that fails or exits is forgotten (a busy one's job sees it through its own listeners);
    // without an 'error' listener such an event would crash the process.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      const i = this.idle.findIndex((e) => e.worker === worker);
      if (i >= 0) {
        clearTimeout(this.idle[i]?.timer);
        this.idle.splice(i, 1);
        this.started--;
      }
    });
    return Promise.resolve(worker);
  }

  private give(worker: Worker): void {
    const next = this.waiting.shift();
    if (next) {
      next(worker);
      return;
    }
    worker.unref();
    const entry = {
      worker,
      timer: setTimeout(() => {
        const i = this.idle.indexOf(entry);
        if (i >= 0) this.idle.splice(i, 1);
        void this.drop(worker);
      }, IDLE_MS),
    };
    entry.timer.unref();
    this.idle.push(entry);
  }

  /** Stops a worker that is not in `idle`; a caller waiting for one gets a fresh worker (or null) instead. */
  private async drop(worker: Worker): Promise<void> {
    this.started--;
    const next = this.waiting.shift();
    if (next) void this.take().then(next);
    await worker.terminate().catch(() => undefined);
  }
}
