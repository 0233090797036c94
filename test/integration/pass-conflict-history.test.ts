// The conflict history that `status` lists is pruned by trashRetentionDays, once a day per process: a real
// pass over a real state DB against the emulator on loopback.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { ServiceClient } from '../../src/service/index.js';
import { openPair } from '../../src/sync/open-pair.js';
import { runPass } from '../../src/sync/pass.js';

let emu: Emulator;
let client: ServiceClient;
let dir: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conflict-history-'));
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await client?.close();
  await emu?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const DAY = 86_400_000;

it('drops conflicts older than trashRetentionDays from the history, once a day per process', async () => {
  const c = emu.credentials;
  const binderId = emu.control.createBinder({ name: 'History' }).id;
  const yaml = `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${c.tenantId}, clientId: ${c.clientId}, clientSecret: ${c.clientSecret} }
stateDir: ./state
pairs: [{ name: p, localPath: ./local, binderId: ${binderId}, trashRetentionDays: 10 }]`;
  const config = parseConfigText(yaml, { baseDir: dir, env: {} }).config;
  client = new ServiceClient(config.service);
  const rt = await openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }));
  try {
    const t0 = Date.now();
    const conflict = (relPath: string, atMs: number) =>
      rt.store.addConflict({ relPath, conflictPath: `trash/${relPath}`, documentId: null, policy: 'keep-both', detail: 'both sides changed', at: new Date(atMs).toISOString() });
    conflict('old.txt', t0 - 11 * DAY);
    conflict('recent.txt', t0 - 9.5 * DAY);
    await runPass(rt, { now: () => new Date(t0) });
    expect(rt.store.listConflicts().map((r) => r.relPath)).toEqual(['recent.txt']);

    // The same day: not pruned again (no write on every poll).
    conflict('old-too.txt', t0 - 12 * DAY);
    await runPass(rt, { now: () => new Date(t0) });
    expect(rt.store.listConflicts().map((r) => r.relPath)).toEqual(['old-too.txt', 'recent.txt']);

    // The next day both are past the 10 days kept.
    await runPass(rt, { now: () => new Date(t0 + 1 * DAY) });
    expect(rt.store.listConflicts().map((r) => r.relPath)).toEqual([]);
  } finally {
    rt.store.close();
  }
});
