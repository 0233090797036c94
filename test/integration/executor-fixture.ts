// What the executor's integration tests share: the emulator on 127.0.0.1, a real ServiceClient, a real state DB
// and a sync root with a Docs folder on both sides, wired into ExecutorDeps. Everything is closed and removed
// through `cleanups` (run them in reverse after each test).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createLogger } from '../../src/log.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { Trash } from '../../src/local/fs-ops.js';
import { ServiceClient } from '../../src/service/index.js';
import { StateStore } from '../../src/state/store.js';
import type { ExecutorDeps } from '../../src/sync/executor-deps.js';

export interface ExecutorFixture {
  emu: Emulator;
  client: ServiceClient;
  d: ExecutorDeps;
  /** The sync root (it holds Docs/). */
  root: string;
  store: StateStore;
  binderId: string;
  /** The remote folder Docs. */
  folderId: string;
}

export async function executorFixture(cleanups: Array<() => unknown>, prefix: string, retry = { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 50 }): Promise<ExecutorFixture> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const emu = await startEmulator({ quiet: true });
  cleanups.push(() => emu.close());
  const client = new ServiceClient({
    baseUrl: emu.baseUrl,
    authUrl: emu.authUrl,
    tenantId: emu.credentials.tenantId,
    clientId: emu.credentials.clientId,
    clientSecret: emu.credentials.clientSecret,
    retry,
  });
  cleanups.push(() => client.close());
  const binder = emu.control.createBinder({ name: 'B' });
  const folder = emu.control.createFolder(binder.id, { name: 'Docs' });
  const root = path.join(dir, 'root');
  fs.mkdirSync(path.join(root, 'Docs'), { recursive: true });
  const store = StateStore.open(path.join(dir, 'state.db'));
  cleanups.push(() => store.close());
  const d: ExecutorDeps = {
    pair: 'p', root, binderId: binder.id, caseInsensitive: false, client, store,
    trash: new Trash(path.join(dir, 'trash'), root), log: pino({ level: 'silent' }),
    metadata: { forPath: () => [], valuesFor: () => [], missingFor: () => [], accepts: () => true }, versionLabelScheme: 'integer', now: () => new Date(0), concurrency: 4,
  };
  return { emu, client, d, root, store, binderId: binder.id, folderId: folder.id };
}

/** Replaces d's logger by one whose JSON lines are kept in the returned array (debug and up). */
export function captureLog(d: ExecutorDeps): Array<{ level: number; msg: string; relPath?: string }> {
  const lines: Array<{ level: number; msg: string; relPath?: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as { level: number; msg: string });
      done();
    },
  });
  d.log = createLogger({ destination: sink, level: 'debug' });
  return lines;
}
