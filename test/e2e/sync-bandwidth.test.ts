// service.maxDownloadRate / maxUploadRate through the real CLI against the emulator: a 1 MiB file takes at least
// as long as its rate allows both ways, arrives byte for byte, and a 1 s request timeout is never hit on the way
// (bytes flow every few tens of milliseconds, however slow the rate).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { afterEach, expect, it } from 'vitest';
import { createWorkspace, sha256, sync, type Workspace } from './harness.js';
import { explain } from './scenario-helpers.js';

let ws: Workspace;
afterEach(async () => {
  await ws?.close();
});

const RATE = 256 * 1024;
const SIZE = 1024 * 1024;

function limitRates(w: Workspace): void {
  const config = parseYaml(fs.readFileSync(w.configFile, 'utf8')) as { service: Record<string, unknown> };
  Object.assign(config.service, { maxDownloadRate: '256KiB/s', maxUploadRate: '256K', requestTimeout: '1s' });
  fs.writeFileSync(w.configFile, stringify(config), { mode: 0o600 });
}

it('a download and an upload of 1 MiB at 256 KiB/s each take at least ~4 s and arrive intact', async () => {
  ws = await createWorkspace();
  const c = ws.emulator.control;
  const folder = c.createFolder(ws.binderId, { name: 'Big' });
  const remote = randomBytes(SIZE);
  c.addDocument(ws.binderId, folder.id, 'down.bin', remote);
  limitRates(ws);
  // The whole transfer, less the tenth of a second of rate let through at once (a loaded machine is only slower).
  const atLeastMs = ((SIZE - RATE / 10) / RATE) * 1000 - 50;

  let started = performance.now();
  const down = await sync(ws);
  expect(down.code, explain(down)).toBe(0);
  expect(performance.now() - started).toBeGreaterThanOrEqual(atLeastMs);
  expect(sha256(fs.readFileSync(path.join(ws.local, 'Big', 'down.bin')))).toBe(sha256(remote));

  const local = randomBytes(SIZE);
  fs.writeFileSync(path.join(ws.local, 'Big', 'up.bin'), local);
  started = performance.now();
  const up = await sync(ws);
  expect(up.code, explain(up)).toBe(0);
  expect(performance.now() - started).toBeGreaterThanOrEqual(atLeastMs);
  const doc = c.listDocuments(ws.binderId).find((d) => d.fileName === 'up.bin')!;
  expect(sha256(c.readContent(doc.id))).toBe(sha256(local));
}, 60_000);
