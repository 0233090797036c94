// A remote folder renamed while a new file is saved in its local directory: the pass moves the synced files to
// the new name, the new file keeps the old directory alive, and it must still go where its folder went (uploaded
// into the renamed folder, then moved there locally), not wait for good for a folder the service cannot create.
// A real pass over a real state DB and real files against the emulator on loopback.
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
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'followed-folder-'));
  emu = await startEmulator({ quiet: true });
});

afterAll(async () => {
  await client?.close();
  await emu?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('a file saved in a folder while the pass follows its remote rename is uploaded into the renamed folder', async () => {
  const c = emu.credentials;
  const binderId = emu.control.createBinder({ name: 'Followed' }).id;
  const folder = emu.control.createFolder(binderId, { name: 'Old' });
  for (const n of ['a', 'b']) emu.control.addDocument(binderId, folder.id, `${n}.txt`, n);
  const yaml = `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${c.tenantId}, clientId: ${c.clientId}, clientSecret: ${c.clientSecret} }
stateDir: ./state
pairs: [{ name: p, localPath: ./local, binderId: ${binderId} }]`;
  const config = parseConfigText(yaml, { baseDir: dir, env: {} }).config;
  client = new ServiceClient(config.service);
  const local = path.join(dir, 'local');
  const rt = await openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }));
  try {
    expect((await runPass(rt)).converged).toBe(true);
    emu.control.renameFolder(folder.id, 'New');
    rt.cache.foldersAt = 0; // the next listing walks the folder tree (a daemon does so at its next walk)
    // Saved after the scan, before the moves: the pass empties Old of its synced files, but not of this one.
    const followed = await runPass(rt, { onPlan: () => fs.writeFileSync(path.join(local, 'Old', 'fresh.txt'), 'saved meanwhile') });
    expect(followed.execution?.done['move-local']).toBe(2);
    expect(fs.readdirSync(path.join(local, 'Old'))).toEqual(['fresh.txt']);

    const next = await runPass(rt);
    expect(next.issues.filter((i) => i.code === 'waiting-for-remote-folder')).toEqual([]);
    const doc = emu.control.listDocuments(binderId).find((d) => d.fileName === 'fresh.txt');
    expect(doc?.folderId).toBe(folder.id);
    await runPass(rt);
    const last = await runPass(rt);
    expect(last.converged, JSON.stringify(last.issues)).toBe(true);
    expect(fs.readFileSync(path.join(local, 'New', 'fresh.txt'), 'utf8')).toBe('saved meanwhile');
    expect(fs.existsSync(path.join(local, 'Old'))).toBe(false);
    expect(emu.control.listDocuments(binderId).map((d) => d.fileName).sort()).toEqual(['a.txt', 'b.txt', 'fresh.txt']);
    // Old is gone: nothing is remembered of it any more.
    expect(rt.store.getMeta('followedFolders')).toBeUndefined();
  } finally {
    rt.store.close();
  }
});
