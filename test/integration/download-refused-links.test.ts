// A download whose every link storage refuses (black-box round 37b, F7: a skewed clock or a proxy, every link
// answered 403 "expired") gives up after a few fresh links: one step cost 18 storage GETs and 36 link requests
// (six client attempts with two links each, started over three times). A document whose links go through beside
// it is downloaded. The emulator issues the links already expired (expireDownloadLinks); real HTTP, state DB, files.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { executePlan } from '../../src/sync/executor.js';
import type { Action, Plan } from '../../src/sync/model.js';
import { executorFixture } from './executor-fixture.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

it('a download whose every link storage refuses stops after three refused links, and another document downloads beside it', async () => {
  // The client's default attempts (6), with short waits.
  const fx = await executorFixture(cleanups, 'refused-links-', { maxAttempts: 6, baseDelayMs: 5, maxDelayMs: 20 });
  const c = fx.emu.control;
  const refused = c.addDocument(fx.binderId, fx.folderId, 'refused.txt', 'never arrives');
  const fine = c.addDocument(fx.binderId, fx.folderId, 'fine.txt', 'arrives');
  c.expireDownloadLinks([refused.document.id]);
  const download = (d: typeof refused, name: string): Action => {
    const relPath = `Docs/${name}`;
    return { kind: 'download', relPath, key: relPath, expectLocal: null, reason: 'new-remote', doc: { documentId: d.document.id, fileName: name, folderId: fx.folderId, versionId: d.version.id, relPath, key: relPath } };
  };
  const plan: Plan = { groups: [[download(refused, 'refused.txt')], [download(fine, 'fine.txt')]], issues: [], blocked: null };
  c.resetCounters();
  const report = await executePlan(plan, fx.d);

  expect(report.failures.map((f) => [f.relPath, f.code])).toEqual([['Docs/refused.txt', 'STORAGE_LINK_EXPIRED']]);
  expect(fs.readFileSync(path.join(fx.root, 'Docs/fine.txt'), 'utf8')).toBe('arrives');
  expect(fs.existsSync(path.join(fx.root, 'Docs/refused.txt'))).toBe(false);
  const requests = c.lastRequests(200);
  const refusedGets = requests.filter((r) => r.route === 'storage-get' && r.status === 403).length;
  const refusedLinks = requests.filter((r) => r.route === 'downloadlink' && r.path.includes(refused.version.id)).length;
  expect(refusedGets).toBe(3); // MAX_URL_REFUSALS
  // The first link arrived past its expiresAt, so one more was asked for; that one too: the clock is off, and
  // each later attempt asks for one link only.
  expect(refusedLinks).toBe(4);
  expect(requests.filter((r) => r.route === 'storage-get' && r.status === 200)).toHaveLength(1);
});
