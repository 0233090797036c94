// Security end to end: at log level trace, a sync with downloads, uploads, a conflict, 500 faults and (in the
// daemon) a token revoked between passes writes no client secret, bearer token or presigned signature; storage
// never sees the bearer token; state, trash and temp files are owner-only; overlapping sync roots are refused.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, readLocal, readLocalIfThere, runCli, secretOf, sync, writeLocal, type CliResult, type Workspace } from './harness.js';
import { eventually, startDaemonProcess, writeRunConfig, type DaemonProcess } from './run-helpers.js';
import { leaksIn } from './reliability-helpers.js';

// Injected 500s are tried again: the spacing of those attempts is not what these tests are about
// (every CLI child of this file inherits it).
process.env.BINDER_SYNC_RETRY_BASE_MS = '5';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

const TRACE = { BINDER_SYNC_LOG_LEVEL: 'trace' };

function allOutput(results: CliResult[]): string {
  return results.map((r) => `${r.stdout}\n${r.stderr}`).join('\n');
}

function expectStorageNeverSawAuthorization(w: Workspace): void {
  const storage = w.emulator.control.lastRequests(1000).filter((r) => r.route === 'storage-get' || r.route === 'storage-put');
  expect(storage.some((r) => r.route === 'storage-get')).toBe(true);
  expect(storage.some((r) => r.route === 'storage-put')).toBe(true);
  expect(storage.filter((r) => r.authorization)).toEqual([]);
}

/** Every file under dir (the trash excluded: it holds the user's content), as raw text. */
function stateFilesText(stateDir: string): string {
  let out = '';
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const abs = path.join(d, e.name);
      if (e.isDirectory() && e.name !== 'trash') walk(abs);
      else if (e.isFile()) out += fs.readFileSync(abs).toString('latin1');
    }
  };
  walk(stateDir);
  return out;
}

const mode = (abs: string) => fs.statSync(abs).mode & 0o777;
const octal = (m: number) => `0${m.toString(8)}`;

describe('no secret, token or presigned signature in any output', () => {
  it('the leak check recognizes a real token, a real presigned URL and the secret (it can fail)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const cred = w.emulator.credentials;
    const res = await fetch(`${w.emulator.authUrl}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: cred.clientId, client_secret: cred.clientSecret, scope: 'service_public' }).toString(),
    });
    const { access_token: token } = (await res.json()) as { access_token: string };
    const up = await fetch(`${w.emulator.baseUrl}/documents/uploads/personalstorage/presignedupload`, {
      headers: { authorization: `Bearer ${token}`, 'x-service-tenantid': cred.tenantId },
    });
    const presigned = JSON.stringify(await up.json());
    expect(presigned).toMatch(/sig=/);
    expect(leaksIn(JSON.stringify({ msg: 'x', token }), w).join()).toMatch(/token payload/);
    expect(leaksIn(`${token.slice(8)} `, w).join()).toMatch(/token-shaped/);
    expect(leaksIn(`authorization: Bearer ${token.slice(0, 12)}`, w).join()).toMatch(/bearer token/);
    expect(leaksIn(presigned, w).join()).toMatch(/presigned signature/);
    expect(leaksIn(`{"err":"${secretOf(w)}"}`, w).join()).toMatch(/client secret/);
    expect(leaksIn('{"path":"http://127.0.0.1:1/storage/blobs/x?[redacted]","msg":"storage request"}', w)).toEqual([]);
  });

  it('sync at trace level: downloads, uploads, a conflict, transient and persistent 500s', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    c.createFolder(w.binderId, { name: 'Inbox' });
    const { document: a } = c.addDocument(w.binderId, docs.id, 'a.txt', 'remote a v1');
    c.addDocument(w.binderId, docs.id, 'b.txt', 'remote b v1');
    // `sync` takes its level from the config (BINDER_SYNC_LOG_LEVEL only overrides it for `run`): set both.
    w.writeConfig({}, { log: { level: 'trace' } });
    const runs: CliResult[] = [];

    // 1. downloads
    const first = await sync(w, [], { env: TRACE });
    runs.push(first);
    expect(first.code, first.stderr).toBe(0);
    expect(readLocal(w, 'Docs/a.txt')).toBe('remote a v1');

    // 2. an upload, a conflict (both sides edited a.txt), a transient 500 on the listing and on storage
    writeLocal(w, 'Inbox/new.txt', 'local new');
    writeLocal(w, 'Docs/a.txt', 'local a v2');
    c.addVersion(a.id, 'remote a v2');
    c.injectFault({ route: 'search', status: 500, times: 1 });
    c.injectFault({ route: 'storage-get', status: 500, times: 2 });
    c.injectFault({ route: 'storage-put', status: 503, times: 1 });
    const second = await sync(w, [], { env: TRACE });
    runs.push(second);
    expect(second.code, second.stderr).not.toBeNull();
    expect(readLocal(w, 'Docs/a.txt')).toBe('remote a v2');
    const names = c.listDocuments(w.binderId).map((d) => d.fileName);
    expect(names).toContain('new.txt');
    expect(names.some((n) => n.startsWith('a') && n !== 'a.txt'), `conflict copy uploaded: ${names.join(', ')}`).toBe(true);

    // 3. a request that keeps failing: the upload gives up, the failure is reported
    writeLocal(w, 'Inbox/doomed.txt', 'will not make it');
    c.injectFault({ route: 'storage-put', status: 500 });
    const third = await sync(w, [], { env: TRACE });
    runs.push(third);
    c.clearFaults();
    expect(third.code).not.toBe(0);
    expect(allOutput([third])).toMatch(/doomed\.txt/);
    expect(c.listDocuments(w.binderId).map((d) => d.fileName)).not.toContain('doomed.txt');

    // 4. after the fault is gone the upload goes through
    const fourth = await sync(w, [], { env: TRACE });
    runs.push(fourth);
    expect(c.listDocuments(w.binderId).map((d) => d.fileName)).toContain('doomed.txt');

    const text = allOutput(runs);
    // The most verbose logging really was on and shows the traffic (else "no leak" would prove nothing).
    // binder-sync has no trace-level lines of its own: debug (20) is the most detailed it writes.
    expect(text).toMatch(/"level":20,.*"msg":"storage request"/);
    expect(text).toMatch(/"status":500/);
    expect(leaksIn(text, w)).toEqual([]);
    expect(leaksIn(stateFilesText(w.stateDir), w)).toEqual([]);
    expectStorageNeverSawAuthorization(w);
  }, 120_000);

  it('run at trace level: a token revoked between passes is replaced after one 401, and not logged', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: a } = c.addDocument(w.binderId, docs.id, 'a.txt', 'remote v1');
    writeRunConfig(w);
    daemon = startDaemonProcess(w, { env: TRACE });
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/a.txt', 20_000, 'first download');

    c.resetCounters();
    c.expireTokens();
    c.addVersion(a.id, 'remote v2');
    writeLocal(w, 'Docs/up.txt', 'uploaded after the revocation');
    await eventually(() => readLocalIfThere(w, 'Docs/a.txt') === 'remote v2', 20_000, 'the remote change after the revocation', d.tail);
    await eventually(() => c.listDocuments(w.binderId).some((x) => x.fileName === 'up.txt'), 20_000, 'the upload after the revocation', d.tail);

    // The old token was refused once (401), a new one was fetched, and everything after it was accepted.
    const reqs = c.lastRequests(1000);
    const first401 = reqs.findIndex((r) => r.status === 401);
    expect(first401, JSON.stringify(reqs.slice(0, 5))).toBeGreaterThanOrEqual(0);
    expect(reqs.slice(first401 + 1).some((r) => r.route === 'token' && r.status === 200)).toBe(true);
    expect(c.counters().token).toBeGreaterThanOrEqual(1);

    d.kill('SIGTERM');
    const exit = await d.exited;
    expect(exit.code, d.tail()).toBe(0);
    const text = `${d.stdout}\n${d.stderr}`;
    expect(text).toMatch(/"level":20,.*"status":401,.*"msg":"service request"/);
    expect(leaksIn(text, w)).toEqual([]);
    expect(leaksIn(stateFilesText(w.stateDir), w)).toEqual([]);
    expectStorageNeverSawAuthorization(w);
  }, 90_000);
});

describe('owner-only files', () => {
  it('state dir, state DB and trash are private; temp files are 0600 until commit, then take the folder mode', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: a } = c.addDocument(w.binderId, docs.id, 'a.txt', 'remote v1');

    // Storage answers slowly, so the download's temp file can be looked at while it exists.
    c.injectFault({ route: 'storage-get', latencyMs: 1500, times: 1 });
    const running = sync(w);
    const docsDir = path.join(w.local, 'Docs');
    const temp = await eventually(
      () => {
        const t = fs.existsSync(docsDir) ? fs.readdirSync(docsDir).find((n) => n.startsWith('.binder-sync-tmp-')) : undefined;
        if (t === undefined) return undefined;
        try {
          return { name: t, mode: mode(path.join(docsDir, t)) };
        } catch {
          return undefined; // committed between readdir and stat
        }
      },
      10_000,
      'a download temp file',
    );
    expect(octal(temp.mode)).toBe('0600');
    // The state DB exists while the pass runs; so does the lock.
    const lock = fs.readdirSync(w.stateDir).find((n) => n.endsWith('.lock'));
    expect(lock).toBeDefined();
    expect(octal(mode(path.join(w.stateDir, lock!)))).toBe('0600');
    const r = await running;
    expect(r.code, r.stderr).toBe(0);
    // Committed: the folder's read/write bits (the user's umask decides), not the temp's 0600.
    expect(octal(mode(path.join(docsDir, 'a.txt')))).toBe(octal(mode(docsDir) & 0o666));
    expect(fs.readdirSync(docsDir).filter((n) => n.startsWith('.binder-sync-'))).toEqual([]);

    // A remote edit replaces the local file: the old content goes to the trash.
    c.addVersion(a.id, 'remote v2');
    expect((await sync(w)).code).toBe(0);

    expect(octal(mode(w.stateDir))).toBe('0700');
    const pairDir = path.join(w.stateDir, 'main');
    expect(octal(mode(pairDir))).toBe('0700');
    const stateFiles = fs.readdirSync(pairDir).filter((n) => n.startsWith('state.db'));
    expect(stateFiles).toContain('state.db');
    for (const f of stateFiles) expect(`${f} ${octal(mode(path.join(pairDir, f)))}`).toBe(`${f} 0600`);

    const trash = path.join(pairDir, 'trash');
    const trashed: string[] = [];
    const walk = (dir: string) => {
      expect(`${dir} ${octal(mode(dir))}`).toBe(`${dir} 0700`);
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        if (e.isDirectory()) walk(path.join(dir, e.name));
        else trashed.push(path.join(dir, e.name));
      }
    };
    walk(trash);
    expect(trashed).toHaveLength(1);
    expect(fs.readFileSync(trashed[0]!, 'utf8')).toBe('remote v1');
    // A trashed file keeps the user's mode (it is a hard link of the replaced file, so a racing in-place edit
    // lands in the kept copy); no other user reaches it: every directory from stateDir down is 0700.
  }, 60_000);
});

describe('config safety', () => {
  it('refuses two pairs with overlapping local roots, naming both', async () => {
    ws = await createWorkspace();
    const w = ws;
    const second = w.emulator.control.createBinder({ name: 'Second' });
    w.writeConfig({}, {
      pairs: [
        { name: 'outer', localPath: './local', binderId: w.binderId },
        { name: 'inner', localPath: './local/nested', binderId: second.id },
      ],
    });
    const r = await sync(w);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/overlap/i);
    // Both pairs are identified: by index and by their paths.
    expect(r.stderr).toContain('pairs[0]');
    expect(r.stderr).toContain('pairs[1]');
    expect(r.stderr).toContain(path.join(fs.realpathSync(w.dir), 'local'));
    expect(r.stderr).toContain(path.join(fs.realpathSync(w.dir), 'local', 'nested'));
    // Nothing was touched: no state, no root created.
    expect(fs.existsSync(w.stateDir)).toBe(false);
    expect(fs.existsSync(w.local)).toBe(false);
    const check = await runCli(w, ['check', '--config', w.configFile]);
    expect(check.code).toBe(2);
    expect(check.stdout).toMatch(/FAIL\s+config: .*overlaps/s);
  });
});
