// `binder-sync status` and `binder-sync check` through the real CLI (child process) against the emulator:
// status before/after syncs (human and --json), beside a live lock holder with an open write transaction,
// and every check outcome (pass, bad secret, unknown binder, bad local root, read-only client, bad rules).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { inotifyWatchLimit } from '../../src/local/watch-budget.js';
import type { StatusDocument } from '../../src/cli/status-command.js';
import { writeDaemonStatus } from '../../src/daemon/status-file.js';
import { createWorkspace, readLocal, runCli, secretOf, sync, writeLocal, type CliResult, type Workspace } from './harness.js';
import { msgHas, msgIs, startDaemonProcess, type DaemonProcess } from './run-helpers.js';

const workspaces: Workspace[] = [];
const children: ChildProcess[] = [];
const daemons: DaemonProcess[] = [];

afterEach(async () => {
  for (const d of daemons.splice(0)) await d.dispose();
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const ws of workspaces.splice(0)) await ws.close();
});

async function workspace(opts: Parameters<typeof createWorkspace>[0] = {}): Promise<Workspace> {
  const ws = await createWorkspace(opts);
  workspaces.push(ws);
  return ws;
}

const status = (ws: Workspace, ...args: string[]) => runCli(ws, ['status', '--config', ws.configFile, ...args]);
const check = (ws: Workspace, opts: Parameters<typeof runCli>[2] = {}) => runCli(ws, ['check', '--config', ws.configFile], opts);

/** The service section the workspace wrote (to change one key of it). */
function readServiceSection(ws: Workspace): Record<string, unknown> {
  return (parseYaml(fs.readFileSync(ws.configFile, 'utf8')) as { service: Record<string, unknown> }).service;
}

function statusJson(r: CliResult): StatusDocument {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as StatusDocument;
}

/** The status line of `subject` ("PASS  token: ..."), failing the test when there is none or several. */
function line(r: CliResult, subject: string): string {
  const found = r.stdout.split('\n').filter((l) => l.slice(6).startsWith(`${subject}:`));
  expect(found, `no single "${subject}" line in:\n${r.stdout}`).toHaveLength(1);
  return found[0] as string;
}

/** Labelled value in the human status output ("  files in sync    2" -> "2"). */
function field(out: string, label: string): string {
  const m = new RegExp(`^  ${label} +(.*)$`, 'm').exec(out);
  expect(m, `no "${label}" in:\n${out}`).not.toBeNull();
  return (m as RegExpExecArray)[1] as string;
}

/** A remote doc and a local edit of the same file since the last pass: the next pass records a conflict. */
function makeConflict(ws: Workspace, rel: string): void {
  const doc = ws.emulator.control.listDocuments(ws.binderId).find((d) => `Docs/${d.fileName}` === rel);
  if (!doc) throw new Error(`no remote ${rel}`);
  ws.emulator.control.addVersion(doc.id, `remote edit of ${rel}`);
  writeLocal(ws, rel, `local edit of ${rel}`);
}

/** Spawns `node -e` holding the stateDir lock (its own pid) and, optionally, a write transaction on a DB. */
async function lockHolder(ws: Workspace, dbFile?: string): Promise<ChildProcess> {
  const script = `
    const fs = require('node:fs');
    fs.writeFileSync(process.env.LOCK_FILE, process.pid + '\\n');
    if (process.env.DB_FILE) {
      const Database = require('better-sqlite3');
      const db = new Database(process.env.DB_FILE);
      db.pragma('busy_timeout = 5000');
      // An open write transaction, as a daemon in the middle of recording a pass would hold.
      db.exec('BEGIN IMMEDIATE');
      db.prepare("INSERT INTO conflicts (rel_path, conflict_path, document_id, policy, detail, at) VALUES ('Docs/uncommitted.txt', NULL, NULL, 'keep-both', 'x', '2030-01-01T00:00:00.000Z')").run();
    }
    process.stdout.write('ready\\n');
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['-e', script], {
    cwd: path.resolve(import.meta.dirname, '../..'), // so that require('better-sqlite3') resolves
    env: { ...process.env, LOCK_FILE: path.join(ws.stateDir, 'binder-sync.lock'), DB_FILE: dbFile ?? '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
  });
  return child;
}

describe('binder-sync status', () => {
  it('reports "never synced" before the first pass and creates nothing', async () => {
    const ws = await workspace();
    const human = await status(ws);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^daemon +not running$/m);
    expect(human.stdout).toMatch(/^main  .*local  <->  binder /m);
    expect(field(human.stdout, 'state')).toBe('never synced');
    expect(field(human.stdout, 'pending')).toBe('0 uploads, downloads unknown');

    const doc = statusJson(await status(ws, '--json'));
    expect(doc.version).toBe(1);
    expect(doc.daemon).toEqual({ running: false, pid: null, startedAt: null, metricsPort: null, reloadRejected: null, pairsNotInConfig: [] });
    expect(doc.pairs).toHaveLength(1);
    expect(doc.pairs[0]).toMatchObject({ name: 'main', state: 'never-synced', lastPassAt: null, filesInSync: 0, pendingDownloads: null, conflicts: [], issues: [] });
    // Read-only: no state dir, no DB appeared.
    expect(fs.existsSync(ws.stateDir)).toBe(false);
  });

  it('says what the trash holds and where: a file the service deleted is there, byte for byte', async () => {
    const ws = await workspace();
    const c = ws.emulator.control;
    const folder = c.createFolder(ws.binderId, { name: 'Docs' });
    const { document } = c.addDocument(ws.binderId, folder.id, 'gone.txt', 'kept in the trash');
    for (const n of ['a', 'b', 'c']) c.addDocument(ws.binderId, folder.id, `${n}.txt`, n); // one delete in four passes the safety gate
    expect((await sync(ws)).code).toBe(0);
    expect(field((await status(ws)).stdout, 'trash')).toBe('empty');
    c.deleteDocument(document.id);
    expect((await sync(ws)).code).toBe(0);
    expect(fs.existsSync(path.join(ws.local, 'Docs', 'gone.txt'))).toBe(false);
    const out = (await status(ws)).stdout;
    const line = field(out, 'trash');
    expect(out).toContain('\n                   (`binder-sync trash` lists it, `binder-sync trash restore` puts a file back)\n');
    const trashDir = path.join(ws.stateDir, 'main', 'trash');
    expect(line).toMatch(new RegExp(`^1 file, 17 B from (\\d{4}-\\d{2}-\\d{2}) \\(kept 30 days\\) in ${trashDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    const day = /from (\S+)/.exec(line)![1]!;
    expect(fs.readFileSync(path.join(trashDir, day, 'Docs', 'gone.txt'), 'utf8')).toBe('kept in the trash');
    expect(statusJson(await status(ws, '--json')).pairs[0]!.trash).toMatchObject({ dir: trashDir, files: 1, bytes: 17, oldestDay: day, newestDay: day, capped: false, retentionDays: 30 });
  });

  it('shows the error of a sync that failed (wrong secret) until a pass succeeds, without the secret', async () => {
    const ws = await workspace();
    expect((await sync(ws)).code).toBe(0);
    expect(field((await status(ws)).stdout, 'last error')).toBe('-');
    const wrong = 'wrong-Secret-1a2b3c4d5e6f';
    const failed = await sync(ws, [], { env: { E2E_SECRET: wrong } });
    expect(failed.code).toBe(3);
    const after = await status(ws);
    expect(field(after.stdout, 'state')).toBe('error');
    expect(field(after.stdout, 'last error')).toMatch(/refused the client credentials/);
    expect(after.stdout).not.toContain(wrong);
    expect(statusJson(await status(ws, '--json')).pairs[0]).toMatchObject({ state: 'error', lastError: expect.stringMatching(/refused the client credentials/) });
    // The next good pass clears it.
    expect((await sync(ws)).code).toBe(0);
    expect(field((await status(ws)).stdout, 'last error')).toBe('-');
  });

  it('shows conflicts newest first and unsyncable items, in human and JSON output', async () => {
    const ws = await workspace();
    const c = ws.emulator.control;
    const folder = c.createFolder(ws.binderId, { name: 'Docs' });
    c.addDocument(ws.binderId, folder.id, 'a.txt', 'remote a');
    c.addDocument(ws.binderId, folder.id, 'b.txt', 'remote b');
    writeLocal(ws, 'top.txt', 'files directly in the root cannot be uploaded');
    expect((await sync(ws)).code).toBe(1); // the root file is an issue
    makeConflict(ws, 'Docs/a.txt');
    await sync(ws);
    makeConflict(ws, 'Docs/b.txt');
    await sync(ws);

    const doc = statusJson(await status(ws, '--json'));
    const p = doc.pairs[0];
    expect(p?.state).toBe('not-running');
    expect(p?.lastPassAt).not.toBeNull();
    expect(Date.now() - Date.parse(p?.lastPollAt ?? '')).toBeLessThan(60_000);
    expect(p?.lastError).toBeNull();
    // a.txt, b.txt and the two conflict copies (uploaded as new documents) are in sync.
    expect(p?.filesInSync).toBe(4);
    expect(p?.pendingUploads).toEqual([]);
    expect(p?.conflicts.map((x) => x.relPath)).toEqual(['Docs/b.txt', 'Docs/a.txt']);
    expect(p?.conflicts[0]?.conflictPath).toMatch(/^Docs\/b \(conflict .*\)\.txt$/);
    expect(p?.conflicts[0]?.policy).toBe('keep-both');
    expect(p?.issues).toEqual([expect.objectContaining({ relPath: 'top.txt', code: 'root-files-unsupported' })]);

    const human = await status(ws);
    expect(human.code).toBe(0);
    const out = human.stdout;
    expect(field(out, 'state')).toBe('daemon not running');
    expect(field(out, 'last pass')).toMatch(/^(just now|\d+ s ago) +\(poll (just now|\d+ s ago), scan (just now|\d+ s ago)\)$/);
    expect(field(out, 'files in sync')).toBe('4');
    expect(field(out, 'last error')).toBe('-');
    expect(field(out, 'conflicts')).toBe('2, newest first');
    const conflictLines = out.split('\n').filter((l) => l.includes('[keep-both]'));
    expect(conflictLines).toHaveLength(2);
    expect(conflictLines[0]).toMatch(/^ {4}(just now|\d+ s ago) +Docs\/b\.txt  -> Docs\/b \(conflict .*\)\.txt  \[keep-both\]$/);
    expect(conflictLines[1]).toContain('Docs/a.txt');
    expect(field(out, 'not synced')).toBe('1 item');
    expect(out).toMatch(/^ {4}top\.txt  root-files-unsupported: /m);

    // --pair filters, and an unknown pair is a usage error.
    expect(statusJson(await status(ws, '--json', '--pair', 'main')).pairs).toHaveLength(1);
    const unknown = await status(ws, '--pair', 'nope');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no pair named "nope"');
  });

  it('lists what needs attention first and folds a folder of files waiting for its remote folder into one line', async () => {
    const ws = await workspace();
    const c = ws.emulator.control;
    const folder = c.createFolder(ws.binderId, { name: 'Docs' });
    c.addDocument(ws.binderId, folder.id, 'a.txt', 'remote a');
    // A remote document whose name a built-in ignore rule matches: not downloaded, listed by status.
    c.addDocument(ws.binderId, folder.id, 'scratch.tmp', 'remote temp');
    c.addMetadataElement(ws.binderId, { id: 'Dept', label: 'Department', dataType: 'List', allowedValues: [{ id: 'd-fin', label: 'Finance' }], required: true });
    writeLocal(ws, 'Docs/new.txt', 'needs a Department value'); // metadata-missing
    writeLocal(ws, 'top.txt', 'files directly in the root cannot be uploaded');
    // A new local folder: its 12 files wait for a remote folder; alphabetically they come before everything else.
    for (let i = 1; i <= 12; i++) writeLocal(ws, `A new folder/file ${String(i).padStart(2, '0')}.txt`, `file ${i}`);
    const r = await sync(ws);
    expect(r.code, r.stderr).toBe(1);

    // --json: complete, one entry per item, shape unchanged.
    const p = statusJson(await status(ws, '--json')).pairs[0]!;
    expect(p.issues).toHaveLength(15);
    expect(p.issues.filter((i) => i.code === 'waiting-for-remote-folder')).toHaveLength(12);
    // Named by its full path, like every other item.
    const ignoredDetail = "matches the ignore rule '*.tmp' (built-in rule): not downloaded, nothing deleted";
    expect(p.issues).toContainEqual(expect.objectContaining({ relPath: 'Docs/scratch.tmp', code: 'ignored', detail: ignoredDetail }));
    for (const i of p.issues) expect(Object.keys(i).sort()).toEqual(expect.arrayContaining(['code', 'detail', 'relPath']));

    const out = (await status(ws)).stdout;
    expect(field(out, 'not synced')).toBe('15 items');
    const list = out.slice(out.indexOf('  not synced')).split('\n').slice(1).filter((l) => l.startsWith('    '));
    expect(list, out).toEqual([
      expect.stringMatching(/^ {4}Docs\/new\.txt +metadata-missing: required metadata without a value: Department/),
      expect.stringMatching(/^ {4}top\.txt +root-files-unsupported: /),
      expect.stringMatching(/^ {4}A new folder\/ \(12 files\) +waiting-for-remote-folder: no remote folder for "A new folder" yet/),
      // Informational, so last; the rule that left it out is named.
      expect.stringMatching(/^ {4}Docs\/scratch\.tmp +ignored: matches the ignore rule '\*\.tmp' \(built-in rule\): not downloaded, nothing deleted$/),
    ]);
    expect(out).not.toContain('more (see --json)');
  });

  it("a remote document left out by the pair's ignore list is listed with its rule, and sync still exits 0", async () => {
    const ws = await workspace();
    const c = ws.emulator.control;
    const folder = c.createFolder(ws.binderId, { name: 'Docs' });
    c.addDocument(ws.binderId, folder.id, 'a.txt', 'remote a');
    c.addDocument(ws.binderId, folder.id, 'build.log', 'remote log');
    const sub = c.createFolder(ws.binderId, { name: 'cache', parentId: folder.id });
    c.addDocument(ws.binderId, sub.id, 'blob.bin', 'cached');
    ws.writeConfig({ ignore: ['*.log', 'cache/'] });
    const r = await sync(ws);
    // The user's own choice leaves nothing pending: exit 0, and nothing of it downloaded.
    expect(r.code, r.stderr).toBe(0);
    expect(readLocal(ws, 'Docs/a.txt')).toBe('remote a');
    expect(fs.existsSync(path.join(ws.local, 'Docs/build.log'))).toBe(false);
    expect(fs.existsSync(path.join(ws.local, 'Docs/cache'))).toBe(false);
    // What `sync` left to do is known to status, as after a daemon's pass (it used to say "downloads unknown").
    expect(field((await status(ws)).stdout, 'pending')).toBe('0 uploads, 0 downloads');
    const p = statusJson(await status(ws, '--json')).pairs[0]!;
    expect(p.issues.map((i) => [i.relPath, i.code, i.detail]).sort()).toEqual([
      ['Docs/build.log', 'ignored', "matches the ignore rule '*.log' (the pair's ignore list): not downloaded, nothing deleted"],
      // The folder's line stands for what is inside it.
      ['Docs/cache', 'ignored', "matches the ignore rule 'cache/' (the pair's ignore list): not downloaded, nothing deleted (with the 1 item inside)"],
    ]);
  });

  it('a local edit whose document was renamed remotely to an ignored name is pending (exit 1), and goes up once the rule is gone', async () => {
    const ws = await workspace();
    const c = ws.emulator.control;
    const folder = c.createFolder(ws.binderId, { name: 'Docs' });
    const doc = c.addDocument(ws.binderId, folder.id, 'a.txt', 'remote a').document;
    expect((await sync(ws)).code).toBe(0);
    ws.writeConfig({ ignore: ['*.log'] });
    c.renameDocument(doc.id, 'a.log');
    writeLocal(ws, 'Docs/a.txt', 'local edit');
    const r = await sync(ws);
    expect(r.code, r.stdout).toBe(1);
    const issues = statusJson(await status(ws, '--json')).pairs[0]!.issues;
    expect(issues.map((i) => [i.relPath, i.code]).sort()).toEqual([['Docs/a.log', 'ignored'], ['Docs/a.txt', 'local-change-not-uploaded']]);
    expect(issues.find((i) => i.relPath === 'Docs/a.txt')?.detail).toContain('its document, now "Docs/a.log" on the service, is left out by an ignore rule');
    expect(readLocal(ws, 'Docs/a.txt')).toBe('local edit');
    // Without the rule the document is placed again: the edit follows it and becomes its next version.
    ws.writeConfig({ ignore: [] });
    expect((await sync(ws)).code).toBe(0);
    expect(readLocal(ws, 'Docs/a.log')).toBe('local edit');
    expect(c.readContent(doc.id).toString()).toBe('local edit');
    expect(c.listDocuments(ws.binderId)).toHaveLength(1);
  });

  it('a new sync root is created only inside an existing folder, and a wrong binderId is said before anything is created', async () => {
    const ws = await workspace();
    ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    const deep = path.join(ws.dir, 'not-mounted', 'sync');
    ws.writeConfig({ localPath: deep });
    const r = await sync(ws);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain(`the local root ${deep} does not exist, and neither does its parent folder ${path.dirname(deep)}`);
    expect(r.stderr).toContain('a missing parent is often a disk that is not mounted. Nothing was changed.');
    expect(fs.existsSync(path.dirname(deep))).toBe(false);
    // ... and it is so: not even the stateDir or an empty state DB is left (black-box round 31b, F8).
    expect(fs.existsSync(ws.stateDir)).toBe(false);
    const checked = await runCli(ws, ['check', '--config', ws.configFile]);
    expect(checked.stdout).toMatch(/^FAIL  local root \(pair main\): .*does not exist, and neither does its parent folder/m);

    const fresh = path.join(ws.dir, 'fresh');
    ws.writeConfig({ name: 'other', localPath: fresh, binderId: 'NoSuchBinder1' });
    const wrong = await sync(ws);
    expect(wrong.code, wrong.stderr).toBe(3);
    expect(wrong.stderr).toContain('pair other: the service has no binder NoSuchBinder1');
    expect(wrong.stderr).toContain("hint: no such binder for this client: check the pair's binderId; `binder-sync check` lists the binders this client can see");
    // Said once (stderr), not again as an error line of the log on stdout.
    expect(wrong.stdout).not.toContain('no binder NoSuchBinder1');
    expect(fs.existsSync(fresh)).toBe(false);
    expect(fs.existsSync(ws.stateDir)).toBe(false);
    // A state that exists is never taken back: the pair that synced keeps its DB when a later opening fails.
    ws.writeConfig({ name: 'other', localPath: fresh });
    expect((await sync(ws)).code).toBe(0);
    const db = path.join(ws.stateDir, 'other', 'state.db');
    expect(fs.existsSync(db)).toBe(true);
    ws.writeConfig({ name: 'other', localPath: fresh, binderId: 'NoSuchBinder1' });
    expect((await sync(ws)).code).toBe(2); // bound to its binder: refused, with its state kept
    expect(fs.existsSync(db)).toBe(true);
  });

  it("an error met with other service settings (an address fixed since) is said as theirs, not as the pair's (black-box round 42c, P1-e)", async () => {
    const ws = await workspace();
    expect((await sync(ws)).code).toBe(0);
    const good = readServiceSection(ws);
    const typo = 'http://127.0.0.1:9/api/v1';
    ws.writeConfig({}, { service: { ...good, baseUrl: typo } });
    expect((await sync(ws, [], { env: { BINDER_SYNC_RETRY_BASE_MS: '5' } })).code).toBe(3);
    // Under the settings it was met with, it is the pair's error.
    const under = await status(ws);
    expect(field(under.stdout, 'state')).toBe('error');
    expect(field(under.stdout, 'last error')).toMatch(/could not be reached|ECONNREFUSED/);

    // The address fixed: the error is said as the typo's, the pair is not in error; a pass with these will tell.
    ws.writeConfig({}, { service: good });
    const fixed = await status(ws);
    expect(field(fixed.stdout, 'state')).not.toBe('error');
    const said = field(fixed.stdout, 'last error');
    expect(said.startsWith('-   (the last one was met with other service settings, http://127.0.0.1:9/api/v1 (tenant ')).toBe(true);
    expect(said).toMatch(/could not be reached|ECONNREFUSED/);
    expect(said).not.toContain(secretOf(ws));
    const pair = statusJson(await status(ws, '--json')).pairs[0]!;
    expect(pair.lastError).toBeNull();
    expect(pair.lastErrorOfOtherSettings?.settings).toContain(typo);
    expect((await sync(ws)).code).toBe(0);
    expect(field((await status(ws)).stdout, 'last error')).toBe('-');
  });

  it("reads local state only: a shell without the service's variables (or its secret file) still gets the status", async () => {
    const ws = await workspace();
    ws.emulator.control.addDocument(ws.binderId, ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' }).id, 'a.txt', 'remote a');
    expect((await sync(ws)).code).toBe(0);
    const monitoring = path.join(ws.dir, 'monitoring.yaml');
    fs.writeFileSync(
      monitoring,
      [
        'service:',
        '  baseUrl: ${NOT_SET_BASE_URL}',
        '  authUrl: ${NOT_SET_AUTH_URL}',
        '  tenantId: ${NOT_SET_TENANT}',
        '  clientId: ${NOT_SET_CLIENT}',
        '  clientSecretFile: ./no-such-secret',
        'stateDir: ./state',
        'pairs:',
        `  - { name: main, localPath: ./local, binderId: ${ws.binderId} }`,
        '',
      ].join('\n'),
    );
    const r = await runCli(ws, ['status', '--config', monitoring]);
    expect(r.code, r.stderr).toBe(0);
    expect(field(r.stdout, 'files in sync')).toBe('1');
    // The commands that talk to the service still insist.
    const s = await runCli(ws, ['sync', '--config', monitoring]);
    expect(s.code).toBe(2);
    expect(s.stderr).toContain('environment variable NOT_SET_BASE_URL is not set');
  });

  it('reads the state while another process holds the lock and an open write transaction', async () => {
    const ws = await workspace();
    const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    ws.emulator.control.addDocument(ws.binderId, folder.id, 'a.txt', 'remote a');
    expect((await sync(ws)).code).toBe(0);
    const holder = await lockHolder(ws, path.join(ws.stateDir, 'main', 'state.db'));
    const pid = holder.pid as number;

    const started = Date.now();
    const doc = statusJson(await status(ws, '--json'));
    expect(Date.now() - started).toBeLessThan(4000); // did not wait out the writer's busy timeout
    expect(doc.daemon.running).toBe(true);
    expect(doc.daemon.pid).toBe(pid);
    expect(doc.pairs[0]?.state).toBe('idle');
    expect(doc.pairs[0]?.filesInSync).toBe(1);
    // The uncommitted row is invisible to the reader.
    expect(doc.pairs[0]?.conflicts).toEqual([]);
    expect((await status(ws)).stdout).toMatch(new RegExp(`^daemon +running \\(pid ${pid}\\)$`, 'm'));

    // With the daemon's status file naming the lock owner, the live activity shows.
    const since = new Date(Date.now() - 5000).toISOString();
    writeDaemonStatus(ws.stateDir, { version: 1, pid, startedAt: new Date(Date.now() - 3_600_000).toISOString(), metricsPort: 9464, pairs: { main: { activity: 'syncing', since } } });
    const live = statusJson(await status(ws, '--json'));
    expect(live.daemon).toEqual({ running: true, pid, startedAt: expect.any(String), metricsPort: 9464, reloadRejected: null, pairsNotInConfig: [] });
    expect(live.pairs[0]).toMatchObject({ state: 'syncing', activitySince: since });
    const human = (await status(ws)).stdout;
    expect(human).toMatch(new RegExp(`^daemon +running \\(pid ${pid}, started 1 h ago, metrics on port 9464\\)$`, 'm'));
    expect(field(human, 'state')).toMatch(/^syncing \(started \d+ s ago\)$/);

    // Once the holder is gone, the lock and the status file are stale and ignored.
    holder.kill('SIGKILL');
    await new Promise((r) => holder.once('exit', r));
    const after = statusJson(await status(ws, '--json'));
    expect(after.daemon.running).toBe(false);
    expect(after.daemon.metricsPort).toBeNull();
    expect(after.pairs[0]?.state).toBe('not-running');
  });

  it('exits 6 when a state DB cannot be read, and still shows the other pairs', async () => {
    const ws = await workspace();
    const other = ws.emulator.control.createBinder({ name: 'Other' });
    ws.writeConfig({}, { pairs: [
      { name: 'main', localPath: './local', binderId: ws.binderId },
      { name: 'second', localPath: './local2', binderId: other.id },
    ] });
    fs.mkdirSync(path.join(ws.stateDir, 'main'), { recursive: true });
    fs.writeFileSync(path.join(ws.stateDir, 'main', 'state.db'), 'this is not a database, just some text that is long enough'.repeat(20));
    const r = await status(ws, '--json');
    expect(r.code).toBe(6);
    const doc = JSON.parse(r.stdout) as StatusDocument;
    expect(doc.pairs.map((p) => [p.name, p.state])).toEqual([['main', 'error'], ['second', 'never-synced']]);
    expect(doc.pairs[0]?.stateError).toMatch(/corrupt or not a SQLite database/);
    const human = await status(ws);
    expect(human.code).toBe(6);
    expect(human.stdout).toMatch(/^  state DB +UNREADABLE: /m);
  });

  it('an empty state DB (truncated: binder-sync creates it with its schema) is said to be damaged, not "never synced"', async () => {
    const ws = await workspace();
    fs.mkdirSync(path.join(ws.stateDir, 'main'), { recursive: true });
    fs.writeFileSync(path.join(ws.stateDir, 'main', 'state.db'), '');
    const r = await status(ws, '--json');
    const pair = (JSON.parse(r.stdout) as StatusDocument).pairs[0];
    expect(pair?.state).not.toBe('never-synced');
    expect(pair?.stateError).toMatch(/is empty \(0 bytes\)/);
    // And a pass refuses it rather than starting over as a pair that never synced.
    const s = await sync(ws);
    expect(s.code).toBe(6); // no pass ran: not 1, "something is left" (black-box round 11, F6)
    expect(s.stderr).toMatch(/is empty \(0 bytes\).*move it aside/s);
  });

  it('refuses a state DB written by a newer binder-sync, without touching it', async () => {
    const ws = await workspace();
    const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    ws.emulator.control.addDocument(ws.binderId, folder.id, 'a.txt', 'a');
    expect((await sync(ws)).code).toBe(0);
    const dbFile = path.join(ws.stateDir, 'main', 'state.db');
    const db = new Database(dbFile);
    db.pragma('user_version = 99');
    db.close();
    const r = await status(ws, '--json');
    expect(r.code).toBe(6);
    expect((JSON.parse(r.stdout) as StatusDocument).pairs[0]?.stateError).toMatch(/schema version 99, newer than/);
    expect((await sync(ws)).code).toBe(6);
    const again = new Database(dbFile, { readonly: true });
    expect(again.pragma('user_version', { simple: true })).toBe(99);
    again.close();
  });

  it('a state DB damaged inside (garbage over its base table, the length kept) is said by status, check and a no-change sync: exit 6, never "in sync" (black-box round 37b, F5)', async () => {
    const ws = await workspace();
    const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    for (const n of ['a', 'b', 'c']) ws.emulator.control.addDocument(ws.binderId, folder.id, `${n}.txt`, n);
    expect((await sync(ws)).code).toBe(0);
    const dbFile = path.join(ws.stateDir, 'main', 'state.db');
    // Garbage over the base table's page, nothing running: the file keeps its length and its header.
    const raw = new Database(dbFile, { readonly: true });
    const root = raw.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'base'").pluck().get() as number;
    const pageSize = raw.pragma('page_size', { simple: true }) as number;
    raw.close();
    const fd = fs.openSync(dbFile, 'r+');
    fs.writeSync(fd, Buffer.alloc(pageSize, 'stray bytes '), 0, pageSize, (root - 1) * pageSize);
    fs.closeSync(fd);
    const damaged = `pair main: its state DB ${dbFile} is damaged (SQLite's quick_check: `;

    const human = await status(ws);
    expect(human.code, human.stdout + human.stderr).toBe(6);
    expect(field(human.stdout, 'state')).toBe('error');
    expect(field(human.stdout, 'state DB')).toContain(`UNREADABLE: ${damaged}`);
    expect(field(human.stdout, 'state DB')).toMatch(/hint: restore it from a backup, or move it aside/);
    const doc = JSON.parse((await status(ws, '--json')).stdout) as StatusDocument;
    expect(doc.pairs[0]?.stateError).toContain(damaged);

    const k = await check(ws);
    expect(k.code, k.stdout).toBe(6);
    expect(line(k, 'state DB (pair main)')).toMatch(/^FAIL  state DB \(pair main\): pair main: its state DB .* is damaged .*\(hint: restore it from a backup, or move it aside/);

    // No change on either side: the pass would take the in-sync shortcut, which reads no base row.
    const s = await sync(ws);
    expect(s.code, s.stdout + s.stderr).toBe(6);
    expect(s.stdout).not.toMatch(/in sync/);
    expect(s.stderr).toContain(damaged);
    expect(s.stderr).toMatch(/hint: restore it from a backup, or move it aside \(e\.g\. add \.broken/);

    // The daemon refuses it when the pair opens, as `sync` does: no quiet pass over it.
    const daemon = startDaemonProcess(ws);
    daemons.push(daemon);
    const refusal = await daemon.waitForLog(msgHas(damaged), 15_000, 'the refusal');
    expect(refusal.level).toBeGreaterThanOrEqual(50);
    expect(daemon.count(msgIs('quiet pass'))).toBe(0);
    daemon.kill('SIGTERM');
    await daemon.exited;

    // Moved aside as the hint says, the next pass rebuilds the state by comparing content, and check passes again.
    fs.renameSync(dbFile, `${dbFile}.broken`);
    expect((await sync(ws)).code).toBe(0);
    expect(line(await check(ws), 'state DB (pair main)')).toMatch(/^PASS  state DB \(pair main\): .* is intact/);
  });

  it('exits 2 on an invalid config', async () => {
    const ws = await workspace();
    fs.writeFileSync(ws.configFile, 'service: {}\npairs: []\n');
    const r = await status(ws);
    expect(r.code).toBe(2);
    // What status reads (pairs, stateDir) is checked; the service section is not its business.
    expect(r.stderr).toContain('pairs: must list at least one entry');
    expect(r.stderr).not.toContain('service.baseUrl');
  });
});

describe('binder-sync check', () => {
  it('passes every check for a good config and leaves no probe file behind', async () => {
    const ws = await workspace();
    fs.mkdirSync(ws.local);
    const r = await check(ws);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(line(r, 'config')).toMatch(/^PASS  config: .*sync\.yaml is valid \(1 pair\)$/);
    // The address as configured (service.authUrl, its /auth path included), not only its origin (black-box round 32b, F6).
    expect(new URL(ws.emulator.authUrl).pathname).toBe('/auth');
    expect(line(r, 'token')).toBe(`PASS  token: got a token from ${ws.emulator.authUrl} for client ${ws.emulator.credentials.clientId}`);
    expect(line(r, 'access')).toBe('PASS  access: read/write (upload slots are granted; whether commits are shows at the first upload)');
    expect(line(r, `binder ${ws.binderId} (pair main)`)).toBe(`PASS  binder ${ws.binderId} (pair main): found "E2E"`);
    expect(line(r, 'metadata (pair main)')).toMatch(/^PASS  /);
    expect(line(r, 'state dir')).toMatch(/^PASS  state dir: .*state does not exist yet; it will be created$/);
    expect(line(r, 'local root (pair main)')).toMatch(/^PASS  local root \(pair main\): .* is a readable and writable directory$/);
    // One watch: the empty root's folder (the default watcher watches folders only).
    const limit = inotifyWatchLimit();
    if (limit === null) expect(line(r, 'inotify watches')).toMatch(/^SKIP  inotify watches: 1 needed; no inotify limit/);
    else expect(line(r, 'inotify watches')).toBe(`PASS  inotify watches: 1 needed, the limit is ${limit} per user`);
    expect(r.stdout.split('\n').filter(Boolean).every((l) => l.startsWith('PASS  ') || (limit === null && l.startsWith('SKIP  inotify watches')))).toBe(true);
    expect(fs.readdirSync(ws.local)).toEqual([]);
    expect(r.stdout + r.stderr).not.toContain(secretOf(ws));
  });

  it('fails the token check with a wrong secret (exit 3) without printing the secret', async () => {
    const ws = await workspace();
    const wrong = 'wrong-Secret-9f8e7d6c5b4a';
    const r = await check(ws, { env: { E2E_SECRET: wrong } });
    expect(r.code).toBe(3);
    // The config writes clientSecret: ${E2E_SECRET}: the hint names the variable (black-box round 32b, F6).
    expect(line(r, 'token')).toMatch(
      /^FAIL  token: .*\(hint: check service\.clientId and service\.clientSecret \(environment variable E2E_SECRET\), and that the API client was not deleted or rotated\)$/,
    );
    expect(line(r, `binder ${ws.binderId} (pair main)`)).toMatch(/^SKIP  .*needs a token$/);
    // Local checks still run.
    expect(line(r, 'state dir')).toMatch(/^PASS  /);
    expect(r.stdout + r.stderr).not.toContain(wrong);
    expect(r.stdout + r.stderr).not.toContain(secretOf(ws));
  });

  it('a wrong secret in service.clientSecretFile: check and sync name that key and its path, not clientSecret (black-box round 32b, F6)', async () => {
    const ws = await workspace();
    const wrong = 'wrong-Secret-from-a-file-1a2b3c';
    fs.writeFileSync(path.join(ws.dir, 'secret'), `${wrong}\n`, { mode: 0o600 });
    const { clientSecret: _inline, ...service } = readServiceSection(ws);
    ws.writeConfig({}, { service: { ...service, clientSecretFile: './secret' } });
    const hint = `check service.clientId and service.clientSecretFile (${path.join(ws.dir, 'secret')}), and that the API client was not deleted or rotated`;
    const r = await check(ws);
    expect(r.code).toBe(3);
    expect(line(r, 'token').endsWith(`(hint: ${hint})`), line(r, 'token')).toBe(true);
    const s = await sync(ws);
    expect(s.code).toBe(3);
    expect(s.stderr).toContain(`hint: ${hint}`);
    for (const out of [r.stdout + r.stderr, s.stdout + s.stderr]) {
      expect(out).not.toContain('service.clientSecret ');
      expect(out).not.toContain(wrong);
    }
  });

  it('a baseUrl without the API path prefix fails the binders check with a hint at service.baseUrl', async () => {
    const ws = await workspace();
    const origin = new URL(ws.emulator.baseUrl).origin;
    ws.writeConfig({}, { service: { ...readServiceSection(ws), baseUrl: origin } });
    const r = await check(ws);
    expect(r.code).toBe(3);
    expect(line(r, 'binders')).toMatch(new RegExp(`^FAIL  binders: ${origin.replace(/[.]/g, '\\.')}/binders answered 404 .*\\(hint: check service\\.baseUrl: it must include the API path prefix`));
  });

  it('fails the binder check for an unknown binder id and lists the real ones', async () => {
    const ws = await workspace();
    ws.writeConfig({ binderId: 'NoSuchBinder1' });
    const r = await check(ws);
    expect(r.code).toBe(3);
    expect(line(r, 'binder NoSuchBinder1 (pair main)')).toMatch(
      new RegExp(`^FAIL  binder NoSuchBinder1 \\(pair main\\): not found among the \\d+ binders? of the tenant \\(hint: check pairs\\[0\\]\\.binderId; the tenant has .*${ws.binderId} "E2E"`),
    );
    expect(line(r, 'token')).toMatch(/^PASS  /);
  });

  it('does not count synced files an ignore rule hides since as in sync; says how many it hides (black-box round 30b, F8)', async () => {
    const ws = await workspace();
    const c = ws.emulator.control;
    const docs = c.createFolder(ws.binderId, { name: 'Docs' });
    const other = c.createFolder(ws.binderId, { name: 'Other' });
    for (const n of ['a', 'b', 'c']) c.addDocument(ws.binderId, docs.id, `${n}.txt`, n);
    for (const n of ['x', 'y']) c.addDocument(ws.binderId, other.id, `${n}.txt`, n);
    expect((await sync(ws)).code).toBe(0);
    ws.writeConfig({ ignore: ['Other/'] });
    const json = statusJson(await status(ws, '--json'));
    expect(json.pairs[0]).toMatchObject({ filesInSync: 3, filesHiddenByIgnore: 2 });
    expect((await status(ws)).stdout).toMatch(/^ {2}files in sync +3 {3}\(and 2 synced before, hidden by an ignore rule since: left as they are\)$/m);
  });

  it('a renamed pair (same folder, same binder) is refused by sync and check until its state is renamed too; then nothing is sent (black-box round 30b, F2)', async () => {
    const ws = await workspace();
    const c = ws.emulator.control;
    const docs = c.createFolder(ws.binderId, { name: 'Docs' });
    const gone = c.addDocument(ws.binderId, docs.id, 'gone.txt', 'deleted by a colleague later').document;
    const edited = c.addDocument(ws.binderId, docs.id, 'edited.txt', 'v1').document;
    expect((await sync(ws)).code).toBe(0);
    c.deleteDocument(gone.id);
    c.addVersion(edited.id, 'v2 from a colleague');
    ws.writeConfig({ name: 'work' });
    const refused = await sync(ws);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`pair work: has no state yet, but the stateDir holds the state of pair main (${path.join(ws.stateDir, 'main')}), which synced this same folder`);
    expect(refused.stderr).toContain(`mv -T '${path.join(ws.stateDir, 'main')}' '${path.join(ws.stateDir, 'work')}'`);
    const r = await check(ws);
    expect(r.code, r.stdout).toBe(2);
    expect(line(r, 'state (pair work)')).toMatch(/^FAIL  state \(pair work\): pair work: has no state yet, .* was the pair renamed\?/);
    // Nothing was sent or changed: the deleted document did not come back, no conflict copy was uploaded.
    expect(c.listDocuments(ws.binderId).map((d) => d.fileName).sort()).toEqual(['edited.txt']);
    expect(readLocal(ws, 'Docs/edited.txt')).toBe('v1');
    // Done as the hint says (the refused pair made nothing under its new name: black-box round 31a, F3): the
    // record is kept, the colleague's changes come down, nothing goes up.
    expect(fs.existsSync(path.join(ws.stateDir, 'work'))).toBe(false);
    fs.renameSync(path.join(ws.stateDir, 'main'), path.join(ws.stateDir, 'work'));
    const after = await sync(ws);
    expect(after.code, after.stderr).toBe(0);
    expect(readLocal(ws, 'Docs/edited.txt')).toBe('v2 from a colleague');
    expect(fs.existsSync(path.join(ws.local, 'Docs', 'gone.txt'))).toBe(false);
    expect(c.listDocuments(ws.binderId).map((d) => d.fileName).sort()).toEqual(['edited.txt']);
  });

  it('fails a pair whose state was synced with another binder than the config names, as sync refuses it (exit 2)', async () => {
    const ws = await workspace();
    expect((await sync(ws)).code).toBe(0);
    const other = ws.emulator.control.createBinder({ name: 'Other' }).id;
    ws.writeConfig({ binderId: other });
    const r = await check(ws);
    expect(r.code, r.stdout).toBe(2);
    expect(line(r, `binder ${other} (pair main)`)).toMatch(/^PASS  /);
    expect(line(r, 'state (pair main)')).toMatch(new RegExp(`^FAIL  state \\(pair main\\): pair main: its state was synced with binder ${ws.binderId}, but the config now says binder ${other} \\(hint: to sync another binder, give the pair a new name`));
    const refused = await sync(ws);
    expect(refused.code).toBe(2);
    ws.writeConfig();
    const back = await check(ws);
    expect(back.stdout).not.toMatch(/state \(pair main\)/);
  });

  it('fails the local check (exit 6) when the root is a regular file or not writable', async () => {
    const ws = await workspace();
    fs.writeFileSync(path.join(ws.dir, 'afile'), 'not a directory');
    ws.writeConfig({ localPath: './afile' });
    let r = await check(ws);
    expect(r.code).toBe(6);
    expect(line(r, 'local root (pair main)')).toMatch(/^FAIL  local root \(pair main\): .*afile is not a directory \(hint: /);
    expect(line(r, 'token')).toMatch(/^PASS  /);

    if (process.getuid?.() !== 0) {
      // root ignores permission bits, so this half only runs for a normal user.
      const ro = path.join(ws.dir, 'readonly');
      fs.mkdirSync(ro, { mode: 0o500 });
      ws.writeConfig({ localPath: './readonly' });
      r = await check(ws);
      fs.chmodSync(ro, 0o700);
      expect(r.code).toBe(6);
      expect(line(r, 'local root (pair main)')).toMatch(/^FAIL  local root \(pair main\): .*readonly is not writable \(EACCES\)/);
    }
  });

  it('refuses a missing root for a pair that has synced before', async () => {
    const ws = await workspace();
    const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    ws.emulator.control.addDocument(ws.binderId, folder.id, 'a.txt', 'a');
    expect((await sync(ws)).code).toBe(0);
    fs.rmSync(ws.local, { recursive: true });
    const r = await check(ws);
    expect(r.code).toBe(6);
    expect(line(r, 'local root (pair main)')).toMatch(/is missing, but this pair has synced before/);
  });

  it('fails an empty root of a pair that has synced files (an unmounted disk\'s mount point), as the safety gate stops sync (black-box round 37b, F9)', async () => {
    const ws = await workspace();
    const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
    ws.emulator.control.addDocument(ws.binderId, folder.id, 'a.txt', 'a');
    ws.emulator.control.addDocument(ws.binderId, folder.id, 'b.txt', 'b');
    expect((await sync(ws)).code).toBe(0);
    expect((await check(ws)).code).toBe(0);
    fs.rmSync(ws.local, { recursive: true });
    fs.mkdirSync(ws.local);
    const r = await check(ws);
    expect(r.code, r.stdout).toBe(4);
    expect(line(r, 'local root (pair main)')).toMatch(/^FAIL  local root \(pair main\): .*local is empty, but this pair has synced 2 files: passes stop at the safety gate \(nothing is deleted\) \(hint: is the disk mounted\?/);
    const s = await sync(ws);
    expect(s.code).toBe(4);
  });

  it('reports a read-only client as a warning for a two-way pair, enough for a download pair, and a failure for an upload-only pair', async () => {
    const ws = await workspace({ readOnly: true });
    let r = await check(ws, { readOnly: true });
    expect(r.code, r.stdout).toBe(0);
    expect(line(r, 'access')).toBe('WARN  access: read-only: pair main runs download-only, local changes are not uploaded (hint: uploads need an API client with read/write access)');
    expect(line(r, 'token')).toContain(ws.emulator.credentials.readOnlyClientId);

    ws.writeConfig({ direction: 'download' });
    r = await check(ws, { readOnly: true });
    expect(r.code, r.stdout).toBe(0);
    expect(line(r, 'access')).toBe('PASS  access: read-only, which is enough: every pair only downloads');

    ws.writeConfig({ direction: 'upload' });
    r = await check(ws, { readOnly: true });
    expect(r.code).toBe(3);
    expect(line(r, 'direction (pair main)')).toMatch(/^FAIL  direction \(pair main\): is upload, but the client is read-only/);
  });

  it('checks metadata rules against the binder: unknown elements fail (exit 2), uncovered required ones warn', async () => {
    const ws = await workspace();
    ws.emulator.control.addMetadataElement(ws.binderId, {
      id: 'Dept',
      label: 'Department',
      dataType: 'List',
      allowedValues: [{ id: 'd-fin', label: 'Finance' }],
      required: true,
    });
    let r = await check(ws);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l.includes('metadata (pair main):'));
    expect(lines).toEqual([
      expect.stringMatching(/^PASS  metadata \(pair main\): no rules; the binder has 4 metadata elements$/),
      expect.stringMatching(/^WARN  metadata \(pair main\): required element Department has no rule: new local files will not be uploaded/),
    ]);

    ws.writeConfig({ metadata: [{ match: '**', values: { Department: 'Finance' } }] });
    r = await check(ws);
    expect(r.code).toBe(0);
    expect(line(r, 'metadata (pair main)')).toBe("PASS  metadata (pair main): 1 rule fits the binder's 4 metadata elements");

    // Set for one folder only: every new file elsewhere would wait as metadata-missing.
    ws.writeConfig({ metadata: [{ match: 'Docs/**', values: { Department: 'Finance' } }, { match: '*.csv', values: { Department: 'd-fin' } }] });
    r = await check(ws);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('WARN  metadata (pair main):'))).toEqual([
      'WARN  metadata (pair main): required element Department is set only for files matching "Docs/**", "*.csv": new local files elsewhere will not be uploaded (hint: if that is not meant, give it a value in a rule with match: "**" (rules apply in order: put it first, and the folder rules after it override it))',
    ]);
    ws.writeConfig({ metadata: [{ match: '**', values: { Department: 'Finance' } }, { match: 'Docs/**', values: { Department: 'd-fin' } }] });
    expect((await check(ws)).stdout).not.toMatch(/^WARN  metadata/m);

    ws.writeConfig({ metadata: [{ match: '**', values: { Department: 'Marketing', NoSuchElement: 'x' } }] });
    r = await check(ws);
    expect(r.code).toBe(2);
    const fail = r.stdout.slice(r.stdout.indexOf('FAIL  metadata (pair main):'));
    expect(fail).toMatch(/"Marketing" is not an allowed value/);
    expect(fail).toMatch(/NoSuchElement: no metadata element/);
    // The hint says what to fix, not "run check" to a user running check (black-box round 40c).
    expect(fail).toMatch(/\(hint: fix the pair's metadata rules/);
    expect(fail).not.toContain('checks them again');
  });

  it('exits 2 for an invalid config, and warns about a world-readable config holding a secret', async () => {
    const ws = await workspace();
    const text = fs.readFileSync(ws.configFile, 'utf8');
    fs.writeFileSync(ws.configFile, text.replace('pairs:', 'bogusKey: 1\npairs:'));
    let r = await check(ws);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/^FAIL  config: .*bogusKey/m);
    expect(r.stdout).not.toMatch(/^PASS/m);

    const secret = secretOf(ws);
    fs.writeFileSync(ws.configFile, text.replace('${E2E_SECRET}', secret), { mode: 0o644 });
    fs.chmodSync(ws.configFile, 0o644);
    r = await check(ws);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^WARN  config: config file is readable by others and contains a secret; chmod 600 /m);
    expect(r.stdout + r.stderr).not.toContain(secret);
  });
});
