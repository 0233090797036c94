// An upload whose every presigned URL storage refuses (a skewed clock or a proxy: each PUT answered 403
// "expired") gives up after a few fresh slots, as a download does after a few refused links: it took a new slot
// and sent the file again for each of the client's six attempts. Nothing is committed and nothing is left in the
// outbox; one refused slot alone (expired in the queue) is routine, and the next one takes the file. The emulator
// issues the URLs already expired (expireUploadUrls); real HTTP, state DB, files.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { toFileStat } from '../../src/local/fs-ops.js';
import { executePlan } from '../../src/sync/executor.js';
import type { Plan } from '../../src/sync/model.js';
import { executorFixture, type ExecutorFixture } from './executor-fixture.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Writes Docs/`name` and plans its upload as a new document, as a scan would see it. */
function uploadPlan(fx: ExecutorFixture, name: string, content: string): Plan {
  const relPath = `Docs/${name}`;
  const abs = path.join(fx.root, relPath);
  fs.writeFileSync(abs, content);
  const local = { relPath, key: relPath, ...toFileStat(fs.lstatSync(abs)), sha256: createHash('sha256').update(content).digest('hex') };
  return {
    groups: [[{ kind: 'upload', relPath, key: relPath, local, target: { documentId: null, folderId: fx.folderId, fileName: name }, reason: 'new-local', replacesBase: null }]],
    issues: [],
    blocked: null,
  };
}

it('an upload whose every presigned URL storage refuses stops after three refused PUTs, commits nothing and leaves no outbox row', async () => {
  // The client's default attempts (6), with short waits.
  const fx = await executorFixture(cleanups, 'refused-upload-urls-', { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 20 });
  const c = fx.emu.control;
  c.expireUploadUrls();
  c.resetCounters();
  const report = await executePlan(uploadPlan(fx, 'refused.txt', 'never arrives'), fx.d);

  expect(report.failures.map((f) => [f.relPath, f.code, f.retryable])).toEqual([['Docs/refused.txt', 'STORAGE_SLOT_EXPIRED', true]]);
  const n = c.counters();
  // MAX_URL_REFUSALS: one slot and one PUT each; it was six of each, and every pass started over.
  expect([n.presignedupload, n['storage-put'], n.commit]).toEqual([3, 3, 0]);
  expect(c.lastRequests(50).filter((r) => r.route === 'storage-put').map((r) => r.status)).toEqual([403, 403, 403]);
  expect(fx.store.listOutbox()).toEqual([]);
  expect(fx.store.getBaseByKey('Docs/refused.txt')).toBeUndefined();
  expect(c.listDocuments(fx.binderId)).toEqual([]);
});

it('one refused presigned URL is routine: the next slot takes the file, committed once', async () => {
  const fx = await executorFixture(cleanups, 'refused-upload-url-once-', { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 20 });
  const c = fx.emu.control;
  c.expireUploadUrls(1);
  c.resetCounters();
  const report = await executePlan(uploadPlan(fx, 'late.txt', 'arrives'), fx.d);

  expect(report.failures).toEqual([]);
  const n = c.counters();
  expect([n.presignedupload, n['storage-put'], n.commit]).toEqual([2, 2, 1]);
  const docs = c.listDocuments(fx.binderId);
  expect(docs.map((d) => d.fileName)).toEqual(['late.txt']);
  expect(c.listVersions(docs[0]!.id)).toHaveLength(1);
  expect(c.readContent(docs[0]!.id).toString()).toBe('arrives');
  expect(fx.store.listOutbox()).toEqual([]);
});
