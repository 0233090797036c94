// A pair's first opening that fails leaves the stateDir as it found it, whoever opens it (the daemon's options as
// well as sync's); a state DB that existed before is never taken back. Real emulator over loopback, real SQLite.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { ServiceClient } from '../../src/service/index.js';
import { openPair } from '../../src/sync/open-pair.js';

let emu: Emulator;
let dir: string;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'open-fresh-'));
});
afterAll(async () => {
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function configFor(binderId: string, localPath = './local') {
  const c = emu.credentials;
  const yaml = `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${c.tenantId}, clientId: ${c.clientId}, clientSecret: ${c.clientSecret} }
stateDir: ./state
pairs: [{ name: p, localPath: ${localPath}, binderId: ${binderId} }]`;
  return parseConfigText(yaml, { baseDir: dir, env: {} }).config;
}

const daemonOptions = { badRules: 'hold-uploads', unreadableElements: 'hold-uploads' } as const;

describe('openPair', () => {
  it("with the daemon's options, a wrong binder leaves no state DB (nor the pair's folder) behind; an existing one is kept", async () => {
    const config = configFor('NoSuchBinder1');
    const client = new ServiceClient(config.service);
    try {
      fs.mkdirSync(config.stateDir, { recursive: true });
      const pairDir = path.join(config.stateDir, 'p');
      await expect(openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }), daemonOptions)).rejects.toThrow(/NoSuchBinder1/);
      expect(fs.readdirSync(config.stateDir)).toEqual([]);
      expect(fs.existsSync(pairDir)).toBe(false);

      // A pair that has opened (and so has its DB) keeps it when a later opening fails.
      const binderId = emu.control.createBinder({ name: 'real' }).id;
      const good = configFor(binderId);
      const rt = await openPair(good.pairs[0]!, good.stateDir, client, pino({ level: 'silent' }), daemonOptions);
      rt.store.close();
      const db = path.join(pairDir, 'state.db');
      expect(fs.existsSync(db)).toBe(true);
      await expect(openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }), daemonOptions)).rejects.toThrow();
      expect(fs.existsSync(db)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it("a pair folder that existed (a trash, say) is kept when the fresh DB made in it goes", async () => {
    const config = configFor('NoSuchBinder2', './local2');
    const client = new ServiceClient(config.service);
    try {
      const stateDir = path.join(dir, 'state2');
      const pairDir = path.join(stateDir, 'p');
      fs.mkdirSync(path.join(pairDir, 'trash'), { recursive: true });
      await expect(openPair(config.pairs[0]!, stateDir, client, pino({ level: 'silent' }), daemonOptions)).rejects.toThrow(/NoSuchBinder2/);
      expect(fs.readdirSync(pairDir)).toEqual(['trash']);
    } finally {
      await client.close();
    }
  });
});
