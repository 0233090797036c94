// `binder-sync run` end to end, syncing: local edits become remote versions through the watcher, remote changes
// arrive after a poll, editor-style saves and the daemon's own downloads upload nothing extra, a burst of 2,000
// files uploads each file exactly once, a read-only client runs download-only, and a commit refused for lack of
// write access is remembered (one trial upload per new process, a recheck by the daemon).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, readLocal, readLocalIfThere, runCli, sync, writeLocal, type Workspace } from './harness.js';
import { eventually, msgHas, msgIs, startDaemonProcess, writeRunConfig, type DaemonProcess, type LogLine } from './run-helpers.js';
import { docsByName, explain, syncJson, versionCounts } from './scenario-helpers.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A port that was free a moment ago (the daemon binds it next). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A workspace whose service refuses every commit (400), with one local file Docs/refused.txt to upload. */
async function refusingWorkspace(): Promise<Workspace> {
  ws = await createWorkspace();
  ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
  writeRunConfig(ws);
  ws.emulator.control.injectFault({ route: 'commit', status: 400 });
  writeLocal(ws, 'Docs/refused.txt', 'the service will not take this');
  return ws;
}

describe('binder-sync run: syncing', () => {
  it('uploads local edits, downloads remote changes, and never re-uploads its own downloads or editor temp files', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: doc } = c.addDocument(w.binderId, folder.id, 'a.txt', 'remote v1');
    const metricsPort = await freePort();
    writeRunConfig(w, { metrics: { port: metricsPort } });
    daemon = startDaemonProcess(w);
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/a.txt', 15_000, 'first download');
    expect(readLocal(w, 'Docs/a.txt')).toBe('remote v1');
    await d.waitForLog(msgHas('pass: '), 5_000, 'the first pass summary');

    // The daemon's own download woke its watcher; a few seconds of watching and polling upload nothing.
    await sleep(3_000);
    expect(c.listVersions(doc.id), d.tail()).toHaveLength(1);
    expect(c.listDocuments(w.binderId)).toHaveLength(1);
    expect(d.count(msgIs('uploaded'))).toBe(0);

    // A local edit becomes a new remote version within a few seconds (watcher, not the poll).
    const t0 = Date.now();
    writeLocal(w, 'Docs/a.txt', 'local v2');
    await eventually(() => c.listVersions(doc.id).length === 2, 5_000, 'local edit uploaded', d.tail);
    expect(c.readContent(doc.id).toString()).toBe('local v2');
    expect(Date.now() - t0).toBeLessThan(5_000);

    // A remote change arrives locally after a poll.
    c.addVersion(doc.id, 'remote v3');
    await eventually(() => readLocalIfThere(w, 'Docs/a.txt') === 'remote v3', 6_000, 'remote change downloaded', d.tail);

    // Editor-style save: write a temp file (in two steps), then rename it over the target: one new version.
    const uploadsBefore = d.count(msgIs('uploaded'));
    const tmp = path.join(w.local, 'Docs', 'a.txt.tmp');
    fs.writeFileSync(tmp, 'editor ');
    await sleep(50);
    fs.appendFileSync(tmp, 'save v4');
    fs.renameSync(tmp, path.join(w.local, 'Docs', 'a.txt'));
    await eventually(() => c.listVersions(doc.id).length === 4, 5_000, 'editor save uploaded', d.tail);
    await sleep(3_000);
    expect(c.listVersions(doc.id), d.tail()).toHaveLength(4);
    expect(c.readContent(doc.id).toString()).toBe('editor save v4');
    expect(c.listDocuments(w.binderId).map((x) => x.fileName)).toEqual(['a.txt']);
    expect(d.count(msgIs('uploaded')) - uploadsBefore).toBe(1);
    // Quiet polls are not logged at info level.
    expect(d.count(msgIs('quiet pass'))).toBe(0);
    expect(d.lines.filter((l) => l.level >= 40), d.tail()).toEqual([]);

    // Metrics from the pass reports.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toContain('binder_sync_files_transferred_total{pair="main",direction="upload"} 2\n');
    expect(metrics).toContain('binder_sync_files_transferred_total{pair="main",direction="download"} 2\n');
    expect(metrics).toContain(`binder_sync_bytes_transferred_total{pair="main",direction="upload"} ${'local v2'.length + 'editor save v4'.length}\n`);
    expect(metrics).toContain('binder_sync_queue_depth{pair="main"} 0\n');
    expect(metrics).toMatch(/binder_sync_last_poll_timestamp_seconds\{pair="main"\} \d{10}\n/);
  }, 45_000);

  it('uploads a burst of 2,000 new files each exactly once', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folders = ['A', 'B', 'C', 'D'].map((name) => c.createFolder(w.binderId, { name }));
    writeRunConfig(w, { service: { requestsPerSecond: 1000, maxConcurrentRequests: 32, maxConcurrentTransfers: 16 } });
    daemon = startDaemonProcess(w);
    const d = daemon;
    await eventually(() => folders.every((f) => fs.existsSync(path.join(w.local, f.name))), 10_000, 'folders created locally', d.tail);
    await d.waitForLog(msgHas('pass: '), 10_000, 'first pass');
    for (let i = 0; i < 2000; i++) {
      fs.writeFileSync(path.join(w.local, folders[i % 4]!.name, `file-${i}.txt`), `content of file ${i}\n`);
    }
    await eventually(() => c.listDocuments(w.binderId).length >= 2000, 60_000, '2,000 documents', () => `${c.listDocuments(w.binderId).length} docs\n${d.tail()}`);
    await sleep(1_500);
    const docs = c.listDocuments(w.binderId);
    expect(docs).toHaveLength(2000);
    expect(new Set(docs.map((x) => x.fileName)).size).toBe(2000);
    for (const x of docs) expect(c.listVersions(x.id), x.fileName).toHaveLength(1);
    const sample = docs.find((x) => x.fileName === 'file-1234.txt');
    expect(sample && c.readContent(sample.id).toString()).toBe('content of file 1234\n');
    expect(d.count(msgIs('uploaded'))).toBe(2000);
  }, 90_000);

  it('runs download-only with one warning when the API client is read-only', async () => {
    ws = await createWorkspace({ readOnly: true });
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, folder.id, 'remote.txt', 'from the binder');
    writeLocal(w, 'Docs/local.txt', 'stays local');
    writeRunConfig(w, { readOnly: true });
    daemon = startDaemonProcess(w, { readOnly: true });
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/remote.txt', 15_000, 'download with a read-only client');
    // The mode is said once; each file it keeps local is named once (not synced: ..., with the same reason).
    const modeWarning = (l: LogLine) => typeof l.msg === 'string' && l.msg.includes('read-only') && !l.msg.startsWith('not synced:');
    await d.waitForLog(modeWarning, 5_000, 'the read-only warning');
    writeLocal(w, 'Docs/local2.txt', 'also local');
    await sleep(3_500);
    expect(readLocal(w, 'Docs/remote.txt')).toBe('from the binder');
    expect(c.listDocuments(w.binderId).map((x) => x.fileName)).toEqual(['remote.txt']);
    expect(d.count(modeWarning), d.tail()).toBe(1);
    expect(d.count(msgHas('not synced: Docs/local2.txt: local-change-not-uploaded: the API client has read-only access')), d.tail()).toBe(1);
    expect(d.child.exitCode).toBeNull();
  }, 30_000);

  it('goes download-only with one warning when the service hands out upload slots but refuses the commit (403)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, folder.id, 'remote.txt', 'from the binder');
    writeLocal(w, 'Docs/local.txt', 'stays local');
    c.injectFault({ route: 'commit', status: 403 });
    writeRunConfig(w);
    daemon = startDaemonProcess(w);
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/remote.txt', 15_000, 'download');
    await d.waitForLog(msgHas('lack of write access'), 10_000, 'the read-only warning');
    const putsAfterWarning = c.counters()['storage-put'];
    writeLocal(w, 'Docs/local2.txt', 'also local');
    c.addVersion(c.listDocuments(w.binderId)[0]!.id, 'remote v2');
    await eventually(() => readLocalIfThere(w, 'Docs/remote.txt') === 'remote v2', 10_000, 'a remote change still arrives', d.tail);
    // No more bytes sent for uploads that can never be committed, and no document created.
    expect(c.counters()['storage-put']).toBe(putsAfterWarning);
    expect(c.listDocuments(w.binderId).map((x) => x.fileName)).toEqual(['remote.txt']);
    expect(d.count(msgHas('lack of write access'))).toBe(1);
    expect(readLocal(w, 'Docs/local.txt')).toBe('stays local');
    expect(d.child.exitCode).toBeNull();
  }, 40_000);

  it('does not send a file again that the service refused to commit (400) until it changes, and says why in status', async () => {
    const w = await refusingWorkspace();
    const c = w.emulator.control;
    daemon = startDaemonProcess(w);
    const d = daemon;
    await eventually(() => c.counters()['storage-put'] === 1, 10_000, 'the first upload', d.tail);
    await d.waitForLog((l) => typeof l.msg === 'string' && /failed/.test(l.msg) && JSON.stringify(l).includes('refused.txt'), 10_000, 'the failure');
    // Several polls (1.5 s apart) later the same bytes were not sent again.
    await sleep(5_000);
    expect(c.counters()['storage-put']).toBe(1);
    const status = await runCli(w, ['status', '--config', w.configFile, '--json']);
    expect(status.stdout).toContain('upload-refused');
    // The running daemon's watcher is shown too.
    expect((JSON.parse(status.stdout) as { pairs: Array<{ watcher: string | null }> }).pairs[0]?.watcher).toBe('folders');
    expect((await runCli(w, ['status', '--config', w.configFile])).stdout).toMatch(/^ {2}watcher +folders$/m);
    // A changed file is tried again, and goes through once the service takes it.
    c.clearFaults();
    writeLocal(w, 'Docs/refused.txt', 'changed content');
    await eventually(() => c.listDocuments(w.binderId).length === 1, 10_000, 'the changed file uploaded', d.tail);
    expect(c.readContent(c.listDocuments(w.binderId)[0]!.id).toString()).toBe('changed content');
  }, 40_000);

  it('status shows what a running pass has moved so far, and how fast (one large upload)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'Docs' });
    writeRunConfig(w);
    daemon = startDaemonProcess(w);
    const d = daemon;
    await d.waitForLog(msgHas('pass: 1 mkdir-local'), 15_000, 'the first pass');
    // The commit waits 6 s: the pass is still running, its 20 MiB already sent.
    c.injectFault({ route: 'commit', latencyMs: 6_000, times: 1 });
    writeLocal(w, 'Docs/big.bin', Buffer.alloc(20 * 1024 * 1024, 7));
    let shown = '';
    const deadline = Date.now() + 12_000;
    while (Date.now() < deadline && !/transferred +20\.0 MiB this pass \(/.test(shown)) {
      shown = (await runCli(w, ['status', '--config', w.configFile])).stdout;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(shown, d.tail()).toMatch(/^ {2}transferred +20\.0 MiB this pass \([\d.]+ [KMG]?i?B\/s\)$/m);
    expect(shown, d.tail()).toMatch(/^ {2}progress +0 of the 1 steps this pass planned are done/m); // its commit waits
    const json = JSON.parse((await runCli(w, ['status', '--config', w.configFile, '--json'])).stdout) as { pairs: Array<{ passBytes: number | null }> };
    expect([20 * 1024 * 1024, null]).toContain(json.pairs[0]?.passBytes);
    // Once the pass is over, the line is gone.
    await eventually(() => c.listDocuments(w.binderId).length === 1, 15_000, 'the upload committed', d.tail);
    await d.waitForLog(msgHas('pass: 1 upload'), 10_000, 'the pass ended');
    const after = (await runCli(w, ['status', '--config', w.configFile])).stdout;
    expect(after).not.toMatch(/transferred/);
    expect(after).not.toMatch(/^ {2}progress/m);
  }, 40_000);

  it('a refused file is not sent again by the next `binder-sync sync` (a cron job) until it changes', async () => {
    const w = await refusingWorkspace();
    const c = w.emulator.control;
    expect((await sync(w)).code).toBe(1);
    expect(c.counters()['storage-put']).toBe(1);
    const second = await sync(w, ['--json']);
    expect(second.code, second.stderr).toBe(1);
    expect(c.counters()['storage-put']).toBe(1);
    expect(second.stdout).toContain('upload-refused');
    c.clearFaults();
    writeLocal(w, 'Docs/refused.txt', 'changed content');
    expect((await sync(w)).code).toBe(0);
    expect(c.readContent(c.listDocuments(w.binderId)[0]!.id).toString()).toBe('changed content');
  }, 40_000);

  it('a local save soon after a remote edit (listing reused from the last poll) keeps both edits as a conflict', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: doc } = c.addDocument(w.binderId, folder.id, 'a.txt', 'original\n');
    writeRunConfig(w);
    // Polls far apart: the pass after the local save plans on the start-up listing, which does not show the remote edit.
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '60000' } });
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/a.txt', 15_000, 'first download');
    await sleep(500);
    c.addVersion(doc.id, 'COLLEAGUE EDIT\n');
    writeLocal(w, 'Docs/a.txt', 'original\nmy local edit\n');
    await eventually(() => readLocalIfThere(w, 'Docs/a.txt') === 'COLLEAGUE EDIT\n', 20_000, 'the remote edit arrives', d.tail);
    const copies = fs.readdirSync(path.join(w.local, 'Docs')).filter((n) => n.includes('conflict'));
    expect(copies).toHaveLength(1);
    expect(readLocal(w, `Docs/${copies[0]!}`)).toBe('original\nmy local edit\n');
    // The colleague's version is the document's latest: nothing was committed over it.
    const versions = c.listVersions(doc.id).map((v) => c.readContent(doc.id, v.id).toString());
    expect(versions).toEqual(['original\n', 'COLLEAGUE EDIT\n']);
    await eventually(() => c.listDocuments(w.binderId).length === 2, 10_000, 'the conflict copy uploaded', d.tail);
  }, 40_000);

  it('with watcher: off finds local changes by polling', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'Docs' });
    writeRunConfig(w, { pairs: [{ name: 'main', localPath: './local', binderId: w.binderId, watcher: 'off' }] });
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'quiet pass' || (typeof l.msg === 'string' && l.msg.startsWith('pass: ')), 10_000, 'first pass');
    writeLocal(w, 'Docs/polled.txt', 'found by a poll');
    await eventually(() => c.listDocuments(w.binderId).length === 1, 6_000, 'upload after a poll', d.tail);
    const uploadPass = await d.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('pass: 1 upload'), 2_000, 'upload pass');
    expect(uploadPass.trigger).toBe('poll');
    expect(d.count(msgIs('local change'))).toBe(0);
    expect(d.count(msgHas('watching for local changes'))).toBe(0);
  }, 30_000);

  it('a restart soon after the last walk does not walk the folder tree again', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const sub = c.createFolder(w.binderId, { name: 'Sub', parentId: docs.id });
    c.addDocument(w.binderId, sub.id, 'a.txt', 'remote v1');
    for (let i = 0; i < 40; i++) c.createFolder(w.binderId, { name: `Empty ${i}` }); // a tree reused for 42 s
    writeRunConfig(w);
    daemon = startDaemonProcess(w);
    await daemon.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/Sub/a.txt', 15_000, 'first download');
    await daemon.waitForLog(msgHas('pass: '), 5_000, 'the first pass summary');
    daemon.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);

    c.resetCounters();
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const d = daemon;
    await d.waitForLog(msgHas('the saved folder tree may stand in for a walk'), 10_000, 'saved tree');
    await d.waitForLog((l) => l.msg === 'quiet pass' || (typeof l.msg === 'string' && l.msg.startsWith('pass: ')), 10_000, 'first pass');
    const counters = c.counters();
    expect(counters.search, d.tail()).toBeGreaterThan(0);
    expect(counters.folders + counters.subfolders, d.tail()).toBe(0);
    // A document change while running still walks the tree, so a folder renamed with it arrives.
    c.renameFolder(sub.id, 'Renamed');
    c.addVersion(c.listDocuments(w.binderId)[0]!.id, 'remote v2');
    await eventually(() => fs.existsSync(path.join(w.local, 'Docs/Renamed/a.txt')) && readLocal(w, 'Docs/Renamed/a.txt') === 'remote v2', 8_000, 'rename and new version', d.tail);
  }, 40_000);
});

// Write access learned the expensive way: a service that hands out upload slots but refuses the commit (403)
// is found out only after a file's bytes were sent. The refusal is kept in the state DB, so the next `sync`
// sends one file (the smallest) first and the rest only once a commit goes through; a daemon that went
// download-only looks again after a while and picks up access granted later, without a restart.
const TRIAL = 'uploading one file first';

describe('commits refused for lack of write access', () => {
  it('the next sync sends only the smallest file, and everything once the service takes commits again', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'Docs' });
    const sizes: Record<string, number> = { 'a.txt': 3000, 'b.txt': 2000, 'c.txt': 5000, 'd.txt': 4000 };
    for (const [name, size] of Object.entries(sizes)) writeLocal(w, `Docs/${name}`, name[0]!.repeat(size));
    c.injectFault({ route: 'commit', status: 403 });
    const puts = () => c.counters()['storage-put'];

    const first = await syncJson(w);
    expect(first.code, explain(first)).not.toBe(0);
    expect(first.stderr).toContain('lack of write access');
    const putsFirst = puts();
    expect(putsFirst).toBeGreaterThanOrEqual(1);

    // A new process: one trial, the smallest changed file, and nothing else sent.
    writeLocal(w, 'Docs/e.txt', 'e'.repeat(1000));
    const second = await syncJson(w);
    expect(second.code, explain(second)).not.toBe(0);
    expect(puts() - putsFirst).toBe(1);
    expect(second.stderr).toContain(TRIAL);
    expect(second.stderr).toContain('Docs/e.txt');
    const waiting = second.report!.issues.filter((i) => i.code === 'local-change-not-uploaded').map((i) => i.relPath).sort();
    expect(waiting).toEqual(['Docs/a.txt', 'Docs/b.txt', 'Docs/c.txt', 'Docs/d.txt', 'Docs/e.txt']);
    expect(second.report!.issues.find((i) => i.relPath === 'Docs/a.txt')?.detail).toContain('read-only access');
    expect(c.listDocuments(w.binderId)).toEqual([]);

    // Access granted: the trial goes through and the rest follows in the same run, each file once.
    c.clearFaults();
    const putsBefore = puts();
    const third = await syncJson(w);
    expect(third.code, explain(third)).toBe(0);
    expect(third.stderr).toContain(TRIAL);
    expect(third.stderr).toContain('uploads resume');
    expect([...docsByName(w).keys()].sort()).toEqual(['a.txt', 'b.txt', 'c.txt', 'd.txt', 'e.txt']);
    expect(puts() - putsBefore).toBe(5);
    expect([...versionCounts(w).values()]).toEqual([1, 1, 1, 1, 1]);

    // Forgotten: the next upload goes without a trial.
    writeLocal(w, 'Docs/f.txt', 'f');
    const fourth = await syncJson(w);
    expect(fourth.code, explain(fourth)).toBe(0);
    expect(fourth.stderr).not.toContain(TRIAL);
    expect(docsByName(w).has('f.txt')).toBe(true);
  }, 60_000);

  it('a daemon that went download-only checks again and uploads once access is granted, without a restart', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    c.createFolder(w.binderId, { name: 'Docs' });
    writeLocal(w, 'Docs/local.txt', 'waits for write access');
    c.injectFault({ route: 'commit', status: 403 });
    writeRunConfig(w);
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_WRITE_ACCESS_RECHECK_MS: '3000' } });
    const d = daemon;
    await d.waitForLog(msgHas('lack of write access'), 15_000, 'the read-only warning');
    expect(c.listDocuments(w.binderId)).toEqual([]);

    c.clearFaults();
    await d.waitForLog(msgHas('checking write access again'), 15_000, 'the recheck');
    await eventually(() => docsByName(w).has('local.txt'), 15_000, 'the upload after the recheck', d.tail);
    await d.waitForLog(msgHas('uploads resume'), 5_000, 'the all-clear');
    expect(versionCounts(w).get(docsByName(w).get('local.txt')!.id)).toBe(1);
    expect(d.child.exitCode).toBeNull();
  }, 60_000);
});
