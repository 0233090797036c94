// Blob files of the emulator's storage: content is streamed to a temp file and renamed into place, never
// held whole in memory, so multi-GiB transfers work. With durable=true (a dataDir) files are fsynced.
import { createWriteStream, mkdirSync, openSync, fsyncSync, closeSync, renameSync, rmSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { guid } from './ids.js';

export class BlobStore {
  private readonly blobDir: string;
  private readonly tmpDir: string;

  constructor(
    root: string,
    private readonly durable: boolean,
  ) {
    this.blobDir = join(root, 'blobs');
    this.tmpDir = join(root, 'tmp');
    mkdirSync(this.blobDir, { recursive: true });
    // Leftovers of an interrupted PUT are garbage: start every run with an empty tmp dir.
    rmSync(this.tmpDir, { recursive: true, force: true });
    mkdirSync(this.tmpDir, { recursive: true });
  }

  path(blobId: string): string {
    return join(this.blobDir, blobId);
  }

  exists(blobId: string): boolean {
    return existsSync(this.path(blobId));
  }

  /**
   * Small content from the control interface or the demo seed. `sync: false` skips the fsync: the seed
   * writes hundreds of blobs that can be regenerated, and one fsync each would make it take seconds.
   */
  writeSync(blobId: string, content: Buffer, sync = true): void {
    const tmp = join(this.tmpDir, guid());
    writeFileSync(tmp, content);
    this.finish(tmp, blobId, sync);
  }

  /**
   * Streams `source` into the blob. Resolves with the byte count once the blob is in place; rejects (and
   * leaves no blob) when the stream breaks off or carries fewer bytes than `expectedLength`.
   */
  async receive(source: Readable, blobId: string, expectedLength: number | undefined): Promise<number> {
    const tmp = join(this.tmpDir, guid());
    let size = 0;
    source.on('data', (chunk: Buffer) => {
      size += chunk.length;
    });
    try {
      await pipeline(source, createWriteStream(tmp));
      if (expectedLength !== undefined && size !== expectedLength) {
        throw new Error(`received ${size} of ${expectedLength} bytes`);
      }
      this.finish(tmp, blobId);
      return size;
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
  }

  read(blobId: string): Buffer {
    return readFileSync(this.path(blobId));
  }

  remove(blobId: string): void {
    rmSync(this.path(blobId), { force: true });
  }

  private finish(tmp: string, blobId: string, sync = true): void {
    if (this.durable && sync) {
      const fd = openSync(tmp, 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    renameSync(tmp, this.path(blobId));
  }
}
