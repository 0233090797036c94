// Refused uploads kept in the state DB (src/sync/refused-uploads.ts): a real SQLite file for the stored form, and
// passes against the emulator (real HTTP) for what a new process does with them: the same bytes are not sent
// again after a restart, and are tried again when the file or the config changes, or after a day; the same for a
// commit the service put on another document of the same name.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { ServiceClient } from '../../src/service/index.js';
import { StateStore } from '../../src/state/store.js';
import { runPass } from '../../src/sync/pass.js';
import { openPair } from '../../src/sync/open-pair.js';
import type { PairRuntime } from '../../src/sync/pair-runtime.js';
import { expireRefusals, loadRefusedUploads, REFUSAL_RETRY_MS, saveRefusedUploads } from '../../src/sync/refused-uploads.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'refused-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the stored refusals', () => {
  const T = 1_800_000_000_000;
  const refusal = { content: 'sha-a', detail: 'the service refused the name', at: T };

  it('round-trip under one config, and are none under another config or when damaged', () => {
    const store = StateStore.open(path.join(dir, 'state.db'));
    try {
      saveRefusedUploads(store, 'cfg1', new Map([['docs/a:b.txt', refusal]]));
      expect([...loadRefusedUploads(store, 'cfg1', T + 1000)]).toEqual([['docs/a:b.txt', refusal]]);
      expect(loadRefusedUploads(store, 'cfg2', T + 1000).size).toBe(0);
      for (const bad of ['{not json', JSON.stringify({ config: 'cfg1', byKey: { k: { content: 1 } } }), JSON.stringify([1, 2])]) {
        store.setMeta('refusedUploads', bad);
        expect(loadRefusedUploads(store, 'cfg1', T).size, bad).toBe(0);
      }
      saveRefusedUploads(store, 'cfg1', new Map());
      expect(store.getMeta('refusedUploads')).toBeUndefined();
    } finally {
      store.close();
    }
  });

  it('last a day: older ones (or ones from a clock set back by more) are not loaded, and expire in memory', () => {
    const store = StateStore.open(path.join(dir, 'state.db'));
    try {
      saveRefusedUploads(store, 'c', new Map([['old', refusal], ['new', { ...refusal, at: T + REFUSAL_RETRY_MS }]]));
      expect([...loadRefusedUploads(store, 'c', T + REFUSAL_RETRY_MS + 1).keys()]).toEqual(['new']);
      expect([...loadRefusedUploads(store, 'c', T - 1).keys()]).toEqual(['old']);
      const inMemory = loadRefusedUploads(store, 'c', T + 1);
      expect(expireRefusals(inMemory, T + REFUSAL_RETRY_MS - 1)).toBe(false);
      expect(expireRefusals(inMemory, T + REFUSAL_RETRY_MS)).toBe(true);
      expect([...inMemory.keys()]).toEqual(['new']);
    } finally {
      store.close();
    }
  });
});

describe('refusals and a new process', () => {
  let emu: Emulator;
  let client: ServiceClient;
  let rt: PairRuntime;
  let binderId: string;

  const open = async (pairExtra = ''): Promise<PairRuntime> => {
    const c = emu.credentials;
    const yaml = `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${c.tenantId}, clientId: ${c.clientId}, clientSecret: ${c.clientSecret} }
stateDir: ./state
pairs: [{ name: p, localPath: ./local, binderId: ${binderId}${pairExtra} }]`;
    const { config } = parseConfigText(yaml, { baseDir: dir, env: {} });
    rt?.store.close();
    rt = await openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }));
    return rt;
  };
  const puts = () => emu.control.counters()['storage-put'];
  const writeDoc = (name: string, content: string) => fs.writeFileSync(path.join(dir, 'local', 'Docs', name), content);

  beforeEach(async () => {
    emu = await startEmulator({ quiet: true });
    binderId = emu.control.createBinder({ name: 'B' }).id;
    emu.control.createFolder(binderId, { name: 'Docs' });
    client = new ServiceClient({ baseUrl: emu.baseUrl, authUrl: emu.authUrl, ...emu.credentials, requestTimeoutMs: 10_000 });
  });
  afterEach(async () => {
    rt.store.close();
    await client.close();
    await emu.close();
  });

  describe('a commit refused (400)', () => {
    beforeEach(async () => {
      await open();
      await runPass(rt);
      writeDoc('refused.txt', 'the service will not take this');
      emu.control.injectFault({ route: 'commit', status: 400 });
      const first = await runPass(rt);
      expect(first.execution?.failures.map((f) => f.code)).toEqual(['COMMIT_REFUSED']);
      // The hint says what this file's tests show (a restart does not bring it back).
      expect(first.execution?.failures[0]?.message).toContain("not sent again until the file or the pair's config changes, or for a day");
      expect(puts()).toBe(1);
      // Said this pass as later passes say it: an item not synced, not an error of the pair.
      expect(first.issues.map((i) => [i.relPath, i.code])).toEqual([['Docs/refused.txt', 'upload-refused']]);
      expect(rt.store.getMeta('lastError')).toBe('');
      expect(rt.store.listIssues().map((i) => i.code)).toEqual(['upload-refused']);
    });

    it('is not sent again by the next process while the file and the config stay the same', async () => {
      await open();
      const again = await runPass(rt);
      expect(again.issues.map((i) => [i.relPath, i.code])).toEqual([['Docs/refused.txt', 'upload-refused']]);
      expect(puts()).toBe(1);
      expect(again.converged).toBe(false);
    });

    it('is tried again when the file changes, when the config changes, and after a day', async () => {
      writeDoc('refused.txt', 'changed, still refused');
      await open();
      await runPass(rt);
      expect(puts()).toBe(2);
      await open(', conflictPolicy: remote-wins');
      await runPass(rt);
      expect(puts()).toBe(3);
      await open(', conflictPolicy: remote-wins');
      await runPass(rt, { now: () => new Date(Date.now() + REFUSAL_RETRY_MS + 60_000) });
      expect(puts()).toBe(4);
      // Once the service takes it, it is synced like any file.
      emu.control.clearFaults();
      await open(', conflictPolicy: remote-wins');
      await runPass(rt, { now: () => new Date(Date.now() + 2 * REFUSAL_RETRY_MS + 120_000) });
      expect(emu.control.listDocuments(binderId).map((d) => d.fileName)).toEqual(['refused.txt']);
    });
  });

  it('a commit that landed on another document of the same name is not sent again until the file changes', async () => {
    const c = emu.control;
    const folderId = c.listFolders(binderId)[0]!.id;
    // The emulator's commit takes the first document of a name: the twin is created first, under another name.
    const twin = c.addDocument(binderId, folderId, 'twin.txt', 'the twin').document;
    const mine = c.addDocument(binderId, folderId, 'a.txt', 'mine').document;
    await open();
    await runPass(rt);
    writeDoc('a.txt', 'my edit');
    // The twin takes the name after the last name check, as the commit is sent (neither the plan filter for
    // ambiguous names nor the check before the commit can see it coming).
    const commit = client.commitUpload.bind(client);
    client.commitUpload = (...args) => {
      client.commitUpload = commit;
      c.renameDocument(twin.id, 'a.txt');
      return commit(...args);
    };
    const misdirected = await runPass(rt);
    expect(misdirected.execution?.failures.map((f) => f.code)).toEqual(['COMMIT_MISDIRECTED']);
    expect(c.readContent(twin.id).toString()).toBe('my edit');
    c.renameDocument(twin.id, 'twin.txt');
    const putsAfter = puts();

    // A new process, the names unique again: the same bytes are not sent once more (the service put them on the
    // twin, which is where the user should look), and the reason is an issue.
    await open();
    const again = await runPass(rt);
    expect(puts()).toBe(putsAfter);
    const held = again.issues.find((i) => i.relPath === 'Docs/a.txt');
    expect(held?.code).toBe('upload-refused');
    expect(held?.detail).toContain('another document');
    expect(c.listVersions(mine.id)).toHaveLength(1);

    // The file changes: it goes, onto its own document.
    writeDoc('a.txt', 'my second edit');
    const next = await runPass(rt);
    expect(next.execution?.failures).toEqual([]);
    expect(c.readContent(mine.id).toString()).toBe('my second edit');
    expect(c.listVersions(mine.id)).toHaveLength(2);
  });
});
