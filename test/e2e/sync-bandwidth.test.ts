// service.maxDownloadRate / maxUploadRate through the real CLI against the emulator: a 1 MiB file takes at least
// as long as its rate allows both ways, arrives byte for byte, and a 1 s request timeout is never hit on the way
// (bytes flow every few tens of milliseconds, however slow the rate).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { afterEach, expect, it } from 'vitest';
import { BIN, createWorkspace, secretOf, sha256, sync, type Workspace } from './harness.js';
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

// Black-box round 28a, T5: a large file that changed while it was being sent was sent to the end anyway (5 full
// PUTs of 200 MiB for 2 versions). Now the PUT ends at the next look (once a second), and nothing is committed.
it('an upload whose file changes while it is sent stops sending, commits nothing, and the next pass uploads the new content', async () => {
  ws = await createWorkspace();
  const w = ws;
  const c = w.emulator.control;
  c.createFolder(w.binderId, { name: 'Big' });
  const config = parseYaml(fs.readFileSync(w.configFile, 'utf8')) as { service: Record<string, unknown> };
  Object.assign(config.service, { maxUploadRate: '4MiB/s' });
  fs.writeFileSync(w.configFile, stringify(config), { mode: 0o600 });
  const size = 16 * 1024 * 1024;
  const file = path.join(w.local, 'Big', 'big.bin');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, randomBytes(size));
  const child = spawn(process.execPath, [BIN, 'sync', '--config', w.configFile], {
    env: { ...process.env, E2E_SECRET: secretOf(w), BINDER_SYNC_LOG_LEVEL: 'debug' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  for (const until = Date.now() + 15_000; c.counters()['storage-put'] === 0; ) {
    if (Date.now() > until) throw new Error(`the upload did not start\n${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 1_200));
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.from('EDIT'), 0, 4, 0);
  fs.closeSync(fd);
  expect(await exited, out).toBe(1);
  expect(out).toMatch(/big\.bin: not uploaded, it changed while uploading: the rest of it was not sent/);
  const put = out.split('\n').filter((l) => l.includes('"method":"PUT"')).map((l) => JSON.parse(l) as { bytes: number });
  expect(put, out).toHaveLength(1);
  expect(put[0]!.bytes).toBeLessThan(size);
  expect(c.listDocuments(w.binderId)).toHaveLength(0);

  const again = await sync(w);
  expect(again.code, explain(again)).toBe(0);
  const [doc] = c.listDocuments(w.binderId);
  expect(sha256(c.readContent(doc!.id))).toBe(sha256(fs.readFileSync(file)));
  expect(c.listVersions(doc!.id)).toHaveLength(1);
}, 60_000);
