// A daemon's pair whose binder's metadata elements could not be read holds its uploads back; once they can be
// read, the next poll uploads them, though neither side changed since (its last plan, without them, was empty).
// Real emulator over loopback, real state DB and files; runPass driven as the daemon drives it.
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
let dir: string;
beforeAll(async () => {
  emu = await startEmulator({ quiet: true });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meta-unread-'));
});
afterAll(async () => {
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

it('uploads held while the elements could not be read go at the first poll that reads them, with nothing else changed', async () => {
  const c = emu.control;
  const binderId = c.createBinder({ name: 'meta' }).id;
  c.addMetadataElement(binderId, { id: 'Department', label: 'Department', dataType: 'enum', required: true, allowedValues: [{ id: 'eng', label: 'Engineering' }] });
  const tab = c.createFolder(binderId, { name: 'T' });
  c.addDocument(binderId, tab.id, 'remote.txt', 'from remote', { metadata: [{ metadataElementId: 'Department', valueId: 'eng' }] });
  fs.mkdirSync(path.join(dir, 'local', 'T'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'local', 'T', 'new.txt'), 'needs a department');
  const cr = emu.credentials;
  const config = parseConfigText(
    `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${cr.tenantId}, clientId: ${cr.clientId}, clientSecret: ${cr.clientSecret}, requestTimeout: 5s }
stateDir: ./state
pairs: [{ name: p, localPath: ./local, binderId: ${binderId}, metadata: [{ match: '**', values: { Department: Engineering } }] }]`,
    { baseDir: dir, env: {} },
  ).config;
  c.injectFault({ route: 'metadataelements', status: 500 });
  const client = new ServiceClient({ ...config.service, retry: { maxAttempts: 1 } });
  const rt = await openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }), { badRules: 'hold-uploads', unreadableElements: 'hold-uploads' });
  try {
    expect(rt.metadataUnread).not.toBeNull();
    const first = await runPass(rt, { parkWhenQuiet: true });
    expect(first.issues.map((i) => `${i.code} ${i.relPath}`)).toEqual(['metadata-missing T/new.txt']);
    expect(fs.readFileSync(path.join(dir, 'local', 'T', 'remote.txt'), 'utf8')).toBe('from remote');
    // A poll with nothing new on either side: quiet, and the daemon parks its observations.
    await runPass(rt, { localDirs: [], parkWhenQuiet: true });
    expect(rt.cache.quiet).toBe(true);
    expect(c.listDocuments(binderId).map((d) => d.fileName)).toEqual(['remote.txt']);

    c.clearFaults();
    const after = await runPass(rt, { localDirs: [], parkWhenQuiet: true });
    expect(rt.metadataUnread).toBeNull();
    expect(after.execution?.done.upload).toBe(1);
    const uploaded = c.listDocuments(binderId).find((d) => d.fileName === 'new.txt');
    expect(uploaded?.metadata).toContainEqual({ metadataElementId: 'Department', valueId: 'eng' });
  } finally {
    rt.store.close();
    await client.close();
  }
});

// Black-box rounds 42c (P1-b) and 43a (F7): "downloads go on" was said when the service answered every call 503
// (or 429, or was not reached): nothing went on. Whether they do is not known then: not said.
it.each([503, 429])('the warning for elements answered %s does not promise downloads', async (status) => {
  const c = emu.control;
  const binderId = c.createBinder({ name: `meta-${status}` }).id;
  const cr = emu.credentials;
  const config = parseConfigText(
    `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${cr.tenantId}, clientId: ${cr.clientId}, clientSecret: ${cr.clientSecret} }
stateDir: ./state-${status}
pairs: [{ name: p, localPath: ./local-${status}, binderId: ${binderId} }]`,
    { baseDir: dir, env: {} },
  ).config;
  c.injectFault({ route: 'metadataelements', status });
  const lines: Array<{ level: number; msg: string }> = [];
  const log = pino({ level: 'warn' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
  const client = new ServiceClient({ ...config.service, retry: { maxAttempts: 1 } });
  const rt = await openPair(config.pairs[0]!, config.stateDir, client, log, { badRules: 'hold-uploads', unreadableElements: 'hold-uploads' });
  try {
    const said = lines.filter((l) => l.msg.includes("could not read the binder's metadata elements"));
    expect(said).toHaveLength(1);
    expect(said[0]!.msg).not.toContain('downloads go on');
    expect(said[0]!.msg).toMatch(/uploads wait until they can be read \(asked again at the next pass\)$/);
  } finally {
    c.clearFaults();
    rt.store.close();
    await client.close();
  }
});
