// The executor's download path against a real temp dir and state DB, with a fake client: many files at once
// into folders that do not exist yet, base rows that describe exactly what is on disk, nothing left behind
// (temp files, intents, descriptors), retries on a fresh temp, and a file appearing at the target kept.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Trash, toFileStat } from '../../src/local/fs-ops.js';
import { ServiceError } from '../../src/service/index.js';
import { StateStore } from '../../src/state/store.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { executePlan } from '../../src/sync/executor.js';
import type { Action, Plan } from '../../src/sync/model.js';

let dir: string;
let store: StateStore | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
  fs.rmSync(dir, { recursive: true, force: true });
});

const contentOf = (documentId: string): Buffer => Buffer.from(`content of ${documentId}\n`.repeat(50));
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Writes the body in two chunks and ends dest, like the real client's pipeline; `fail` may throw instead. */
function fakeClient(fail?: (documentId: string, attempt: number) => Error | undefined): { client: ExecutorDeps['client']; attempts: Map<string, number> } {
  const attempts = new Map<string, number>();
  const client = {
    downloadVersionTo: async (documentId: string, _versionId: string, dest: Writable) => {
      const attempt = (attempts.get(documentId) ?? 0) + 1;
      attempts.set(documentId, attempt);
      const body = contentOf(documentId);
      dest.write(body.subarray(0, 100));
      const err = fail?.(documentId, attempt);
      if (err) {
        dest.destroy(err);
        throw err;
      }
      await new Promise<void>((resolve, reject) => {
        dest.once('error', reject);
        dest.end(body.subarray(100), () => resolve());
      });
      return { bytes: body.length, sha256: sha(body) };
    },
  } as unknown as ExecutorDeps['client'];
  return { client, attempts };
}

function setup(client: ExecutorDeps['client']): ExecutorDeps {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-download-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  store = StateStore.open(path.join(dir, 'state.db'));
  return {
    pair: 'p', root, binderId: 'B', caseInsensitive: false, client, store,
    trash: new Trash(path.join(dir, 'trash'), root), log: pino({ level: 'silent' }),
    metadata: { forPath: () => [], valuesFor: () => [], missingFor: () => [], accepts: () => true }, versionLabelScheme: 'integer', now: () => new Date(0), concurrency: 8,
  };
}

function downloads(relPaths: string[]): Plan {
  const groups: Action[][] = relPaths.map((relPath, i) => [
    { kind: 'download', relPath, key: relPath, expectLocal: null, reason: 'new-remote', doc: { documentId: `d${i}`, fileName: path.basename(relPath), folderId: 'F', versionId: 'v', relPath, key: relPath } },
  ]);
  return { groups, issues: [], blocked: null };
}

function filesUnder(root: string): string[] {
  return (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
}

const openFds = (): number | null => (fs.existsSync('/proc/self/fd') ? fs.readdirSync('/proc/self/fd').length : null);

describe('executor downloads', () => {
  it('puts many files into folders that do not exist yet, each base row describing the file on disk', async () => {
    const { client } = fakeClient();
    const d = setup(client);
    const relPaths = Array.from({ length: 60 }, (_, i) => `A${i % 3}/deeper/f${i}.txt`);
    const fdsBefore = openFds();
    const report = await executePlan(downloads(relPaths), d);
    expect(report.failures).toEqual([]);
    expect(report.done.download).toBe(60);
    expect(filesUnder(d.root)).toEqual([...relPaths].sort()); // no temp file left
    const bases = d.store.loadBase();
    relPaths.forEach((relPath, i) => {
      const abs = path.join(d.root, relPath);
      expect(fs.readFileSync(abs)).toEqual(contentOf(`d${i}`));
      const b = bases.get(`d${i}`);
      expect(b).toMatchObject({ relPath, sha256: sha(contentOf(`d${i}`)), ...toFileStat(fs.lstatSync(abs)) });
      expect(fs.statSync(abs).mode & 0o777).toBe(fs.statSync(path.dirname(abs)).mode & 0o666);
    });
    expect(d.store.listIntents()).toEqual([]);
    if (fdsBefore !== null) expect(openFds()).toBe(fdsBefore); // every temp descriptor closed
  });

  it('hashes a body the client only counted (a large one) from the written temp file, off the event loop', async () => {
    const big = Buffer.alloc((5 << 20) + 3, 0x5a);
    big.write('the start of a large download');
    const client = {
      downloadVersionTo: async (_documentId: string, _versionId: string, dest: Writable, opts: { hashBelowBytes?: number }) => {
        expect(opts.hashBelowBytes).toBeLessThanOrEqual(big.length);
        await new Promise<void>((resolve, reject) => {
          dest.once('error', reject);
          dest.end(big, () => resolve());
        });
        return { bytes: big.length, sha256: null };
      },
    } as unknown as ExecutorDeps['client'];
    const d = setup(client);
    const report = await executePlan(downloads(['Big/large.bin']), d);
    expect(report.failures).toEqual([]);
    expect(fs.readFileSync(path.join(d.root, 'Big/large.bin')).equals(big)).toBe(true);
    expect(d.store.loadBase().get('d0')?.sha256).toBe(sha(big));
    expect(filesUnder(d.root)).toEqual(['Big/large.bin']);
  });

  it('restarts an interrupted body on a fresh temp file and leaves no temp behind', async () => {
    const { client, attempts } = fakeClient((id, attempt) =>
      id === 'd1' && attempt === 1 ? new ServiceError('cut off', { code: 'TRANSFER_INTERRUPTED', retryable: true, request: 'GET storage' }) : undefined,
    );
    const d = setup(client);
    const fdsBefore = openFds();
    const report = await executePlan(downloads(['F/a.txt', 'F/b.txt']), d);
    expect(report.failures).toEqual([]);
    expect(attempts.get('d1')).toBe(2);
    expect(filesUnder(d.root)).toEqual(['F/a.txt', 'F/b.txt']);
    expect(fs.readFileSync(path.join(d.root, 'F/b.txt'))).toEqual(contentOf('d1'));
    if (fdsBefore !== null) expect(openFds()).toBe(fdsBefore);
  });

  // Black-box round 32a, F1: the folder of a download in flight moved to another disk and back (its temp path
  // then names a partial copy), or moved away and replaced by a symbolic link to where it went (out of the root).
  // The commit by path gave the final name to the partial copy, recorded with the full download's hash, or wrote
  // outside the root.
  it.each([
    ['moved to another disk and back: the temp path names a partial copy', 'copy'],
    ['moved out of the root and linked back: the folder resolves outside the root', 'symlink'],
  ] as const)('a download whose folder was %s is not put in place: LOCAL_CHANGED, no base row', async (_what, how) => {
    let d: ExecutorDeps | undefined;
    const outside = () => path.join(dir, 'outside');
    const { client } = fakeClient(() => {
      const folder = path.join(d!.root, 'F');
      fs.mkdirSync(outside());
      if (how === 'copy') {
        // What `mv` across filesystems does: a copy of each file as it is now, then the original removed.
        fs.cpSync(folder, path.join(outside(), 'F'), { recursive: true });
        fs.rmSync(folder, { recursive: true });
        fs.renameSync(path.join(outside(), 'F'), folder);
      } else {
        fs.renameSync(folder, path.join(outside(), 'F'));
        fs.symlinkSync(path.join(outside(), 'F'), folder);
      }
      return undefined;
    });
    d = setup(client);
    fs.mkdirSync(path.join(d.root, 'F'));
    const report = await executePlan(downloads(['F/a.txt']), d);
    expect(report.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
    expect(report.done.download ?? 0).toBe(0);
    expect(fs.existsSync(path.join(d.root, 'F/a.txt'))).toBe(false);
    expect(fs.existsSync(path.join(outside(), 'F', 'a.txt'))).toBe(false);
    expect(d.store.getBase('d0')).toBeUndefined();
    expect(d.store.listIntents()).toEqual([]);
  });

  it('never overwrites a file that appeared at the target: LOCAL_CHANGED, no base row, no intent', async () => {
    const { client } = fakeClient();
    const d = setup(client);
    fs.mkdirSync(path.join(d.root, 'F'));
    fs.writeFileSync(path.join(d.root, 'F/a.txt'), 'the user was first');
    const report = await executePlan(downloads(['F/a.txt']), d);
    expect(report.failures.map((f) => f.code)).toEqual(['LOCAL_CHANGED']);
    expect(fs.readFileSync(path.join(d.root, 'F/a.txt'), 'utf8')).toBe('the user was first');
    expect(filesUnder(d.root)).toEqual(['F/a.txt']);
    expect(d.store.getBase('d0')).toBeUndefined();
    expect(d.store.listIntents()).toEqual([]);
  });
});
