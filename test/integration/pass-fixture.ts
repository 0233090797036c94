// One pair over a fresh binder of the emulator, opened as `sync` opens it (real state DB, real files in a temp
// dir, real HTTP on loopback), for tests that drive runPass themselves.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { parseConfigText } from '../../src/config/load.js';
import type { Emulator } from '../../src/emulator/index.js';
import { ServiceClient } from '../../src/service/index.js';
import type { ServiceSettings } from '../../src/service/settings.js';
import { openPair } from '../../src/sync/open-pair.js';
import type { PairRuntime } from '../../src/sync/pair-runtime.js';

export interface TestPair {
  rt: PairRuntime;
  binderId: string;
  /** The sync root. */
  local: string;
  /** Closes the state DB and opens the pair again, as a restarted process does; `rt` is the new runtime. */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `pairYaml`: more keys of the pair, as YAML flow entries (e.g. `trashRetentionDays: 10`); `service`: client
 * settings the config has no key for (the retry policy's waits).
 */
export async function openTestPair(emu: Emulator, name: string, pairYaml = '', service: Partial<ServiceSettings> = {}): Promise<TestPair> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const binderId = emu.control.createBinder({ name }).id;
  const c = emu.credentials;
  const yaml = `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${c.tenantId}, clientId: ${c.clientId}, clientSecret: ${c.clientSecret} }
stateDir: ./state
pairs: [{ name: p, localPath: ./local, binderId: ${binderId}${pairYaml === '' ? '' : `, ${pairYaml}`} }]`;
  const config = parseConfigText(yaml, { baseDir: dir, env: {} }).config;
  const client = new ServiceClient({ ...config.service, ...service });
  const open = () => openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }));
  const pair: TestPair = {
    rt: await open(),
    binderId,
    local: path.join(dir, 'local'),
    async reopen() {
      pair.rt.store.close();
      pair.rt = await open();
    },
    async close() {
      pair.rt.store.close();
      await client.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return pair;
}
