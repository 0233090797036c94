// `binder-sync run` end to end, operation: SIGHUP adds a pair without a restart and rejects a bad config with
// the reason while the old one keeps running; a second instance on the same stateDir is refused with exit 5;
// the status meta keys are written to the state DB.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readDaemonStatus } from '../../src/daemon/status-file.js';
import { BinderSyncError } from '../../src/errors.js';
import { StateStore } from '../../src/state/store.js';
import { createWorkspace, readLocal, runCli, secretOf, writeLocal, type Workspace } from './harness.js';
import { eventually, msgHas, msgIs, startDaemonProcess, writeRunConfig, type DaemonProcess } from './run-helpers.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

const fileIs = (w: Workspace, rel: string, content: string) => () => {
  try {
    return readLocal(w, rel) === content;
  } catch {
    return false;
  }
};

/** A workspace whose binder holds Docs/one.txt, with a run config of one pair 'main' on ./local. */
async function oneDocumentPair(): Promise<Workspace> {
  const w = await createWorkspace();
  const folder = w.emulator.control.createFolder(w.binderId, { name: 'Docs' });
  w.emulator.control.addDocument(w.binderId, folder.id, 'one.txt', 'one');
  writeRunConfig(w, { pairs: [{ name: 'main', localPath: './local', binderId: w.binderId }] });
  return w;
}

/** A meta value of a pair's state DB, read the way `binder-sync status` reads it; undefined before it exists. */
function metaOf(w: Workspace, pair: string, key: string): string | undefined {
  const file = path.join(w.stateDir, pair, 'state.db');
  if (!fs.existsSync(file)) return undefined;
  let store: StateStore;
  try {
    store = StateStore.openReadOnly(file);
  } catch (err) {
    if (err instanceof BinderSyncError && err.code === 'STATE_NOT_CREATED') return undefined; // the first pass is creating it
    throw err;
  }
  try {
    return store.getMeta(key);
  } finally {
    store.close();
  }
}

describe('binder-sync run: operation', () => {
  it('reloads the config on SIGHUP (a new pair starts) and rejects a bad one while the old keeps running', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: doc } = c.addDocument(w.binderId, folder.id, 'one.txt', 'pair one');
    const second = c.createBinder({ name: 'Second' });
    const folder2 = c.createFolder(second.id, { name: 'Other' });
    c.addDocument(second.id, folder2.id, 'two.txt', 'pair two');
    const mainPair = { name: 'main', localPath: './local', binderId: w.binderId };
    writeRunConfig(w, { pairs: [mainPair] });
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/one.txt', 15_000, 'first pair synced');

    // Status for `binder-sync status`: meta keys in the pair's state DB.
    await eventually(() => d.count(msgHas('pass: ')) > 0, 5_000, 'pass summary');
    const store = StateStore.openReadOnly(path.join(w.stateDir, 'main', 'state.db'));
    try {
      await eventually(() => store.getMeta('daemonState') === 'idle', 5_000, 'daemonState idle');
      expect(Date.parse(store.getMeta('nextPassAt') ?? '')).toBeGreaterThan(Date.now() - 1000);
      expect(store.getMeta('pendingUploads')).toBe('0');
      expect(store.getMeta('pendingDownloads')).toBe('0');
      expect(store.getMeta('lastPollAt')).toBeTruthy();
    } finally {
      store.close();
    }
    // ... and the live status file.
    const live = readDaemonStatus(w.stateDir);
    expect(live?.pid).toBe(d.child.pid);
    expect(live?.pairs.main?.activity).toBe('idle');

    // A second instance on the same stateDir is refused.
    const other = await runCli(w, ['run', '--config', w.configFile], { timeoutMs: 15_000 });
    expect(other.code, other.stderr).toBe(5);
    // The reason is in the JSON log line, with its hint; no plain line on stderr breaks a `jq` over the journal.
    const refused = other.stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as { msg: string; code?: string; hint?: string });
    expect(refused.find((l) => l.code === 'STATE_LOCKED')?.msg).toMatch(/^binder-sync daemon could not start: another binder-sync \(pid \d+\) is using the state directory/);
    // Not "another stateDir": for the same folder that is refused too, with a hint that pointed back here (round 37b, F10).
    expect(refused.find((l) => l.code === 'STATE_LOCKED')?.hint).toMatch(/^stop the other instance first .*it syncs on its own/);
    expect(refused.find((l) => l.code === 'STATE_LOCKED')?.hint).not.toMatch(/give this one another stateDir/);
    expect(other.stderr).toBe('');
    // A start-up warning (a literal secret in a config others may read) is a JSON log line too.
    const openConfig = path.join(w.dir, 'open.yaml');
    fs.writeFileSync(openConfig, fs.readFileSync(w.configFile, 'utf8').replace('${E2E_SECRET}', secretOf(w)), { mode: 0o644 });
    fs.chmodSync(openConfig, 0o644);
    const warned = await runCli(w, ['run', '--config', openConfig], { timeoutMs: 15_000 });
    expect(warned.code, warned.stderr).toBe(5);
    expect(warned.stderr).toBe('');
    expect(warned.stdout).toMatch(/^\{"level":40,.*"msg":"config file is readable by others and contains a secret; chmod 600 /m);

    // Add a pair and reload.
    writeRunConfig(w, { pairs: [mainPair, { name: 'second', localPath: './local2', binderId: second.id }] });
    d.kill('SIGHUP');
    const reloaded = await d.waitForLog(msgIs('config reloaded'), 10_000, 'reload');
    expect(reloaded.added).toEqual(['second']);
    expect(reloaded.unchanged).toEqual(['main']);
    await eventually(fileIs(w, '../local2/Other/two.txt', 'pair two'), 10_000, 'second pair synced', d.tail);
    // The first pair was not restarted: it ran exactly one start pass.
    expect(d.count((l) => l.msg === 'pass starting' && l.pair === 'main' && l.trigger === 'start')).toBe(1);
    expect(d.count((l) => l.msg === 'pass starting' && l.pair === 'second' && l.trigger === 'start')).toBe(1);

    // A bad config is rejected with the reason; both pairs keep running.
    fs.writeFileSync(w.configFile, fs.readFileSync(w.configFile, 'utf8').replace(/binderId: .*\n/, 'binderId: ""\n'));
    d.kill('SIGHUP');
    const rejected = await d.waitForLog(msgHas('config reload rejected'), 10_000, 'rejection');
    expect(rejected.level).toBe(50);
    expect(rejected.msg).toContain('binderId');
    c.addVersion(doc.id, 'pair one, edited remotely');
    await eventually(fileIs(w, 'Docs/one.txt', 'pair one, edited remotely'), 10_000, 'old config still syncing', d.tail);
    expect(d.child.exitCode).toBeNull();

    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(fs.existsSync(path.join(w.stateDir, 'binder-sync.lock'))).toBe(false);
    expect(readDaemonStatus(w.stateDir)).toBeNull();
  }, 60_000);

  it('rejects on SIGHUP what `sync` refuses (metadata rules that do not fit, another binderId for a synced pair, a renamed pair), and the running pair goes on', async () => {
    ws = await oneDocumentPair();
    const w = ws;
    const c = w.emulator.control;
    c.addMetadataElement(w.binderId, { id: 'Dept', label: 'Department', dataType: 'List', allowedValues: [{ id: 'd-eng', label: 'Engineering' }] });
    const other = c.createBinder({ name: 'Other' }).id;
    const doc = c.listDocuments(w.binderId)[0]!;
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const d = daemon;
    await eventually(fileIs(w, 'Docs/one.txt', 'one'), 15_000, 'first sync', d.tail);
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['metadata rules that do not fit', { metadata: [{ match: '**', values: { Department: 'Marketing' } }] }, /"Marketing" is not an allowed value/],
      ['another binder for a synced pair', { binderId: other }, /its state was synced with binder/],
      // The running pair renamed: it would start over with no record (black-box round 30b, F2).
      ['a renamed pair', { name: 'work' }, /pair work: has no state yet, but the stateDir holds the state of pair main .* was the pair renamed\?/],
    ];
    let version = 1;
    for (const [what, change, says] of cases) {
      writeRunConfig(w, { pairs: [{ name: 'main', localPath: './local', binderId: w.binderId, ...change }] });
      const before = d.count(msgHas('config reload rejected'));
      d.kill('SIGHUP');
      await eventually(() => d.count(msgHas('config reload rejected')) > before, 10_000, `rejection of ${what}`, d.tail);
      const rejected = d.lines.filter((l) => typeof l.msg === 'string' && l.msg.includes('config reload rejected')).at(-1)!;
      expect(rejected.level, what).toBe(50);
      expect(rejected.msg, what).toMatch(says);
      // The pair was not stopped: a remote edit still arrives.
      c.addVersion(doc.id, `one, edit ${++version}`);
      await eventually(fileIs(w, 'Docs/one.txt', `one, edit ${version}`), 10_000, `still syncing after ${what}`, d.tail);
    }
    expect(d.count(msgIs('config reloaded'))).toBe(0);
    expect(d.count((l) => l.msg === 'pass starting' && l.trigger === 'start')).toBe(1);

    // status tells the running config from the file: the rejection, and a pair the file has but the daemon does
    // not run (it looked "never synced", with no error; black-box round 28b, F3).
    writeRunConfig(w, { pairs: [{ name: 'main', localPath: './local', binderId: w.binderId }, { name: 'extra', localPath: './local-extra', binderId: 'NoSuchBnd' }] });
    const before = d.count(msgHas('config reload rejected'));
    d.kill('SIGHUP');
    await eventually(() => d.count(msgHas('config reload rejected')) > before, 10_000, 'rejection of the extra pair', d.tail);
    let shown = '';
    for (const until = Date.now() + 15_000; Date.now() < until && !/^reload/m.test(shown); ) shown = (await runCli(w, ['status', '--config', w.configFile])).stdout;
    expect(shown).toMatch(/^reload +REJECTED (just now|.* ago): pair extra: .*NoSuchBnd.* \(the daemon runs the config it had before\)$/m);
    expect(shown).toMatch(/^ {2}state +NOT RUNNING in the daemon: its running config has no pair extra \(the reload was rejected, see above\)$/m);
    const json = JSON.parse((await runCli(w, ['status', '--config', w.configFile, '--json'])).stdout) as { daemon: { reloadRejected: unknown }; pairs: Array<{ name: string; inDaemon: boolean | null }> };
    expect(json.daemon.reloadRejected).toMatchObject({ reason: expect.stringContaining('NoSuchBnd') });
    expect(json.pairs.map((p) => [p.name, p.inDaemon])).toEqual([['main', true], ['extra', false]]);
  }, 60_000);

  it('on SIGHUP with other service credentials, restarts the pairs on a new client (read-only: download-only)', async () => {
    ws = await createWorkspace({ readOnly: true });
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: doc } = c.addDocument(w.binderId, folder.id, 'remote.txt', 'v1');
    writeRunConfig(w);
    daemon = startDaemonProcess(w);
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'downloaded' && l.relPath === 'Docs/remote.txt', 15_000, 'first sync');
    // The read/write client uploads.
    writeLocal(w, 'Docs/before.txt', 'uploaded with the read/write client');
    await eventually(() => c.listDocuments(w.binderId).some((x) => x.fileName === 'before.txt'), 15_000, 'upload before reload', d.tail);

    // Switch to the read-only client (its secret written into the config, which is 0600).
    const creds = w.emulator.credentials;
    writeRunConfig(w, { service: { clientId: creds.readOnlyClientId, clientSecret: creds.readOnlyClientSecret } });
    d.kill('SIGHUP');
    const reloaded = await d.waitForLog(msgIs('config reloaded'), 10_000, 'reload');
    expect(reloaded.serviceChanged).toBe(true);
    expect(reloaded.restarted).toEqual(['main']);
    // The new client is in use: a new local file meets the read-only probe, and remote changes still arrive.
    writeLocal(w, 'Docs/after.txt', 'stays local');
    await d.waitForLog(msgHas('read-only'), 15_000, 'the read-only warning from the new client');
    c.addVersion(doc.id, 'v2');
    await eventually(fileIs(w, 'Docs/remote.txt', 'v2'), 15_000, 'remote change after reload', d.tail);
    expect(c.listDocuments(w.binderId).map((x) => x.fileName).sort()).toEqual(['before.txt', 'remote.txt']);
    expect(d.count((l) => JSON.stringify(l).includes(creds.readOnlyClientSecret))).toBe(0);
    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
  }, 60_000);

  it('on SIGHUP that only changes a bandwidth cap, applies it to the transfer in flight: no pair restarts, no download starts over', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, folder.id, 'big.bin', Buffer.alloc(1024 * 1024, 7));
    writeRunConfig(w, { service: { maxDownloadRate: '32KiB/s' } }); // 32 s for the file
    daemon = startDaemonProcess(w);
    const d = daemon;
    await eventually(() => c.counters()['storage-get'] >= 1, 15_000, 'the download started', d.tail);
    await new Promise((r) => setTimeout(r, 500));
    writeRunConfig(w);
    d.kill('SIGHUP');
    const reloaded = await d.waitForLog(msgIs('config reloaded'), 10_000, 'reload');
    expect(reloaded.serviceChanged).toBe(false);
    expect(reloaded.restarted).toEqual([]);
    // The cap lifted, the same transfer finishes at once.
    await eventually(() => fs.existsSync(path.join(w.local, 'Docs', 'big.bin')), 8_000, 'the download finished', d.tail);
    expect(fs.statSync(path.join(w.local, 'Docs', 'big.bin')).size).toBe(1024 * 1024);
    expect(c.counters()['storage-get']).toBe(1);
  }, 60_000);

  it('refuses a second config (another stateDir) on the same local folder while the daemon runs (exit 5), and not after it stops', async () => {
    const w = (ws = await oneDocumentPair());
    const c = w.emulator.control;
    // The same root through a symlink, with its own stateDir: the stateDir's lock cannot see it.
    fs.symlinkSync(path.join(w.dir, 'local'), path.join(w.dir, 'via-link'));
    const otherConfig = path.join(w.dir, 'other.yaml');
    fs.writeFileSync(
      otherConfig,
      fs.readFileSync(w.configFile, 'utf8').replace(/stateDir: .*\n/, 'stateDir: ./state-other\n').replace(/localPath: .*\n/, 'localPath: ./via-link\n').replace(/name: main/, 'name: copy'),
      { mode: 0o600 },
    );
    daemon = startDaemonProcess(w);
    const d = daemon;
    await eventually(fileIs(w, 'Docs/one.txt', 'one'), 15_000, 'first sync', d.tail);
    writeLocal(w, 'Docs/new.txt', 'made while both run');
    const other = await runCli(w, ['sync', '--config', otherConfig], { timeoutMs: 15_000 });
    expect(other.code, other.stderr).toBe(5);
    expect(other.stderr).toContain(`is being synced by another binder-sync process (pid ${d.child.pid}, pair main, stateDir ${w.stateDir})`);
    expect(other.stderr).not.toMatch(/waits for the first/); // it does not: exit 5 at once (round 37b, F10)
    expect(fs.existsSync(path.join(w.dir, 'state-other', 'copy'))).toBe(false); // refused before any state was made
    await eventually(() => c.listDocuments(w.binderId).some((doc) => doc.fileName === 'new.txt'), 10_000, 'the daemon uploads the new file', d.tail);
    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    // The daemon is gone, and so is its hold: the other config may sync the folder now (adopting what is there).
    const after = await runCli(w, ['sync', '--config', otherConfig], { timeoutMs: 15_000 });
    expect(after.code, after.stderr).toBe(0);
    const newDoc = c.listDocuments(w.binderId).find((doc) => doc.fileName === 'new.txt')!;
    expect(c.listVersions(newDoc.id)).toHaveLength(1);
  }, 40_000);

  it('a stateDir deleted under the running daemon comes back with its whole record, lock and status (rm -rf)', async () => {
    const w = (ws = await oneDocumentPair());
    const c = w.emulator.control;
    daemon = startDaemonProcess(w);
    const d = daemon;
    await eventually(fileIs(w, 'Docs/one.txt', 'one'), 15_000, 'first sync', d.tail);
    // Moved away first, then removed: the daemon sees the stateDir vanish at one instant. A plain recursive removal
    // raced the daemon writing its status there (ENOTEMPTY after every retry on a loaded CI machine).
    const gone = `${w.stateDir}.gone`;
    fs.renameSync(w.stateDir, gone);
    fs.rmSync(gone, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 });
    writeLocal(w, 'Docs/two.txt', 'written after the stateDir was deleted');
    await d.waitForLog(msgHas('was deleted while binder-sync ran: written back'), 15_000, 'the state DB written back');
    await eventually(() => c.listDocuments(w.binderId).some((doc) => doc.fileName === 'two.txt'), 10_000, 'the new file uploaded', d.tail);
    await eventually(() => fs.existsSync(path.join(w.stateDir, 'binder-sync.lock')), 10_000, 'the lock file written again', d.tail);
    const st = await runCli(w, ['status', '--config', w.configFile]);
    expect(st.stdout).not.toContain('not running');
    expect(st.stdout).toMatch(/files in sync\s+2/);
    // A one-shot sync beside it is refused by the lock, as before the delete.
    expect((await runCli(w, ['sync', '--config', w.configFile], { timeoutMs: 15_000 })).code).toBe(5);
    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    // The next process finds the record: nothing to do, nothing sent.
    c.resetCounters();
    const after = await runCli(w, ['sync', '--config', w.configFile], { timeoutMs: 15_000 });
    expect(after.code, after.stderr).toBe(0);
    expect(c.counters()).toMatchObject({ commit: 0, 'storage-get': 0 });
  }, 40_000);

  it('keeps a pair whose binder does not exist in the error state while the other pair syncs', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, folder.id, 'ok.txt', 'fine');
    writeRunConfig(w, {
      pairs: [
        { name: 'broken', localPath: './broken', binderId: 'no-such-binder' },
        { name: 'main', localPath: './local', binderId: w.binderId },
      ],
    });
    // A stand-in systemd-notify on PATH records what the daemon tells systemd.
    const bin = path.join(w.dir, 'bin');
    const notes = path.join(w.dir, 'notify.log');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'systemd-notify'), `#!/bin/sh\necho "$NOTIFY_SOCKET $*" >> '${notes}'\n`, { mode: 0o755 });
    const notifySocket = path.join(w.dir, 'notify.sock');
    daemon = startDaemonProcess(w, { env: { NOTIFY_SOCKET: notifySocket, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` } });
    const d = daemon;
    const err = await d.waitForLog((l) => l.pair === 'broken' && l.level === 50, 15_000, 'the broken pair error');
    expect(err.msg).toContain('error state');
    await eventually(fileIs(w, 'Docs/ok.txt', 'fine'), 15_000, 'the good pair synced', d.tail);
    // Refused before anything was synced: no empty state DB is left for it (round 31b, F8); `status` has the
    // daemon's word for it from the status file.
    expect(fs.existsSync(path.join(w.stateDir, 'broken', 'state.db'))).toBe(false);
    const st = await runCli(w, ['status', '--json', '--config', w.configFile]);
    const broken = (JSON.parse(st.stdout) as { pairs: Array<{ name: string; state: string; lastError: string | null }> }).pairs.find((p) => p.name === 'broken');
    expect(broken).toMatchObject({ state: 'error', lastError: expect.stringContaining('no-such-binder not found') });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(d.count((l) => l.pair === 'broken' && l.level >= 40)).toBe(1);
    // A reload is how an admin says "fixed": the failing pair tries again at once, not when its back-off ends.
    const asked = c.counters().metadataelements;
    d.kill('SIGHUP');
    const reloaded = await d.waitForLog(msgIs('config reloaded'), 10_000, 'the reload');
    expect(reloaded.retriedNow).toEqual(['broken']);
    await eventually(() => c.counters().metadataelements > asked, 10_000, 'the broken pair tried again', d.tail);

    expect(fs.readFileSync(notes, 'utf8').split('\n')[0]).toMatch(new RegExp(`^${notifySocket} --ready`));
    d.kill('SIGTERM');
    expect((await d.exited).code).toBe(0);
    expect(fs.readFileSync(notes, 'utf8')).toContain(`${notifySocket} STOPPING=1`);
  }, 30_000);

  it('applies a new log level on SIGHUP', async () => {
    ws = await createWorkspace();
    const w = ws;
    w.emulator.control.createFolder(w.binderId, { name: 'Docs' });
    writeRunConfig(w, { log: { level: 'warn' } });
    // No environment override: the config's level rules.
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_LOG_LEVEL: '' } });
    const d = daemon;
    await eventually(() => metaOf(w, 'main', 'daemonState') === 'idle', 10_000, 'first pass done', d.tail);
    expect(d.lines.filter((l) => l.level < 40)).toEqual([]);
    writeRunConfig(w, { log: { level: 'debug' } });
    d.kill('SIGHUP');
    const changed = await d.waitForLog(msgIs('log level changed'), 10_000, 'level change');
    expect(changed).toMatchObject({ from: 'warn', to: 'debug' });
    // Per-pair child loggers follow: a quiet poll is now logged at debug.
    await d.waitForLog((l) => l.msg === 'quiet pass' && l.pair === 'main' && l.level === 20, 10_000, 'debug line from the pair');
    await d.waitForLog((l) => l.msg === 'config reloaded' && Array.isArray(l.unchanged) && l.unchanged.includes('main'), 1_000, 'pair kept');
  }, 30_000);
});
