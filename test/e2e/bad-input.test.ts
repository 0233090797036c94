// Bad input: invalid command lines get a usage message naming the problem and exit 2 without touching anything;
// malformed, oversized and schema-violating service answers make `sync` exit 3 naming the request, and leave a
// previously synced tree, its trash and its state DB exactly as they were (in particular: no delete).
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Fault } from '../../src/emulator/index.js';
import { createWorkspace, readLocal, runCli, sync, writeLocal, type CliResult, type Workspace } from './harness.js';
import { deepSnapshot, stateDigest } from './reliability-helpers.js';
import { writeRunConfig } from './run-helpers.js';
import { expectConvergedPass } from './scenario-helpers.js';

// Failing requests are tried six times each: the spacing of those attempts is not what these tests are about
// (every CLI child of this file inherits it).
process.env.BINDER_SYNC_RETRY_BASE_MS = '5';

let ws: Workspace | undefined;
let stub: StubServer | undefined;
afterEach(async () => {
  await stub?.close();
  await ws?.close();
  stub = undefined;
  ws = undefined;
});

const explainRun = (r: CliResult) => `exit=${r.code} signal=${r.signal}\nstdout=${r.stdout.slice(-1500)}\nstderr=${r.stderr.slice(-2500)}`;

describe('invalid command lines: usage message, exit 2, nothing touched', () => {
  const CASES: Array<{ name: string; args: (w: Workspace) => string[]; says: RegExp }> = [
    { name: 'unknown command', args: () => ['frobnicate'], says: /unknown command 'frobnicate'/ },
    { name: 'unknown option', args: (w) => ['sync', '--config', w.configFile, '--frobnicate'], says: /unknown option '--frobnicate'/ },
    { name: 'missing --config', args: () => ['sync'], says: /required option '-c, --config <file>' not specified/ },
    { name: 'sync --pair without a value', args: (w) => ['sync', '--config', w.configFile, '--pair'], says: /option '-p, --pair <name>' argument missing/ },
    { name: 'a config path that does not exist', args: (w) => ['sync', '--config', path.join(w.dir, 'nope.yaml')], says: /nope\.yaml/ },
    { name: 'run with an unknown option', args: (w) => ['run', '--config', w.configFile, '--bogus'], says: /unknown option '--bogus'/ },
    { name: 'status without --config', args: () => ['status'], says: /required option '-c, --config <file>' not specified/ },
  ];

  it('each one, against a synced workspace that stays byte for byte the same', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, docs.id, 'a.txt', 'remote a');
    writeLocal(w, 'Docs/b.txt', 'local b');
    await expectConvergedPass(w);
    // A pass would have work to do if any of these commands ran one.
    writeLocal(w, 'Docs/c.txt', 'local c');
    c.addDocument(w.binderId, docs.id, 'd.txt', 'remote d');
    const before = deepSnapshot(w.dir);
    const docsBefore = c.listDocuments(w.binderId).length;
    for (const k of CASES) {
      const r = await runCli(w, k.args(w));
      expect(r.code, `${k.name}\n${explainRun(r)}`).toBe(2);
      expect(r.stderr, k.name).toMatch(k.says);
      expect(`${r.stdout}${r.stderr}`, k.name).not.toMatch(/"msg":/); // no pass started, nothing logged
    }
    expect(deepSnapshot(w.dir)).toEqual(before);
    expect(c.listDocuments(w.binderId).length).toBe(docsBefore);
  }, 60_000);
});

/** The one line `run` printed (on stdout), parsed: a failed start is a JSON log line, nothing else is said. */
function failedStartLine(r: CliResult): { level: number; msg: string; code?: string; hint?: string; problems?: string[] } {
  const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
  expect(lines, explainRun(r)).toHaveLength(1);
  return JSON.parse(lines[0]!) as { level: number; msg: string; code?: string; hint?: string; problems?: string[] };
}

describe('run with a config it cannot use: one JSON log line with code and hint, exit 2 (black-box round 31b, F4)', () => {
  it('an invalid value, several problems, a missing file: what `journalctl -o cat | jq` finds under systemd', async () => {
    ws = await createWorkspace();
    const w = ws;
    const env = { INVOCATION_ID: 'e2e', JOURNAL_STREAM: '8:1' }; // as systemd sets them
    w.writeConfig({ pollInterval: '1s' });
    let r = await runCli(w, ['run', '--config', w.configFile], { env, timeoutMs: 20_000 });
    expect(r.code, explainRun(r)).toBe(2);
    expect(r.stderr).toBe('');
    let said = failedStartLine(r);
    expect(said).toMatchObject({ level: 50, code: 'CONFIG_INVALID', problems: ['pairs[0].pollInterval: must be between 5s and 1d (got 1s)'] });
    expect(said.msg).toBe(`binder-sync daemon could not start: config ${w.configFile}: pairs[0].pollInterval: must be between 5s and 1d (got 1s)`);
    expect(said.hint).toMatch(/every option is described in sync\.config\.example\.yaml/);

    w.writeConfig({ pollInterval: '1s', direction: 'sideways' });
    r = await runCli(w, ['run', '--config', w.configFile], { env, timeoutMs: 20_000 });
    expect(r.code, explainRun(r)).toBe(2);
    said = failedStartLine(r);
    expect(said.problems).toHaveLength(2);
    expect(said.msg).toMatch(/^binder-sync daemon could not start: invalid config .*: pairs\[0\]\.direction: .*; pairs\[0\]\.pollInterval: /);

    const missing = path.join(w.dir, 'nope.yaml');
    r = await runCli(w, ['run', '--config', missing], { env, timeoutMs: 20_000 });
    expect(r.code, explainRun(r)).toBe(2);
    expect(r.stderr).toBe('');
    said = failedStartLine(r);
    expect(said).toMatchObject({ level: 50, code: 'CONFIG_NOT_FOUND', msg: `binder-sync daemon could not start: config ${missing}: file not found` });
    expect(said.hint).toMatch(/^create it from sync\.config\.example\.yaml/);
    expect(fs.existsSync(w.stateDir)).toBe(false);
  }, 60_000);
});

describe('an invalid BINDER_SYNC_LOG_LEVEL: exit 2 naming the variable and the allowed levels, nothing touched', () => {
  it('for sync, run and check', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, docs.id, 'a.txt', 'remote a');
    await expectConvergedPass(w);
    writeLocal(w, 'Docs/c.txt', 'local c'); // a pass that ran would upload it
    const before = deepSnapshot(w.dir);
    const env = { BINDER_SYNC_LOG_LEVEL: 'verbose' };
    const allowed = /BINDER_SYNC_LOG_LEVEL="verbose" is not a log level\n {2}hint: set BINDER_SYNC_LOG_LEVEL to one of fatal, error, warn, info, debug, trace, silent/;
    const r = await runCli(w, ['sync', '--config', w.configFile], { env, timeoutMs: 20_000 });
    expect(r.code, `sync\n${explainRun(r)}`).toBe(2);
    expect(r.stderr).toMatch(allowed);
    expect(`${r.stdout}${r.stderr}`).not.toMatch(/"msg":|unknown level|TypeError|Error:/);
    // The daemon says it as its one log line (JSON when stdout is not a terminal, as under systemd: round 31b, F4).
    const run = await runCli(w, ['run', '--config', w.configFile], { env, timeoutMs: 20_000 });
    expect(run.code, `run\n${explainRun(run)}`).toBe(2);
    expect(run.stderr).toBe('');
    expect(failedStartLine(run)).toMatchObject({ level: 50, code: 'CONFIG_ENV', msg: 'binder-sync daemon could not start: BINDER_SYNC_LOG_LEVEL="verbose" is not a log level' });
    expect(failedStartLine(run).hint).toMatch(/^set BINDER_SYNC_LOG_LEVEL to one of fatal, error, warn, info, debug, trace, silent/);
    expect(run.stdout).not.toMatch(/unknown level|TypeError|Error:/);
    const chk = await runCli(w, ['check', '--config', w.configFile], { env });
    expect(chk.code, explainRun(chk)).toBe(2);
    expect(chk.stdout).toMatch(/^FAIL  environment: BINDER_SYNC_LOG_LEVEL="verbose" is not a log level \(hint: set BINDER_SYNC_LOG_LEVEL to one of fatal, /m);
    expect(deepSnapshot(w.dir)).toEqual(before);
    expect(c.listDocuments(w.binderId)).toHaveLength(1);
    // A valid level in another case or with blanks around it is not an error.
    const dry = await runCli(w, ['sync', '--config', w.configFile, '--dry-run'], { env: { BINDER_SYNC_LOG_LEVEL: ' WARN ' } });
    expect(dry.code, explainRun(dry)).toBe(1); // the dry run sees the upload to do
    expect(dry.stdout).toContain('Docs/c.txt');
    // --log-level wins over the variable (a bad variable is then not read), and is checked itself.
    for (const cmd of ['sync', 'run']) {
      const bad = await runCli(w, [cmd, '--config', w.configFile, '--log-level', 'loud'], { timeoutMs: 20_000 });
      expect(bad.code, `${cmd}\n${explainRun(bad)}`).toBe(2);
      expect(bad.stderr).toMatch(/option '--log-level <level>' argument 'loud' is invalid\. Allowed choices are fatal, error, warn, info, debug, trace, silent/);
    }
    const debug = await runCli(w, ['sync', '--config', w.configFile, '--dry-run', '--log-level', 'debug'], { env: { BINDER_SYNC_LOG_LEVEL: 'verbose' } });
    expect(debug.code, explainRun(debug)).toBe(1);
    expect(debug.stdout).toMatch(/"level":20,/);
    expect(deepSnapshot(w.dir)).toEqual(before);
  }, 60_000);
});

describe('an unreachable service: exit 3, the hint names the URL that failed and promises no retry', () => {
  /** A port nothing listens on (bound, then closed). */
  async function closedPort(): Promise<number> {
    const srv = http.createServer();
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const { port } = srv.address() as AddressInfo;
    await new Promise<void>((resolve) => srv.close(() => resolve()));
    return port;
  }

  it('the token endpoint (authUrl), then the API (baseUrl)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const port = await closedPort();
    const rewrite = (from: string, to: string) => fs.writeFileSync(w.configFile, fs.readFileSync(w.configFile, 'utf8').replace(from, to), { mode: 0o600 });

    rewrite(w.emulator.authUrl, `http://127.0.0.1:${port}/auth`);
    let r = await sync(w);
    expect(r.code, explainRun(r)).toBe(3);
    expect(r.stderr).toContain(`POST /connect/token failed: ECONNREFUSED`);
    expect(r.stderr).toContain(`hint: check the network, and that http://127.0.0.1:${port}/auth/connect/token (service.authUrl) is right and reachable`);
    expect(r.stderr).not.toMatch(/baseUrl|try again later/);
    // Nothing goes on when the service is not reached at all (black-box round 42c, P1-b).
    expect(r.stdout + r.stderr).not.toContain('downloads go on');

    w.writeConfig();
    rewrite(w.emulator.baseUrl, `http://127.0.0.1:${port}/api/v1`);
    r = await sync(w);
    expect(r.code, explainRun(r)).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`hint: check the network, and that http://127\\.0\\.0\\.1:${port}/api/v1/\\S+ \\(service\\.baseUrl\\) is right and reachable`));
    expect(r.stderr).not.toMatch(/authUrl|try again later|\?/);
    expect(r.stdout + r.stderr).not.toContain('downloads go on');
  }, 60_000);

  it('an https:// address of a plain-HTTP server, and an authUrl that is no token endpoint: said as such, one line, no retries', async () => {
    ws = await createWorkspace();
    const w = ws;
    const rewrite = (from: string, to: string) => fs.writeFileSync(w.configFile, fs.readFileSync(w.configFile, 'utf8').replace(from, to), { mode: 0o600 });
    rewrite(w.emulator.authUrl, w.emulator.authUrl.replace('http://', 'https://'));
    let r = await sync(w);
    expect(r.code, explainRun(r)).toBe(3);
    expect(r.stderr).toMatch(/POST \/connect\/token failed: ERR_SSL_WRONG_VERSION_NUMBER: wrong version number\n/);
    expect(r.stderr).toMatch(/hint: https:\/\/127\.0\.0\.1:\d+\S*\/connect\/token \(service\.authUrl\) answers in plain HTTP, not TLS: is it an http:\/\/ address\?/);
    expect(r.stderr).not.toMatch(/deps\/openssl|SSL routines/);
    expect(w.emulator.control.counters().token ?? 0).toBe(0);

    w.writeConfig();
    rewrite(w.emulator.authUrl, `${w.emulator.authUrl}/nowhere`);
    r = await sync(w);
    expect(r.code, explainRun(r)).toBe(3);
    expect(r.stderr).toContain(`${w.emulator.authUrl}/nowhere/connect/token is not a token endpoint: POST /connect/token failed with HTTP 404`);
    expect(r.stderr).not.toContain('refused the client credentials');
    expect(r.stderr).toContain('hint: check service.authUrl');

    const port = await runCli(w, ['emulator', '--port', '99999']);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain("error: option '--port <n>' argument '99999' is invalid. --port must be a whole number 0-65535");
  }, 60_000);

  it('a baseUrl with a wrong API prefix (every path 404s): said as the address, not as a missing binder', async () => {
    ws = await createWorkspace();
    const w = ws;
    fs.writeFileSync(w.configFile, fs.readFileSync(w.configFile, 'utf8').replace(w.emulator.baseUrl, `${w.emulator.baseUrl}/v9`), { mode: 0o600 });
    const r = await sync(w);
    expect(r.code, explainRun(r)).toBe(3);
    expect(r.stderr).toContain(`the service answers 404 to GET /binders as well as to binder ${w.binderId}'s metadata elements: its address ${w.emulator.baseUrl}/v9 looks wrong`);
    expect(r.stderr).toContain('hint: check service.baseUrl: it must include the API path prefix');
    expect(r.stderr).not.toMatch(/has no binder|check the pair's binderId/);
    expect(fs.existsSync(w.local)).toBe(false);
  }, 60_000);
});

/** A synced tree with remote changes pending (a new version, a deleted document): a pass that went on would touch it. */
async function syncedWithPendingChanges(): Promise<{ w: Workspace; snapshot: () => string }> {
  ws = await createWorkspace();
  const w = ws;
  const c = w.emulator.control;
  const docs = c.createFolder(w.binderId, { name: 'Docs' });
  const sub = c.createFolder(w.binderId, { name: 'Sub', parentId: docs.id });
  const { document: a } = c.addDocument(w.binderId, docs.id, 'a.txt', 'remote a v1');
  const { document: gone } = c.addDocument(w.binderId, sub.id, 'gone.txt', 'will be deleted remotely');
  c.addDocument(w.binderId, sub.id, 'kept.txt', 'kept');
  writeLocal(w, 'Docs/local.txt', 'local file');
  await expectConvergedPass(w);
  c.addVersion(a.id, 'remote a v2');
  c.deleteDocument(gone.id);
  writeLocal(w, 'Docs/new-local.txt', 'not uploaded yet');
  const snapshot = () =>
    JSON.stringify({ local: [...deepSnapshot(w.local)], trash: [...deepSnapshot(path.join(w.stateDir, 'main', 'trash'))], db: stateDigest(w) });
  return { w, snapshot };
}

/** Runs `sync` and asserts exit 3, a message naming the request, and nothing changed locally or remotely. */
async function expectRefused(w: Workspace, request: RegExp, what: RegExp): Promise<CliResult> {
  const docsBefore = w.emulator.control.listDocuments(w.binderId).map((d) => d.fileName).sort();
  const r = await sync(w, [], { env: { BINDER_SYNC_LOG_LEVEL: 'warn' } });
  expect(r.code, explainRun(r)).toBe(3);
  const said = r.stderr.split('\n').filter((l) => l.startsWith('binder-sync:')).join('\n');
  expect(said, explainRun(r)).toMatch(request);
  expect(said, explainRun(r)).toMatch(what);
  expect(w.emulator.control.listDocuments(w.binderId).map((d) => d.fileName).sort()).toEqual(docsBefore);
  return r;
}

describe('invalid service answers: exit 3 naming the request, nothing changed', () => {
  const FAULTS: Array<{ name: string; fault: Fault; request: RegExp; what: RegExp }> = [
    { name: 'search answers a schema-violating body', fault: { route: 'search', invalidBody: true }, request: /POST \/documents\b/, what: /unexpected shape/ },
    { name: 'the folder listing answers a schema-violating body', fault: { route: 'folders', invalidBody: true }, request: /\/documents\/drives\//, what: /unexpected shape/ },
    { name: 'the subfolder listing answers a schema-violating body', fault: { route: 'subfolders', invalidBody: true }, request: /\/documents\/drives\//, what: /unexpected shape/ },
    // GET /documents/{id} confirms that a document missing from the listing is gone: a garbage answer must not
    // count as "deleted" (the local file of the deleted document stays).
    { name: 'the document lookup answers a schema-violating body', fault: { route: 'document', invalidBody: true }, request: /GET \/documents\/\{documentId\}/, what: /unexpected shape/ },
    { name: 'search keeps answering truncated bodies', fault: { route: 'search', truncate: true }, request: /POST \/documents\b/, what: /truncat|not JSON|terminated|closed|socket|network/i },
  ];

  it.each(FAULTS)('$name', async ({ fault, request, what }) => {
    const { w, snapshot } = await syncedWithPendingChanges();
    const before = snapshot();
    w.emulator.control.injectFault(fault);
    await expectRefused(w, request, what);
    expect(snapshot()).toBe(before);
    // The same pass goes through once the service answers properly again.
    w.emulator.control.clearFaults();
    await expectConvergedPass(w);
    expect(readLocal(w, 'Docs/a.txt')).toBe('remote a v2');
    expect(fs.existsSync(path.join(w.local, 'Docs/Sub/gone.txt'))).toBe(false);
    expect(snapshot()).not.toBe(before);
  }, 60_000);
});

type StubMode = 'pass' | 'huge-json' | 'over-limit-json' | 'not-json';

interface StubServer {
  url: string;
  mode: StubMode;
  /** Bytes the stub sent in its last oversized answer. */
  sent: number;
  close(): Promise<void>;
}

/**
 * A reverse proxy in front of the emulator's API that answers the binder's folder listing
 * (GET /documents/drives/binders/{binderId}) with something else when told to: a 50 MB JSON document (valid
 * JSON, wrong shape), 100 MB of it (beyond any sane limit for a JSON answer), or a 200 with an HTML page.
 */
async function startStub(target: string, binderId: string): Promise<StubServer> {
  const upstream = new URL(target);
  const listing = `${upstream.pathname}/documents/drives/binders/${binderId}`;
  const s: StubServer = { url: '', mode: 'pass', sent: 0, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const p = (req.url ?? '').split('?')[0];
    if (s.mode !== 'pass' && p === listing) {
      if (s.mode === 'not-json') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>Service temporarily down for maintenance</body></html>');
        return;
      }
      const size = s.mode === 'huge-json' ? 50 * 1024 * 1024 : 100 * 1024 * 1024;
      streamHugeJson(res, size, (n) => (s.sent = n));
      return;
    }
    const fwd = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    fwd.on('error', () => res.destroy());
    req.pipe(fwd);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  s.url = `http://127.0.0.1:${port}${upstream.pathname}`;
  s.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return s;
}

/** `{"padding":"xxxx...x"}` of `size` bytes, written with back-pressure (never held in memory whole). */
function streamHugeJson(res: http.ServerResponse, size: number, progress: (n: number) => void): void {
  const chunk = Buffer.alloc(1024 * 1024, 'x');
  const head = Buffer.from('{"padding":"');
  const tail = Buffer.from('"}');
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(size) });
  let sent = 0;
  res.write(head);
  sent += head.length;
  const pump = () => {
    while (sent < size - tail.length) {
      const n = Math.min(chunk.length, size - tail.length - sent);
      sent += n;
      progress(sent);
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(tail);
    progress(size);
  };
  res.on('error', () => undefined);
  pump();
}

describe('a listing answer that is not what the API sends: exit 3, nothing changed', () => {
  const setup = async () => {
    const r = await syncedWithPendingChanges();
    const s = await startStub(r.w.emulator.baseUrl, r.w.binderId);
    stub = s;
    writeRunConfig(r.w, { service: { baseUrl: s.url } });
    return { ...r, s };
  };

  it('a 200 whose body is an HTML page', async () => {
    const { w, snapshot, s } = await setup();
    const before = snapshot();
    s.mode = 'not-json';
    await expectRefused(w, /GET \/documents\/drives\/\{domain\}\/\{id\}/, /instead of JSON|not (valid )?JSON/);
    expect(snapshot()).toBe(before);
  }, 60_000);

  it('a 50 MB JSON document of the wrong shape', async () => {
    const { w, snapshot, s } = await setup();
    const before = snapshot();
    s.mode = 'huge-json';
    await expectRefused(w, /GET \/documents\/drives\/\{domain\}\/\{id\}/, /unexpected shape|too large/);
    expect(snapshot()).toBe(before);
  }, 60_000);

  it('a JSON answer beyond 64 MiB is refused as too large, before it is read whole', async () => {
    const { w, snapshot, s } = await setup();
    const before = snapshot();
    s.mode = 'over-limit-json';
    await expectRefused(w, /GET \/documents\/drives\/\{domain\}\/\{id\}/, /too large|exceeds|limit/i);
    // Refused while streaming: the client stopped reading well before the end.
    expect(s.sent).toBeLessThan(100 * 1024 * 1024);
    expect(snapshot()).toBe(before);
  }, 60_000);
});
