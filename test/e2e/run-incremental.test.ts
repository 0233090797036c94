// `binder-sync run` after a local change looks only at what changed: the hinted folders are rescanned and the
// last remote listing is reused, so a saved file costs no listing requests and no walk of the whole tree.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, readLocalIfThere, runCli, sync, writeLocal, type Workspace } from './harness.js';
import { eventually, msgHas, startDaemonProcess, writeRunConfig, type DaemonProcess } from './run-helpers.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

describe('binder-sync run: incremental passes', () => {
  it('uploads a saved file without listing the binder or walking the folder tree again', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const other = c.createFolder(w.binderId, { name: 'Other' });
    for (let i = 0; i < 20; i++) c.addDocument(w.binderId, other.id, `o${i}.txt`, `other ${i}`);
    const { document: doc } = c.addDocument(w.binderId, docs.id, 'a.txt', 'v1');
    writeRunConfig(w);
    // A poll interval long enough that no poll happens during the local part of the test.
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '20000' } });
    const d = daemon;
    await d.waitForLog(msgHas('pass: '), 15_000, 'the first pass');
    c.resetCounters();

    writeLocal(w, 'Docs/a.txt', 'v2 from a local save');
    await eventually(() => c.listVersions(doc.id).length === 2, 8_000, 'local save uploaded', d.tail);
    const counters = c.counters();
    // The watch pass reused the listing: no search page, no folder walk.
    expect(counters.search, d.tail()).toBe(0);
    expect(counters.folders + counters.subfolders).toBe(0);
    expect(counters.commit).toBe(1);
    expect(c.readContent(doc.id).toString()).toBe('v2 from a local save');
  });

  it('a file saved in a folder created on the service since the last walk is uploaded at once, not at the next poll (black-box round 26, P2)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, docs.id, 'a.txt', 'a');
    writeRunConfig(w);
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '30000' } });
    const d = daemon;
    await d.waitForLog(msgHas('pass: '), 15_000, 'the first pass');
    const fresh = c.createFolder(w.binderId, { name: 'NewRemote', parentId: docs.id });
    writeLocal(w, 'Docs/NewRemote/n.txt', 'into a folder the daemon has not walked yet');
    // Within seconds (the quiet period, then a walk), where the next poll is 30 s away.
    await eventually(() => c.listDocuments(w.binderId).some((x) => x.fileName === 'n.txt' && x.folderId === fresh.id), 10_000, 'the file uploaded into the new folder', d.tail);
    const said = d.lines.filter((r) => typeof r.msg === "string" && r.msg.includes("Docs/NewRemote/n.txt: waiting-for-remote-folder"));
    for (const r of said) expect(r.msg).toMatch(/\(by the folder tree as walked at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: walked again at once, then every minute or so while files wait\)/);
  });

  it('finds a change no watcher reports by a whole scan every fullRescanInterval, though it polls more often (black-box round 28a, T1)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: doc } = c.addDocument(w.binderId, docs.id, 'shared.txt', 'v1');
    writeRunConfig(w);
    expect((await sync(w)).code).toBe(0);
    // A write through a hard link outside the root: inotify tells the watchers of the folder it was written
    // through, not Docs/ (the same as an mmap write or a network share written from another host). The link is
    // made before the daemon starts: making it changes the file's link count, which the watcher would see.
    const outside = path.join(path.dirname(w.local), 'outside-link.txt');
    fs.linkSync(path.join(w.local, 'Docs', 'shared.txt'), outside);
    // Polls every 1 s scan only hinted folders; the whole tree is due every 5 s.
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '1000', BINDER_SYNC_RESCAN_INTERVAL_MS: '5000', BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const d = daemon;
    await d.waitForLog((l) => l.msg === 'binder-sync daemon started', 15_000, 'the daemon');
    // A poll that hashed nothing: the file the first pass found with a new ctime (the link) is not re-checked by the
    // polls any more, so only the whole scan can find the write below (on a loaded machine a poll still did once).
    await eventually(() => d.lines.some((l) => l.trigger === 'poll' && l.msg === 'quiet pass' && l.hashed === 0), 10_000, 'a poll that hashed nothing', d.tail);
    fs.writeFileSync(outside, 'v2, written where no watcher sees it');
    const tenSecondsAgo = new Date(Date.now() - 10_000);
    fs.utimesSync(outside, tenSecondsAgo, tenSecondsAgo);
    await eventually(() => c.listVersions(doc.id).length === 2, 12_000, 'the unreported edit uploaded by the rescan', d.tail);
    expect(c.readContent(doc.id).toString()).toBe('v2, written where no watcher sees it');
    // The pass's summary follows its commit: waited for, not looked up.
    const uploadedBy = await d.waitForLog((l) => String(l.msg).startsWith('pass: ') && (l.done as Record<string, number> | undefined)?.upload === 1, 15_000, 'the summary of the pass that uploaded');
    expect(uploadedBy?.trigger, d.tail()).toBe('rescan');
  });

  it('an edit through one hard link reaches the file\'s other synced name in another folder at once (black-box round 29b, finding 4)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    c.createFolder(w.binderId, { name: 'Other' });
    const { document: doc } = c.addDocument(w.binderId, docs.id, 'a.txt', 'v1');
    writeRunConfig(w);
    expect((await sync(w)).code).toBe(0);
    fs.linkSync(path.join(w.local, 'Docs', 'a.txt'), path.join(w.local, 'Other', 'b.txt')); // cp -al, rsync --link-dest
    expect((await sync(w)).code).toBe(0); // Other/b.txt is a document of its own now
    const b = c.listDocuments(w.binderId).find((x) => x.fileName === 'b.txt')!;
    // No whole rescan within the test (1 h): only the hard link can bring Docs/ into a pass.
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '1000', BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const d = daemon;
    await eventually(() => d.lines.some((l) => l.trigger === 'poll'), 15_000, 'a first poll', d.tail);
    // A pass that does work keeps its local observation: the passes after it scan only the folders hinted.
    writeLocal(w, 'Other/new.txt', 'new');
    await eventually(() => c.listDocuments(w.binderId).some((x) => x.fileName === 'new.txt'), 10_000, 'a pass with work', d.tail);
    fs.appendFileSync(path.join(w.local, 'Other', 'b.txt'), ' and more, written through Other/b.txt');
    await eventually(() => c.listVersions(b.id).length === 2, 10_000, 'the edit uploaded at the name written to', d.tail);
    await eventually(() => c.listVersions(doc.id).length === 2, 10_000, 'the same edit uploaded at the other name', d.tail);
    expect(c.readContent(doc.id).toString()).toBe('v1 and more, written through Other/b.txt');
  });

  it('a local change seen while a long download runs waits for that pass, and status says so (black-box round 28b, F1)', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const notes = c.createFolder(w.binderId, { name: 'Notes' });
    c.addDocument(w.binderId, docs.id, 'a.txt', 'a');
    c.addDocument(w.binderId, notes.id, 'n.txt', 'n');
    writeRunConfig(w);
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '1000' } });
    const d = daemon;
    await d.waitForLog(msgHas('pass: '), 15_000, 'the first pass');
    c.resetCounters();
    // One of four new documents comes 5 s late; the other three land meanwhile. Their writes are the pass's own:
    // the watcher reports them, but they are no local change waiting.
    c.injectFault({ route: 'storage-get', latencyMs: 5_000, times: 1 });
    for (const n of ['f1.txt', 'f2.txt', 'f3.txt', 'slow.bin']) c.addDocument(w.binderId, docs.id, n, `${n} content`);
    await eventually(() => c.counters()['storage-get'] >= 4 && ['f1.txt', 'f2.txt', 'f3.txt', 'slow.bin'].filter((n) => readLocalIfThere(w, `Docs/${n}`) !== null).length === 3, 8_000, 'three downloads done, one late', d.tail);
    await new Promise((r) => setTimeout(r, 700)); // the watcher's settle time, and more
    const ownOnly = (await runCli(w, ['status', '--config', w.configFile])).stdout;
    expect(ownOnly).toMatch(/^ {2}state +syncing/m);
    expect(ownOnly).not.toMatch(/^ {2}waiting/m);
    writeLocal(w, 'Notes/saved-meanwhile.txt', 'saved while the download runs');
    let shown = '';
    for (const until = Date.now() + 4_000; Date.now() < until; ) {
      shown = (await runCli(w, ['status', '--config', w.configFile])).stdout;
      if (/^ {2}waiting/m.test(shown)) break;
    }
    expect(shown, d.tail()).toMatch(/^ {2}waiting +local changes seen .*: the next pass takes them up when this one ends/m);
    expect(shown).toMatch(/^ {2}state +syncing/m);
    await eventually(() => c.listDocuments(w.binderId).some((x) => x.fileName === 'saved-meanwhile.txt'), 15_000, 'the upload after the pass', d.tail);
    const after = (await runCli(w, ['status', '--config', w.configFile])).stdout;
    expect(after).not.toMatch(/^ {2}waiting/m);
  });

  it('spaces polls out when a quiet poll costs more than pollCpuBudget, and says so once', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    c.addDocument(w.binderId, docs.id, 'a.txt', 'v1');
    // A budget so small that any poll exceeds it: the spacing goes to its cap, 5 x pollInterval.
    writeRunConfig(w, { pairs: [{ name: 'main', localPath: './local', binderId: w.binderId, pollInterval: '5s', pollCpuBudget: 0.000001 }] });
    // No poll-interval override: the budget applies only to the configured interval. The floor below which a
    // poll never spaces polls out (0.2 s of CPU) is lowered: this binder's poll costs a few ms.
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '', BINDER_SYNC_POLL_CPU_FLOOR_MS: '1' } });
    const d = daemon;
    // Two quiet polls must show the cost (5 s apart, ±10%).
    const note = await d.waitForLog(msgHas('polling every'), 25_000, 'the poll spacing note');
    expect(note.msg).toMatch(/^polling every 25 s instead of 5 s: one listing of this binder costs/);
    expect(note).toMatchObject({ pollIntervalMs: 25_000, configuredMs: 5_000 });
    c.resetCounters();
    await new Promise((r) => setTimeout(r, 7_000)); // more than 5 s + 10% jitter: an unspaced poll would list
    expect(c.counters().search, d.tail()).toBe(0);
    expect(d.count(msgHas('polling every'))).toBe(1);
  }, 40_000);

  it('sync checks its work again for the in-sync mark only after work worth a tenth of the tree', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const ids = Array.from({ length: 20 }, (_, i) => c.addDocument(w.binderId, docs.id, `f${i}.txt`, `v1 ${i}`).document.id);
    writeRunConfig(w);
    const debugSync = async () => {
      const r = await sync(w, ['--json'], { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
      expect(r.code, r.stderr).toBe(0);
      return r.stderr;
    };
    expect(await debugSync()).toContain('left the in-sync mark for the next run'); // 20 downloads of 20
    c.addVersion(ids[0]!, 'v2 0');
    const small = await debugSync(); // 1 download of 20: the next run's own pass leaves the mark
    expect(small).toContain('"downloaded"');
    expect(small).not.toContain('in-sync mark');
    for (const id of ids.slice(1, 3)) c.addVersion(id, 'v2');
    expect(await debugSync()).toContain('left the in-sync mark for the next run'); // 2 of 20
    expect(await debugSync()).toContain('both sides are as the in-sync mark says');
    // A pass that did work but did not converge (a file it cannot sync) checks nothing for the mark.
    for (const id of ids.slice(3, 8)) c.addVersion(id, 'v3');
    writeLocal(w, 'top.txt', 'files in the root are not uploaded');
    const left = await sync(w, ['--json'], { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
    expect(left.code, left.stderr).toBe(1);
    expect(left.stderr).toContain('"downloaded"');
    expect(left.stderr).not.toContain('in-sync mark');
  }, 40_000);

  it('a restart over a tree in sync downloads and uploads nothing, then still syncs both ways', async () => {
    ws = await createWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const { document: remoteDoc } = c.addDocument(w.binderId, docs.id, 'remote.txt', 'v1 remote');
    const { document: localDoc } = c.addDocument(w.binderId, docs.id, 'local.txt', 'v1 local');
    writeRunConfig(w);
    // Downloads, then checks its work again against the same listing and leaves the in-sync mark with its digests:
    // the daemon started next takes the fast check, not the normal pass.
    expect((await sync(w)).code).toBe(0);
    c.resetCounters();
    daemon = startDaemonProcess(w, { env: { BINDER_SYNC_LOG_LEVEL: 'debug' } });
    const d = daemon;
    await d.waitForLog(msgHas('both sides are as the in-sync mark says'), 15_000, 'the fast first pass');
    const first = c.counters();
    expect(first['storage-get'] + first['storage-put'] + first.commit + first.downloadlink, d.tail()).toBe(0);
    // Digest-only polls, then a remote version arrives and a local save goes up.
    await eventually(() => d.count(msgHas('both sides are as the in-sync mark says')) >= 2, 10_000, 'a digest-only poll', d.tail);
    c.addVersion(remoteDoc.id, 'v2 remote');
    await eventually(() => readLocalIfThere(w, 'Docs/remote.txt') === 'v2 remote', 10_000, 'remote version downloaded', d.tail);
    writeLocal(w, 'Docs/local.txt', 'v2 from a local save');
    await eventually(() => c.listVersions(localDoc.id).length === 2, 10_000, 'local save uploaded', d.tail);
    expect(c.readContent(localDoc.id).toString()).toBe('v2 from a local save');
  }, 40_000);
});
