// Incremental passes against the emulator (real HTTP, real SQLite, real files): a quiet poll costs the listing
// and nothing else, a remote change is still found, a hinted local change is found by a partial scan, and a full
// pass finds what no hint announced.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { startEmulator, type Emulator } from '../../src/emulator/index.js';
import { LAZY_HASH_FROM_BYTES } from '../../src/local/scanner.js';
import { markedTreeFiles } from '../../src/sync/in-sync-mark.js';
import { ServiceClient } from '../../src/service/index.js';
import { folderTreeMaxAgeMs, runPass, settleInSyncMark, waitingTreeMaxAgeMs } from '../../src/sync/pass.js';
import { openPair } from '../../src/sync/open-pair.js';
import type { PairRuntime } from '../../src/sync/pair-runtime.js';
import { reconcile } from '../../src/sync/reconcile.js';

// reconcile itself, counted: the in-sync mark's tests check when a pass skips it.
vi.mock('../../src/sync/reconcile.js', async (importOriginal) => {
  const mod = await importOriginal<typeof import('../../src/sync/reconcile.js')>();
  return { ...mod, reconcile: vi.fn(mod.reconcile) };
});

let dir: string;
let emu: Emulator;
let client: ServiceClient;
let rt: PairRuntime;
let binderId: string;
let folderId: string;
let loadBaseCalls = 0;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pass-incremental-'));
  emu = await startEmulator({ quiet: true });
  binderId = emu.control.createBinder({ name: 'B' }).id;
  folderId = emu.control.createFolder(binderId, { name: 'Docs' }).id;
  for (let i = 0; i < 5; i++) emu.control.addDocument(binderId, folderId, `d${i}.txt`, `doc ${i}`);
  const { config } = pairConfig();
  client = new ServiceClient({ ...config.service, requestTimeoutMs: 10_000 });
  rt = await openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }));
  const load = rt.store.loadBase.bind(rt.store);
  rt.store.loadBase = () => {
    loadBaseCalls++;
    return load();
  };
});

afterEach(async () => {
  rt.store.close();
  await client.close();
  await emu.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const local = (rel: string) => path.join(dir, 'local', rel);

function pairConfig(pairExtra = ''): ReturnType<typeof parseConfigText> {
  const c = emu.credentials;
  const yaml = `service: { baseUrl: ${emu.baseUrl}, authUrl: ${emu.authUrl}, tenantId: ${c.tenantId}, clientId: ${c.clientId}, clientSecret: ${c.clientSecret} }
stateDir: ./state
pairs: [{ name: p, localPath: ./local, binderId: ${binderId}${pairExtra} }]`;
  return parseConfigText(yaml, { baseDir: dir, env: {} });
}

/** A new process on the same state DB: the runtime is opened again, with nothing cached in memory. */
async function restart(pairExtra = ''): Promise<PairRuntime> {
  rt.store.close();
  const { config } = pairConfig(pairExtra);
  rt = await openPair(config.pairs[0]!, config.stateDir, client, pino({ level: 'silent' }));
  return rt;
}

/** Calls of reconcile during one pass (the in-sync mark's tests check when a pass skips it). */
async function reconciles(pass: () => Promise<unknown>): Promise<number> {
  vi.mocked(reconcile).mockClear();
  await pass();
  return vi.mocked(reconcile).mock.calls.length;
}

/** Folder-tree requests of one pass. */
async function walksOf(pass: () => Promise<unknown>): Promise<number> {
  emu.control.resetCounters();
  await pass();
  const c = emu.control.counters();
  return c.folders + c.subfolders;
}

describe('incremental passes', () => {
  it('a quiet poll only lists; remote and hinted local changes are still found', async () => {
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    // The pass after one that did work plans from scratch (nothing to do), then polls are quiet.
    expect((await runPass(rt, { localDirs: [] })).plan.groups).toEqual([]);
    loadBaseCalls = 0;
    emu.control.resetCounters();
    const quiet = await runPass(rt, { localDirs: [] });
    expect(quiet.plan.groups).toEqual([]);
    expect(quiet.converged).toBe(true);
    expect(loadBaseCalls).toBe(0);
    const counters = emu.control.counters();
    expect(counters.search).toBeGreaterThan(0);
    expect(counters.document + counters.versions + counters.commit + counters['storage-get']).toBe(0);

    // A remote change makes the listing differ from the last one: planned and downloaded.
    const [doc] = emu.control.listDocuments(binderId);
    emu.control.addVersion(doc!.id, 'remote edit');
    const pulled = await runPass(rt, { localDirs: [] });
    expect(pulled.execution?.done.download).toBe(1);
    expect(fs.readFileSync(local(`Docs/${doc!.fileName}`), 'utf8')).toBe('remote edit');

    // A local change in a hinted folder is found by rescanning just that folder.
    await runPass(rt, { localDirs: [] });
    fs.writeFileSync(local('Docs/new.txt'), 'new local file');
    const pushed = await runPass(rt, { localDirs: ['Docs'] });
    expect(pushed.execution?.done.upload).toBe(1);
    expect(emu.control.listDocuments(binderId).map((d) => d.fileName)).toContain('new.txt');
  });

  it('a file waiting for its remote folder is hashed once, not on every pass, and again when it changes', async () => {
    await runPass(rt);
    fs.mkdirSync(local('Waiting'), { recursive: true });
    fs.writeFileSync(local('Waiting/big.bin'), 'x'.repeat(1000));
    const first = await runPass(rt);
    expect(first.issues.map((i) => i.code)).toContain('waiting-for-remote-folder');
    expect(first.hashed).toBe(1);
    expect((await runPass(rt)).hashed).toBe(0);
    expect((await runPass(rt, { localDirs: ['Waiting'] })).hashed).toBe(0);
    fs.writeFileSync(local('Waiting/big.bin'), 'y'.repeat(1001));
    expect((await runPass(rt)).hashed).toBe(1);
  });

  it('a change no hint announced waits for the next full pass, which finds it', async () => {
    await runPass(rt);
    await runPass(rt, { localDirs: [] });
    fs.writeFileSync(local('Docs/d0.txt'), 'edited while the watcher was not looking');
    expect((await runPass(rt, { localDirs: [] })).plan.groups).toEqual([]);
    const full = await runPass(rt);
    expect(full.execution?.done.upload).toBe(1);
  });

  it('a quiet poll reuses the folder tree; a document change or a file waiting for a folder walks it again', async () => {
    for (let i = 0; i < 30; i++) emu.control.createFolder(binderId, { name: `Empty ${i}` }); // reused for 31 s
    await runPass(rt);
    await runPass(rt, { localDirs: [] });
    emu.control.resetCounters();
    await runPass(rt, { localDirs: [] });
    let counters = emu.control.counters();
    expect(counters.search).toBeGreaterThan(0);
    expect(counters.folders + counters.subfolders).toBe(0);

    const [doc] = emu.control.listDocuments(binderId);
    emu.control.renameDocument(doc!.id, 'renamed.txt');
    emu.control.resetCounters();
    await runPass(rt, { localDirs: [] });
    counters = emu.control.counters();
    expect(counters.folders).toBe(1);
    expect(fs.existsSync(local('Docs/renamed.txt'))).toBe(true);

    // A local file waits for a remote folder: polls walk the tree until it appears, then upload.
    fs.mkdirSync(local('Later'));
    fs.writeFileSync(local('Later/x.txt'), 'waiting');
    const waiting = await runPass(rt, { localDirs: ['Later'] });
    expect(waiting.issues.map((i) => i.code)).toContain('waiting-for-remote-folder');
    emu.control.createFolder(binderId, { name: 'Later' });
    const uploaded = await runPass(rt, { localDirs: [] });
    expect(uploaded.execution?.done.upload).toBe(1);
  });

  it('while files wait, a large tree is walked less often: at most one request every 250 ms on average (black-box round 36a, F6)', () => {
    expect(waitingTreeMaxAgeMs(91)).toBe(60_000);
    expect(waitingTreeMaxAgeMs(1_100)).toBe(275_000);
  });

  it('a file left waiting for a remote folder has the tree walked at once, then once a minute, not on every poll (black-box round 35a, F2)', async () => {
    for (let i = 0; i < 90; i++) emu.control.createFolder(binderId, { name: `Empty ${i}` }); // 91 folders: reused for 91 s otherwise
    await runPass(rt);
    fs.mkdirSync(local('Mine'));
    fs.writeFileSync(local('Mine/x.txt'), 'a folder the service will not have');
    const walks = () => emu.control.counters().folders;
    emu.control.resetCounters();
    const waiting = await runPass(rt, { localDirs: ['Mine'] });
    expect(waiting.issues.map((i) => i.code)).toContain('waiting-for-remote-folder');
    await runPass(rt, { localDirs: [] }); // asked for by the newly waiting file: walks
    expect(walks()).toBe(1);
    for (let i = 0; i < 5; i++) await runPass(rt, { localDirs: [] });
    expect(walks()).toBe(1);
    rt.cache.foldersAt -= 61_000; // a minute later
    await runPass(rt, { localDirs: [] });
    expect(walks()).toBe(2);
    const still = await runPass(rt, { localDirs: [] });
    expect(walks()).toBe(2);
    expect(still.issues.find((i) => i.code === 'waiting-for-remote-folder')?.relPath).toBe('Mine/x.txt');
  });

  it('looks for stale temp files on the first pass and on full scans, not on every poll', async () => {
    fs.mkdirSync(local('Docs'), { recursive: true });
    fs.writeFileSync(local('Docs/.binder-sync-tmp-0000000000000001'), 'left by a killed run');
    await runPass(rt);
    expect(fs.existsSync(local('Docs/.binder-sync-tmp-0000000000000001'))).toBe(false);
    await runPass(rt, { localDirs: [] });
    // Appearing later (a killed helper process, say): an incremental poll does not walk the tree for it ...
    fs.writeFileSync(local('Docs/.binder-sync-tmp-0000000000000002'), 'partial');
    await runPass(rt, { localDirs: [] });
    expect(fs.existsSync(local('Docs/.binder-sync-tmp-0000000000000002'))).toBe(true);
    // ... the next full scan (the daemon's periodic rescan) removes it.
    await runPass(rt);
    expect(fs.existsSync(local('Docs/.binder-sync-tmp-0000000000000002'))).toBe(false);
  });

  it('parkWhenQuiet: a full pass that finds nothing to do parks at once; one that did work, or a partial one, does not', async () => {
    await runPass(rt, { parkWhenQuiet: true }); // downloads: keeps its observations
    expect(rt.cache.local).not.toBeNull();
    expect(rt.cache.localParked).toBe(false);
    await runPass(rt, { localDirs: [], parkWhenQuiet: true }); // nothing to do, but a partial pass
    expect(rt.cache.localParked).toBe(false);
    expect(rt.cache.local?.files.size).toBe(5);
    await runPass(rt); // a full pass with nothing to do, without the option
    expect(rt.cache.local?.files.size).toBe(5);
    expect(rt.cache.remote).not.toBeNull();
    await runPass(rt, { parkWhenQuiet: true });
    expect(rt.cache.local).toBeNull();
    expect(rt.cache.remote).toBeNull();
    expect(rt.cache.localParked).toBe(true);
    // The next poll is quiet without a scan; a hinted local change is still found by a whole scan.
    loadBaseCalls = 0;
    expect((await runPass(rt, { localDirs: [] })).plan.groups).toEqual([]);
    expect(loadBaseCalls).toBe(0);
    fs.writeFileSync(local('Docs/d4.txt'), 'edited after the park');
    fs.writeFileSync(local('Docs/d0.txt'), 'edited, no hint');
    const pushed = await runPass(rt, { localDirs: ['Docs'] });
    expect(pushed.execution?.done.upload).toBe(2);
  });

  it('a quiet poll parks the local observation; the next pass that needs one scans the whole tree', async () => {
    await runPass(rt);
    await runPass(rt, { localDirs: [] });
    await runPass(rt, { localDirs: [] }); // quiet: parks
    expect(rt.cache.local).toBeNull();
    expect(rt.cache.localParked).toBe(true);
    // Parked and still quiet: no scan, no base load, nothing planned.
    loadBaseCalls = 0;
    fs.writeFileSync(local('Docs/d1.txt'), 'edited, no hint (1)');
    expect((await runPass(rt, { localDirs: [] })).plan.groups).toEqual([]);
    expect(loadBaseCalls).toBe(0);
    expect(rt.cache.localParked).toBe(true);
    // The remote changes: the whole tree is scanned, so the unhinted local edit is found with it.
    const [doc] = emu.control.listDocuments(binderId).filter((d) => d.fileName === 'd3.txt');
    emu.control.addVersion(doc!.id, 'remote edit');
    const both = await runPass(rt, { localDirs: [] });
    expect(both.execution?.done.download).toBe(1);
    expect(both.execution?.done.upload).toBe(1);
    expect(fs.readFileSync(local('Docs/d3.txt'), 'utf8')).toBe('remote edit');
    expect(rt.cache.localParked).toBe(false);
    expect(rt.cache.local?.files.size).toBe(5);
    // Parked again, then a hinted pass: a whole scan too (an edit outside the hinted folder is found).
    await runPass(rt, { localDirs: [] });
    await runPass(rt, { localDirs: [] });
    expect(rt.cache.localParked).toBe(true);
    fs.mkdirSync(local('Other'));
    fs.writeFileSync(local('Docs/d2.txt'), 'edited, no hint (2)');
    const hinted = await runPass(rt, { localDirs: ['Other'], reuseRemoteWithinMs: 60_000 });
    expect(hinted.execution?.done.upload).toBe(1);
    expect(hinted.plan.groups.flat().map((a) => a.kind === 'upload' && a.relPath)).toContain('Docs/d2.txt');
  });

  it('after a quiet poll drops the mapped listing, a hinted pass rebuilds it from the raw listing without listing again', async () => {
    await runPass(rt);
    await runPass(rt, { localDirs: [] });
    await runPass(rt, { localDirs: [] }); // quiet
    expect(rt.cache.remote).toBeNull();
    expect(rt.cache.raw?.docs.size).toBe(5);
    fs.writeFileSync(local('Docs/after-quiet.txt'), 'local');
    emu.control.resetCounters();
    const pushed = await runPass(rt, { localDirs: ['Docs'], reuseRemoteWithinMs: 60_000 });
    expect(pushed.execution?.done.upload).toBe(1);
    expect(pushed.plan.groups.flat().map((a) => a.kind)).toEqual(['upload']); // the 5 synced files stay put
    expect(emu.control.counters().search).toBe(0);
  });
});

describe('folder tree reuse scales with its size', () => {
  it('one second per folder, at most ten minutes', () => {
    expect(folderTreeMaxAgeMs(1)).toBe(1_000);
    expect(folderTreeMaxAgeMs(60)).toBe(60_000);
    expect(folderTreeMaxAgeMs(1_109)).toBe(600_000);
  });

  it('a small tree is walked again by a quiet poll once it is older than its size allows', async () => {
    await runPass(rt);
    await runPass(rt, { localDirs: [] });
    expect(await walksOf(() => runPass(rt, { localDirs: [] }))).toBe(0); // quiet, tree just walked
    rt.cache.foldersAt = Date.now() - 1_500; // one folder: reused for 1 s
    emu.control.renameFolder(folderId, 'Docs renamed'); // a change of folders alone
    expect(await walksOf(() => runPass(rt, { localDirs: [] }))).toBe(2);
    expect(fs.readFileSync(local('Docs renamed/d0.txt'), 'utf8')).toBe('doc 0');
  });
});

describe('the daemon restarting (reuseSavedFolderTree)', () => {
  /** Requests of a walk: top level, then each of Docs, Docs/Sub and 30 empty folders. */
  const WALK = 33;
  beforeEach(async () => {
    emu.control.createFolder(binderId, { name: 'Sub', parentId: folderId });
    for (let i = 0; i < 30; i++) emu.control.createFolder(binderId, { name: `Empty ${i}` }); // reused for 32 s
    expect((await runPass(rt)).execution?.done.download).toBe(5);
  });

  it('a restart soon after the last walk lists the documents only, and plans nothing', async () => {
    await restart();
    emu.control.resetCounters();
    const first = await runPass(rt, { reuseSavedFolderTree: true });
    const c = emu.control.counters();
    expect(c.search).toBeGreaterThan(0);
    expect(c.folders + c.subfolders).toBe(0);
    expect(first.plan.groups).toEqual([]);
    expect(first.converged).toBe(true);
    // The saved tree is still the whole tree: mapping it again keeps every folder.
    expect(rt.store.loadFolders().map((f) => f.relPath)).toEqual(expect.arrayContaining(['Docs', 'Docs/Sub', 'Empty 29']));
    expect(rt.store.loadFolders()).toHaveLength(32);
  });

  it('a one-shot sync (no option) always walks the tree', async () => {
    await restart();
    expect(await walksOf(() => runPass(rt))).toBe(WALK);
  });

  it("a one-shot sync ('when-costly') walks a tree of no more folders than requests per second", async () => {
    await restart();
    expect(client.requestsPerSecond).toBe(100); // the default; the tree has 32 folders
    const sub = emu.control.listFolders(binderId).find((f) => f.name === 'Sub')!;
    emu.control.renameFolder(sub.id, 'Renamed');
    expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: 'when-costly' }))).toBe(WALK);
    expect(fs.existsSync(local('Docs/Renamed'))).toBe(true);
  });

  it("a one-shot sync ('when-costly') lets a fresh saved tree of more folders than requests per second stand in", async () => {
    const slow = new ServiceClient({ ...pairConfig().config.service, requestsPerSecond: 30, requestTimeoutMs: 10_000 });
    try {
      await restart();
      rt.client = slow;
      emu.control.resetCounters();
      const report = await runPass(rt, { reuseSavedFolderTree: 'when-costly' });
      expect(emu.control.counters().search).toBeGreaterThan(0);
      expect(emu.control.counters().folders + emu.control.counters().subfolders).toBe(0);
      expect(report.converged).toBe(true);
      // A document that changed still walks the tree; so does a saved tree past folderTreeMaxAgeMs.
      emu.control.addVersion(emu.control.listDocuments(binderId)[0]!.id, 'changed');
      await restart();
      rt.client = slow;
      expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: 'when-costly' }))).toBe(WALK);
      rt.store.setMeta('folderTreeWalkedAt', new Date(Date.now() - folderTreeMaxAgeMs(32) - 1_000).toISOString());
      await restart();
      rt.client = slow;
      expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: 'when-costly' }))).toBe(WALK);
    } finally {
      await slow.close();
    }
  });

  it('a document that changed while stopped walks the tree, and a folder renamed meanwhile arrives with it', async () => {
    await restart();
    const sub = emu.control.listFolders(binderId).find((f) => f.name === 'Sub')!;
    emu.control.renameFolder(sub.id, 'Renamed');
    emu.control.addDocument(binderId, sub.id, 'new.txt', 'new while stopped');
    expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: true }))).toBe(WALK);
    expect(fs.readFileSync(local('Docs/Renamed/new.txt'), 'utf8')).toBe('new while stopped');
  });

  it('a tree walked too long ago, or a file waiting for a folder, walks again', async () => {
    rt.store.setMeta('folderTreeWalkedAt', new Date(Date.now() - 11 * 60_000).toISOString());
    await restart();
    expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: true }))).toBe(WALK);

    fs.mkdirSync(local('Later'));
    fs.writeFileSync(local('Later/x.txt'), 'waiting');
    expect((await runPass(rt)).issues.map((i) => i.code)).toContain('waiting-for-remote-folder');
    await restart();
    expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: true }))).toBe(WALK);
  });

  it('a walk with a folder that could not be mapped is not saved as the tree', async () => {
    await restart(', ignore: ["Docs/Sub"]');
    const pass = await runPass(rt);
    expect(pass.plan.groups).toEqual([]);
    expect(rt.store.getMeta('folderTreeWalkedAt')).toBeUndefined();
    await restart(', ignore: ["Docs/Sub"]');
    expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: true }))).toBe(WALK);
  });

  it('a quiet poll that walks the tree again keeps the saved time current', async () => {
    await runPass(rt, { localDirs: [] });
    await runPass(rt, { localDirs: [] }); // quiet
    rt.cache.foldersAt = 0; // the in-memory tree has aged out: the next quiet poll walks it
    const before = Date.now();
    expect(await walksOf(() => runPass(rt, { localDirs: [] }))).toBe(WALK);
    expect(Date.parse(rt.store.getMeta('folderTreeWalkedAt') ?? '')).toBeGreaterThanOrEqual(before);
    await restart();
    expect(await walksOf(() => runPass(rt, { reuseSavedFolderTree: true }))).toBe(0);
  });
});

describe('the in-sync mark (a new process over a tree exactly as the base says)', () => {
  const MARK = 'inSyncMark';
  beforeEach(async () => {
    emu.control.createFolder(binderId, { name: 'Empty' });
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    // A pass that changed the base leaves no mark; the next one, finding nothing to do, does.
    expect(rt.store.getMeta(MARK)).toBeUndefined();
    expect((await runPass(rt)).plan.groups).toEqual([]);
    expect(rt.store.getMeta(MARK)).toBeDefined();
  });

  it('a restart (daemon or one-shot sync) over an unchanged tree does not reconcile, and reports in sync', async () => {
    await restart();
    let report!: Awaited<ReturnType<typeof runPass>>;
    expect(await reconciles(async () => (report = await runPass(rt, { reuseSavedFolderTree: true })))).toBe(0);
    expect(report.converged).toBe(true);
    expect(report.plan.groups).toEqual([]);
    await restart();
    expect(await walksOf(async () => expect(await reconciles(async () => (report = await runPass(rt)))).toBe(0))).toBe(3);
    expect(report.converged).toBe(true);
    expect(rt.store.getMeta('lastScanAt')).toBeDefined();
    // Within one process the quiet-poll rule takes over; a full pass still scans and lists.
    expect((await runPass(rt)).converged).toBe(true);
  });

  it('anything that differs from the mark reconciles: a local edit, a new local folder, a remote version, another config', async () => {
    fs.writeFileSync(local('Docs/d0.txt'), 'edited while stopped');
    await restart();
    let report!: Awaited<ReturnType<typeof runPass>>;
    expect(await reconciles(async () => (report = await runPass(rt)))).toBe(1);
    expect(report.execution?.done.upload).toBe(1);

    await runPass(rt); // quiet again: a new mark
    expect(rt.store.getMeta(MARK)).toBeDefined();
    fs.mkdirSync(local('Docs/New folder'));
    await restart();
    expect(await reconciles(() => runPass(rt))).toBe(1);

    fs.rmdirSync(local('Docs/New folder'));
    await runPass(rt);
    const [doc] = emu.control.listDocuments(binderId);
    emu.control.addVersion(doc!.id, 'remote edit while stopped');
    await restart();
    expect(await reconciles(async () => (report = await runPass(rt)))).toBe(1);
    expect(report.execution?.done.download).toBe(1);

    await runPass(rt);
    await restart(', conflictPolicy: remote-wins');
    expect(await reconciles(() => runPass(rt))).toBe(1);
    await restart(', conflictPolicy: remote-wins');
    expect(await reconciles(() => runPass(rt))).toBe(0); // the mark of the new config
  });

  it('the mark is gone before a plan runs (a crash mid-plan cannot leave it behind)', async () => {
    fs.writeFileSync(local('Docs/d1.txt'), 'edited');
    fs.writeFileSync(local('Docs/new.txt'), 'new');
    const seen: Array<string | undefined> = [];
    const report = await runPass(rt, { onActionDone: () => seen.push(rt.store.getMeta(MARK)) });
    expect(report.execution?.done.upload).toBe(2);
    expect(seen).toEqual([undefined, undefined]);
  });
});

describe("the in-sync mark's digests (a new process checks both sides without the base)", () => {
  /** Base loads of the current runtime's store (restart() opens a new one). */
  const countLoads = (): { n: number } => {
    const count = { n: 0 };
    const load = rt.store.loadBase.bind(rt.store);
    rt.store.loadBase = () => {
      count.n++;
      return load();
    };
    return count;
  };
  beforeEach(async () => {
    emu.control.createFolder(binderId, { name: 'Sub', parentId: folderId });
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    expect((await runPass(rt)).plan.groups).toEqual([]);
    const mark = JSON.parse(rt.store.getMeta('inSyncMark') ?? '{}') as { tree?: string; search?: { digests: string[] } };
    expect(mark.tree).toEqual(expect.any(String));
    expect(mark.search?.digests).toHaveLength(1);
    // What the next start reads to decide on a second thread for the walk: the tree's file count, from the mark.
    expect(markedTreeFiles(rt.store.getMeta('inSyncMark'))).toBe(5);
    expect(markedTreeFiles(JSON.stringify({ ...mark, tree: undefined }))).toBe(0);
    expect(markedTreeFiles('{not json')).toBe(0);
  });

  it('a restart over an unchanged tree loads no base row and asks only for the search pages; later passes work as usual', async () => {
    await restart();
    const loads = countLoads();
    emu.control.resetCounters();
    const report = await runPass(rt, { reuseSavedFolderTree: true });
    expect(report).toMatchObject({ converged: true, hashed: 0, remoteRequests: 1, plan: { groups: [] } });
    expect(loads.n).toBe(0);
    expect(emu.control.counters()).toMatchObject({ search: 1, folders: 0, subfolders: 0 });
    expect(rt.store.getMeta('lastScanAt')).toBeDefined();
    // Polls while nothing local happened check the pages' digests only: still no base row in memory.
    for (let i = 0; i < 2; i++) {
      emu.control.resetCounters();
      expect(await runPass(rt, { localDirs: [] })).toMatchObject({ converged: true, remoteRequests: 1, plan: { groups: [] } });
      expect(emu.control.counters()).toMatchObject({ search: 1, folders: 0, subfolders: 0 });
    }
    expect(loads.n).toBe(0);
    expect(rt.cache.raw).toBeNull();
    // A remote change makes the normal pass run (from the state DB); so does a local change the watcher hints.
    const [doc] = emu.control.listDocuments(binderId);
    emu.control.addVersion(doc!.id, 'remote edit after the restart');
    expect((await runPass(rt, { localDirs: [] })).execution?.done.download).toBe(1);
    expect(loads.n).toBeGreaterThan(0);
    expect((await runPass(rt, { localDirs: [] })).plan.groups).toEqual([]);
    fs.writeFileSync(local('Docs/d1.txt'), 'local edit after the restart');
    expect((await runPass(rt, { localDirs: ['Docs'] })).execution?.done.upload).toBe(1);
  });

  it('a poll after the fast restart with a local change the watcher reported scans and uploads it', async () => {
    await restart();
    expect((await runPass(rt, { reuseSavedFolderTree: true })).converged).toBe(true);
    fs.writeFileSync(local('Docs/new.txt'), 'new after the restart');
    const report = await runPass(rt, { localDirs: ['Docs'] });
    expect(report.execution?.done.upload).toBe(1);
    expect(emu.control.listDocuments(binderId).map((d) => d.fileName)).toContain('new.txt');
  });

  it('a search the service refuses stops the folder walk beside it and fails the pass with its own error', async () => {
    // A chain of 12 folders: its walk takes 12 rounds of slow requests, the refused search one request.
    let parent = folderId;
    for (let i = 0; i < 12; i++) parent = emu.control.createFolder(binderId, { name: `L${i}`, parentId: parent }).id;
    await restart();
    emu.control.injectFault({ route: 'subfolders', latencyMs: 40 });
    emu.control.injectFault({ route: 'search', status: 400 });
    emu.control.resetCounters();
    await expect(runPass(rt)).rejects.toMatchObject({ code: 'SERVICE_BAD_REQUEST' });
    await new Promise((r) => setTimeout(r, 600)); // what a walk left running would still ask for
    expect(emu.control.counters().subfolders).toBeLessThanOrEqual(2);
  });

  it('a one-shot sync walks the folder tree as well, and sees a folder renamed while stopped', async () => {
    await restart();
    const loads = countLoads();
    expect(await walksOf(() => runPass(rt))).toBe(3);
    expect(loads.n).toBe(0);
    const sub = emu.control.listFolders(binderId).find((f) => f.name === 'Sub')!;
    emu.control.addDocument(binderId, sub.id, 'inside.txt', 'in the sub-folder');
    expect((await runPass(rt)).execution?.done.download).toBe(1);
    await runPass(rt);
    await restart();
    emu.control.renameFolder(sub.id, 'Again');
    const loadsAfter = countLoads();
    await runPass(rt);
    expect(loadsAfter.n).toBeGreaterThan(0);
    expect(fs.readFileSync(local('Docs/Again/inside.txt'), 'utf8')).toBe('in the sub-folder');
    expect(fs.existsSync(local('Docs/Sub'))).toBe(false);
  });

  it('a file replaced with the same size and mtime (another inode) is found, hashed and uploaded', async () => {
    const abs = local('Docs/d0.txt');
    const st = fs.statSync(abs);
    fs.writeFileSync(`${abs}.new`, 'DOC 0'.padEnd(st.size, '!'));
    fs.utimesSync(`${abs}.new`, st.atime, st.mtime);
    fs.renameSync(`${abs}.new`, abs);
    await restart();
    const report = await runPass(rt, { reuseSavedFolderTree: true });
    expect(report.hashed).toBe(1);
    expect(report.execution?.done.upload).toBe(1);
  });

  it('a temp file left by a crash takes the normal pass, which removes it', async () => {
    fs.writeFileSync(local('Docs/.binder-sync-tmp-crashed'), 'partial');
    await restart();
    const loads = countLoads();
    const report = await runPass(rt, { reuseSavedFolderTree: true });
    expect(report.converged).toBe(true);
    expect(loads.n).toBeGreaterThan(0);
    expect(fs.existsSync(local('Docs/.binder-sync-tmp-crashed'))).toBe(false);
  });

  it('a damaged or older mark is no mark: the normal pass runs and writes a good one', async () => {
    const good = rt.store.getMeta('inSyncMark') ?? '';
    const damaged = [
      '{not json',
      JSON.stringify({ ...JSON.parse(good), format: 1 }),
      JSON.stringify({ ...JSON.parse(good), search: { step: 0, digests: [] } }),
      JSON.stringify({ ...JSON.parse(good), tree: 42 }),
      // Of this format and for these directories, but the tree's or the pages' digests are not the current ones
      // (written by a build that digested differently): the normal pass that finds nothing to do rewrites them.
      JSON.stringify({ ...JSON.parse(good), tree: 'c3RhbGU=' }),
      JSON.stringify({ ...JSON.parse(good), search: { step: 1000, digests: ['c3RhbGU='] } }),
      // Without a tree digest, as a daemon's poll after work leaves it (its scan was partial): the next start's
      // pass, which scans the whole tree, writes one.
      JSON.stringify({ ...JSON.parse(good), tree: undefined, files: undefined }),
    ];
    for (const bad of damaged) {
      rt.store.setMeta('inSyncMark', bad);
      await restart();
      const loads = countLoads();
      expect((await runPass(rt, { reuseSavedFolderTree: true })).converged, bad).toBe(true);
      expect(loads.n, bad).toBeGreaterThan(0);
      expect(rt.store.getMeta('inSyncMark')).toBe(good);
    }
    await restart();
    const loads = countLoads();
    expect((await runPass(rt, { reuseSavedFolderTree: true })).converged).toBe(true);
    expect(loads.n, 'the rewritten mark lets the next start take the digest check').toBe(0);
  });

  it('a remote version while stopped: the page differs and the normal pass downloads it', async () => {
    const [doc] = emu.control.listDocuments(binderId);
    emu.control.addVersion(doc!.id, 'remote edit while stopped');
    await restart();
    const report = await runPass(rt, { reuseSavedFolderTree: true });
    expect(report.execution?.done.download).toBe(1);
    expect(fs.readFileSync(local(`Docs/${doc!.fileName}`), 'utf8')).toBe('remote edit while stopped');
  });

  it('waits for localReady before walking: a file written before it settles is found', async () => {
    await restart();
    let ready!: () => void;
    const localReady = new Promise<void>((resolve) => (ready = resolve));
    emu.control.resetCounters();
    const pass = runPass(rt, { reuseSavedFolderTree: true, localReady });
    await vi.waitFor(() => expect(emu.control.counters().search).toBe(1));
    await new Promise((r) => setTimeout(r, 50));
    fs.writeFileSync(local('Docs/during-start.txt'), 'written while the watcher was starting');
    ready();
    expect((await pass).execution?.done.upload).toBe(1);
  });
});

describe('the state DB deleted or replaced under a running process', () => {
  const stateFile = () => path.join(dir, 'state', 'p', 'state.db');

  it('deleted (rm -rf of the stateDir): the next pass writes it back from the open copy, and a restart finds the whole record', async () => {
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    fs.writeFileSync(local('Docs/new.txt'), 'new');
    fs.rmSync(path.join(dir, 'state'), { recursive: true, force: true });
    const report = await runPass(rt);
    expect(report.execution?.done.upload).toBe(1);
    expect(fs.existsSync(stateFile())).toBe(true);
    expect(rt.store.countBase()).toBe(6);
    await restart();
    expect(rt.store.countBase()).toBe(6);
    emu.control.resetCounters();
    const after = await runPass(rt);
    expect(after.plan.groups).toEqual([]);
    expect(emu.control.counters()).toMatchObject({ commit: 0, 'storage-get': 0 });
  });

  it('replaced by another file: the pass stops, naming it, and writes nothing into either', async () => {
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    const aside = `${stateFile()}.aside`;
    fs.copyFileSync(stateFile(), aside);
    fs.renameSync(aside, stateFile());
    await expect(runPass(rt)).rejects.toMatchObject({ code: 'STATE_REPLACED' });
  });

  it('cut short by another program (truncated): the pass stops as damaged, with the move-aside hint, and sends nothing', async () => {
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    fs.writeFileSync(local('Docs/new.txt'), 'new');
    fs.truncateSync(stateFile(), 0);
    emu.control.resetCounters();
    await expect(runPass(rt)).rejects.toMatchObject({ code: 'STATE_CORRUPT', message: expect.stringContaining('was cut short by another program') });
    expect(emu.control.counters().commit).toBe(0);
  });
});

describe('the in-sync mark beside remote items an ignore rule leaves out (informational issues)', () => {
  const MARK = 'inSyncMark';
  const codes = (r: { issues: Array<{ code: string }> }) => r.issues.map((i) => i.code);

  it('a remote document an ignore rule leaves out: the quiet pass leaves the mark, and a restart takes the fast check and says it again', async () => {
    const thumbs = emu.control.addDocument(binderId, folderId, 'Thumbs.db', 'windows thumbnails').document;
    const first = await runPass(rt);
    expect(first.execution?.done.download).toBe(5);
    expect(codes(first)).toEqual(['ignored']);
    const quiet = await runPass(rt);
    expect(quiet).toMatchObject({ converged: true, plan: { groups: [] } });
    expect(rt.store.getMeta(MARK)).toBeDefined();
    for (const opts of [{ reuseSavedFolderTree: true }, {}]) {
      await restart();
      let report!: Awaited<ReturnType<typeof runPass>>;
      expect(await reconciles(async () => (report = await runPass(rt, opts)))).toBe(0);
      expect(report).toMatchObject({ converged: true, hashed: 0, plan: { groups: [] } });
      expect(codes(report)).toEqual(['ignored']);
      expect(report.issues[0]?.relPath).toBe('Docs/Thumbs.db');
    }
    // A new version of the ignored document changes its search page: the normal pass runs, and downloads nothing.
    emu.control.addVersion(thumbs.id, 'new thumbnails');
    await restart();
    let report!: Awaited<ReturnType<typeof runPass>>;
    expect(await reconciles(async () => (report = await runPass(rt)))).toBe(1);
    expect(report.plan.groups).toEqual([]);
    expect(codes(report)).toEqual(['ignored']);
    expect(fs.existsSync(local('Docs/Thumbs.db'))).toBe(false);
    // And a real change beside it is still found after a restart.
    fs.writeFileSync(local('Docs/d2.txt'), 'edited while stopped');
    await restart();
    expect((await runPass(rt)).execution?.done.upload).toBe(1);
  });

  it('settling after the first download leaves the mark beside an ignored document too', async () => {
    emu.control.addDocument(binderId, folderId, '~$report.docx', 'an office lock file');
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    expect(await settleInSyncMark(rt)).toBe(true);
    await restart();
    let report!: Awaited<ReturnType<typeof runPass>>;
    expect(await reconciles(async () => (report = await runPass(rt)))).toBe(0);
    expect(codes(report)).toEqual(['ignored']);
  });

  it('a remote folder an ignore rule leaves out leaves no mark (the saved folder tree lacks it), and the normal pass runs', async () => {
    const ignoredFolder = emu.control.createFolder(binderId, { name: 'Thumbs.db', parentId: folderId });
    emu.control.addDocument(binderId, ignoredFolder.id, 'inside.txt', 'under an ignored folder');
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    expect(await settleInSyncMark(rt)).toBe(false);
    const quiet = await runPass(rt);
    expect(quiet.plan.groups).toEqual([]);
    expect(codes(quiet)).toContain('ignored');
    expect(rt.store.getMeta(MARK)).toBeUndefined();
    await restart();
    expect(await reconciles(() => runPass(rt))).toBe(1);
  });
});

describe('settling the in-sync mark after a pass that did work (what `binder-sync sync` does next)', () => {
  const MARK = 'inSyncMark';
  beforeEach(async () => {
    emu.control.createFolder(binderId, { name: 'Sub', parentId: folderId });
    expect((await runPass(rt)).execution?.done.download).toBe(5);
    expect(rt.store.getMeta(MARK)).toBeUndefined(); // the pass planned work: it cannot leave the mark itself
  });

  it('after downloads it leaves the mark, executing nothing, and the next process takes the fast check', async () => {
    emu.control.resetCounters();
    expect(await settleInSyncMark(rt)).toBe(true);
    expect(emu.control.counters()).toMatchObject({ search: 0, folders: 0, subfolders: 0, downloadlink: 0, 'storage-get': 0 }); // no listing again
    const mark = JSON.parse(rt.store.getMeta(MARK) ?? '{}') as { tree?: string; search?: { digests: string[] } };
    expect(mark.tree).toEqual(expect.any(String));
    expect(mark.search?.digests).toHaveLength(1);
    for (const opts of [{ reuseSavedFolderTree: true }, {}]) {
      await restart();
      let report!: Awaited<ReturnType<typeof runPass>>;
      expect(await reconciles(async () => (report = await runPass(rt, opts)))).toBe(0);
      expect(report).toMatchObject({ converged: true, hashed: 0, plan: { groups: [] } });
    }
  });

  it('the mark it leaves is only a shortcut: a remote version after the listing, or a local edit after the scan, is still synced', async () => {
    const [doc] = emu.control.listDocuments(binderId);
    emu.control.addVersion(doc!.id, 'remote edit after the listing');
    expect(await settleInSyncMark(rt)).toBe(true); // it cannot know: the listing it reconciles is the pass's
    fs.writeFileSync(local('Docs/d1.txt'), 'local edit after the settle');
    await restart();
    const report = await runPass(rt, { reuseSavedFolderTree: true });
    expect(report.execution?.done).toMatchObject({ download: 1, upload: 1 });
    expect(fs.readFileSync(local(`Docs/${doc!.fileName}`), 'utf8')).toBe('remote edit after the listing');
    expect(emu.control.readContent(emu.control.listDocuments(binderId).find((d) => d.fileName === 'd1.txt')!.id).toString()).toBe('local edit after the settle');
  });

  it('leaves no mark when the tree changed since the pass, the pass sent something, or an issue is open, and never executes', async () => {
    fs.writeFileSync(local('Docs/d0.txt'), 'edited before the settle');
    expect(await settleInSyncMark(rt)).toBe(false);
    expect(rt.store.getMeta(MARK)).toBeUndefined();
    expect(emu.control.readContent(emu.control.listDocuments(binderId).find((d) => d.fileName === 'd0.txt')!.id).toString()).toBe('doc 0');
    // The next pass uploads the edit: its listing is stale at once.
    expect((await runPass(rt)).execution?.done.upload).toBe(1);
    expect(await settleInSyncMark(rt)).toBe(false);
    expect(rt.store.getMeta(MARK)).toBeUndefined();
    // A local folder the binder does not have stays an open issue.
    expect((await runPass(rt)).plan.groups).toEqual([]);
    const quietMark = rt.store.getMeta(MARK); // the quiet pass's own
    fs.mkdirSync(local('Waiting'));
    fs.writeFileSync(local('Waiting/w.txt'), 'waits for a remote folder');
    const third = await runPass(rt);
    expect(third.issues.map((i) => i.code)).toContain('waiting-for-remote-folder');
    expect(await settleInSyncMark(rt)).toBe(false);
    expect(rt.store.getMeta(MARK)).toBe(quietMark);
  });
});

describe('large new files: read once, by their upload', () => {
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  const bigFile = (fill: number) => Buffer.alloc(LAZY_HASH_FROM_BYTES + 4096, fill);
  const docByName = (name: string) => emu.control.listDocuments(binderId).find((d) => d.fileName === name);
  const contents = (documentId: string) => emu.control.listVersions(documentId).map((v) => sha(emu.control.readContent(documentId, v.id)));

  it('uploads a new large file without a scan hash, keeps the hash of what was sent, and never sends it twice', async () => {
    await runPass(rt);
    const big = bigFile(7);
    fs.writeFileSync(local('Docs/big.bin'), big);
    const up = await runPass(rt, { localDirs: ['Docs'] });
    expect(up.hashed).toBe(0); // the scan did not read it: its upload did
    expect(up.execution?.done.upload).toBe(1);
    const doc = docByName('big.bin');
    expect(contents(doc!.id)).toEqual([sha(big)]);
    expect([...rt.store.loadBase().values()].find((b) => b.relPath === 'Docs/big.bin')?.sha256).toBe(sha(big));
    // The daemon's next passes: the observation kept in memory, a partial scan, a full scan, a new process.
    for (const next of [() => runPass(rt, { localDirs: [] }), () => runPass(rt, { localDirs: ['Docs'] }), () => runPass(rt), async () => runPass(await restart())]) {
      const r = await next();
      expect(r.execution?.done.upload ?? 0).toBe(0);
      expect(r.converged).toBe(true);
    }
    // Touched (same content, new mtime): read and compared with its base, not uploaded.
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(local('Docs/big.bin'), later, later);
    const touched = await runPass(rt, { localDirs: ['Docs'] });
    expect(touched.hashed).toBe(1);
    expect(touched.execution?.done.upload ?? 0).toBe(0);
    // Edited: a new version.
    const edited = bigFile(8);
    fs.writeFileSync(local('Docs/big.bin'), edited);
    expect((await runPass(rt, { localDirs: ['Docs'] })).execution?.done.upload).toBe(1);
    expect(contents(doc!.id)).toEqual([sha(big), sha(edited)]);
  });

  it('a large remote document is hashed from the written file: its base holds the content hash, and it is never sent back', async () => {
    await runPass(rt);
    const big = bigFile(9);
    big.write('a large remote document');
    emu.control.addDocument(binderId, folderId, 'remote-big.bin', big);
    const down = await runPass(rt);
    expect(down.execution?.done.download).toBe(1);
    expect(sha(fs.readFileSync(local('Docs/remote-big.bin')))).toBe(sha(big));
    expect([...rt.store.loadBase().values()].find((b) => b.relPath === 'Docs/remote-big.bin')?.sha256).toBe(sha(big));
    // Touched: read and found equal to its base hash, so nothing is uploaded.
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(local('Docs/remote-big.bin'), later, later);
    const touched = await runPass(await restart());
    expect(touched.hashed).toBe(1);
    expect(touched.execution?.done.upload ?? 0).toBe(0);
    expect(contents(docByName('remote-big.bin')!.id)).toEqual([sha(big)]);
  });

  it('against a new remote document at its path: the same content is adopted, other content of the same size is kept both ways', async () => {
    await runPass(rt);
    const same = bigFile(1);
    emu.control.addDocument(binderId, folderId, 'same.bin', same);
    fs.writeFileSync(local('Docs/same.bin'), same);
    emu.control.addDocument(binderId, folderId, 'other.bin', bigFile(2));
    const mine = bigFile(3);
    fs.writeFileSync(local('Docs/other.bin'), mine);
    const r = await runPass(rt);
    expect(r.execution?.conflicts.map((c) => c.relPath)).toEqual(['Docs/other.bin']);
    expect(contents(docByName('same.bin')!.id)).toHaveLength(1); // adopted: nothing uploaded
    const base = [...rt.store.loadBase().values()];
    expect(base.find((b) => b.relPath === 'Docs/same.bin')?.sha256).toBe(sha(same));
    // The local edit of other.bin is kept beside it and uploaded as its own document.
    const copy = fs.readdirSync(local('Docs')).find((n) => n.startsWith('other (conflict'));
    expect(copy).toBeDefined();
    expect(sha(fs.readFileSync(local(`Docs/${copy}`)))).toBe(sha(mine));
    expect(contents(docByName(copy!)!.id)).toEqual([sha(mine)]);
    expect(sha(fs.readFileSync(local('Docs/other.bin')))).toBe(sha(bigFile(2)));
  });
});
