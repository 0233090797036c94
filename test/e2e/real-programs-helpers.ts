// Shared by the tests of real programs writing into a watched folder (run-real-programs.test.ts and
// real-programs-edge-cases.test.ts): a running daemon over a binder with one folder 'Docs', a scratch directory
// outside the sync root for the programs' sources, and the remote versions by content hash.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createWorkspace, sha256, type Workspace } from './harness.js';
import { msgHas, startDaemonProcess, writeRunConfig, type DaemonProcess } from './run-helpers.js';

export const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface WatchedFolder {
  w: Workspace;
  d: DaemonProcess;
  /** The remote folder 'Docs'. */
  folderId: string;
}

/**
 * One watched folder per test: `start` makes it (the daemon has finished its first pass when it returns),
 * or `workspace` a bare workspace; `dispose` (in afterEach) stops the daemon and removes everything. `scratch` is a directory outside the sync
 * root, made by `start`.
 */
export function watchedFolderFixture(scratchPrefix: string) {
  let ws: Workspace | undefined;
  let daemon: DaemonProcess | undefined;
  let scratch: string | undefined;
  return {
    async start(opts: { env?: NodeJS.ProcessEnv; pair?: Record<string, unknown> } = {}): Promise<WatchedFolder> {
      ws = await createWorkspace();
      const folder = ws.emulator.control.createFolder(ws.binderId, { name: 'Docs' });
      if (opts.pair === undefined) writeRunConfig(ws);
      else writeRunConfig(ws, { pairs: [{ name: 'main', localPath: './local', binderId: ws.binderId, ...opts.pair }] });
      daemon = startDaemonProcess(ws, { env: opts.env ?? {} });
      await daemon.waitForLog(msgHas('pass: '), 15_000, 'the first pass');
      scratch = fs.mkdtempSync(path.join(os.tmpdir(), scratchPrefix));
      return { w: ws, d: daemon, folderId: folder.id };
    },
    /** A workspace alone (no daemon), for tests that run `sync`; disposed the same way. */
    async workspace(): Promise<Workspace> {
      ws = await createWorkspace();
      return ws;
    },
    get scratch(): string {
      if (scratch === undefined) throw new Error('the watched folder is not started');
      return scratch;
    },
    async dispose(): Promise<void> {
      await daemon?.dispose();
      await ws?.close();
      if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
      daemon = undefined;
      ws = undefined;
      scratch = undefined;
    },
  };
}

/** fileName -> [sha256 of each version] for every document of the binder. */
export function remoteVersions(w: Workspace): Map<string, string[]> {
  const c = w.emulator.control;
  return new Map(c.listDocuments(w.binderId).map((doc) => [doc.fileName, c.listVersions(doc.id).map((v) => sha256(c.readContent(doc.id, v.id)))]));
}
