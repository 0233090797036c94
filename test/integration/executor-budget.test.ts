// The executor's error budget: a service that keeps failing stops the pass early instead of trying (and
// logging) every remaining file; per-file failures do not.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Trash } from '../../src/local/fs-ops.js';
import { ServiceError } from '../../src/service/index.js';
import { StateStore } from '../../src/state/store.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';
import { executePlan } from '../../src/sync/executor.js';
import type { Action, Plan } from '../../src/sync/model.js';
import { BinderSyncError } from '../../src/errors.js';

let dir: string;
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function setup(fail: () => Error): { deps: ExecutorDeps; calls: () => number; store: StateStore } {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-budget-'));
  const root = path.join(dir, 'root');
  fs.mkdirSync(root);
  const store = StateStore.open(path.join(dir, 'state.db'));
  let calls = 0;
  const client = {
    downloadVersionTo: async () => {
      calls++;
      throw fail();
    },
  } as unknown as ExecutorDeps['client'];
  const deps: ExecutorDeps = {
    pair: 'p', root, binderId: 'B', caseInsensitive: false, client, store,
    trash: new Trash(path.join(dir, 'trash'), root), log: pino({ level: 'silent' }),
    metadata: { forPath: () => [], valuesFor: () => [], missingFor: () => [], accepts: () => true }, versionLabelScheme: 'integer', now: () => new Date(0), concurrency: 4,
  };
  return { deps, calls: () => calls, store };
}

function downloads(n: number): Plan {
  const groups: Action[][] = [];
  for (let i = 0; i < n; i++) {
    const relPath = `F/f${i}.txt`;
    groups.push([{ kind: 'download', relPath, key: relPath, expectLocal: null, reason: 'new-remote', doc: { documentId: `d${i}`, fileName: `f${i}.txt`, folderId: 'F', versionId: 'v', relPath, key: relPath } }]);
  }
  return { groups, issues: [], blocked: null };
}

describe('executor error budget', () => {
  it('stops starting new groups after repeated service-wide failures', async () => {
    const { deps, calls, store } = setup(() => new ServiceError('GET /storage failed: 503', { code: 'SERVICE_UNAVAILABLE', retryable: true, request: 'GET {storage}' }));
    const report = await executePlan(downloads(200), deps);
    store.close();
    expect(report.stoppedBy).toBeInstanceOf(ServiceError);
    // budget (4) plus the groups already in flight (concurrency 4): far fewer than 200.
    expect(report.failures.length).toBeLessThanOrEqual(8);
    // Each download is tried 3 times (fresh temp file each) before it counts as failed.
    expect(calls()).toBe(report.failures.length * 3);
  });

  it('aborts the transfers still in flight when it stops, instead of waiting out their retries and timeouts', async () => {
    const unavailable = () => new ServiceError('GET /storage failed: 503', { code: 'SERVICE_UNAVAILABLE', retryable: true, request: 'GET {storage}' });
    const { deps, store } = setup(unavailable);
    let calls = 0;
    const aborted: string[] = [];
    // Two downloads hang (a service gone away mid-body) until their signal says stop; the rest fail at once.
    deps.client = {
      downloadVersionTo: (documentId: string, _v: string, _dest: unknown, opts: { signal?: AbortSignal } = {}) => {
        calls++;
        if (documentId !== 'd0' && documentId !== 'd1') return Promise.reject(unavailable());
        return new Promise((_resolve, reject) => {
          const abort = () => {
            aborted.push(documentId);
            reject(new ServiceError('GET {storage} aborted', { code: 'ABORTED', retryable: false, request: 'GET {storage}' }));
          };
          if (opts.signal?.aborted) abort();
          else opts.signal?.addEventListener('abort', abort);
        });
      },
    } as unknown as ExecutorDeps['client'];
    const report = await executePlan(downloads(40), deps);
    store.close();
    expect(report.stoppedBy).toBeInstanceOf(ServiceError);
    expect(aborted.sort()).toEqual(['d0', 'd1']);
    expect(report.failures.map((f) => f.relPath)).toEqual(expect.arrayContaining(['F/f0.txt', 'F/f1.txt']));
    const files = (fs.readdirSync(deps.root, { recursive: true }) as string[]).filter((p) => fs.statSync(path.join(deps.root, p)).isFile());
    expect(files).toEqual([]); // no temp file left behind
  });

  it('keeps going through per-file failures', async () => {
    const { deps, calls, store } = setup(() => new BinderSyncError('disk trouble', { code: 'LOCAL_IO', retryable: false }));
    const report = await executePlan(downloads(30), deps);
    store.close();
    expect(report.stoppedBy).toBeNull();
    expect(calls()).toBe(30);
  });
});
