// End-to-end harness: an in-process emulator on 127.0.0.1, a temp workspace with a config file, and the real
// CLI (bin/binder-sync.js, built into dist/) run as a child process.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../src/emulator/index.js';

export const BIN = fileURLToPath(new URL('../../bin/binder-sync.js', import.meta.url));

export interface Workspace {
  dir: string;
  local: string;
  stateDir: string;
  configFile: string;
  emulator: Emulator;
  binderId: string;
  /** Rewrites the config with these pair options merged in. */
  writeConfig(pairExtra?: Record<string, unknown>, extra?: Record<string, unknown>): void;
  close(): Promise<void>;
}

export async function createWorkspace(opts: { emulator?: EmulatorOptions; readOnly?: boolean; pair?: Record<string, unknown> } = {}): Promise<Workspace> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'binder-e2e-'));
  const emulator = await startEmulator({ quiet: true, ...opts.emulator });
  const binder = emulator.control.createBinder({ name: 'E2E' });
  const ws: Workspace = {
    dir,
    local: path.join(dir, 'local'),
    stateDir: path.join(dir, 'state'),
    configFile: path.join(dir, 'sync.yaml'),
    emulator,
    binderId: binder.id,
    writeConfig(pairExtra = {}, extra = {}) {
      const c = emulator.credentials;
      const config = {
        service: {
          baseUrl: emulator.baseUrl,
          authUrl: emulator.authUrl,
          tenantId: c.tenantId,
          clientId: opts.readOnly ? c.readOnlyClientId : c.clientId,
          clientSecret: '${E2E_SECRET}',
        },
        stateDir: './state',
        log: { level: 'info' },
        pairs: [{ name: 'main', localPath: './local', binderId: binder.id, direction: 'both', ...opts.pair, ...pairExtra }],
        ...extra,
      };
      fs.writeFileSync(ws.configFile, stringify(config), { mode: 0o600 });
    },
    async close() {
      await emulator.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  ws.writeConfig();
  return ws;
}

export function secretOf(ws: Workspace, readOnly = false): string {
  return readOnly ? ws.emulator.credentials.readOnlyClientSecret : ws.emulator.credentials.clientSecret;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion. */
export function runCli(
  ws: Workspace | null,
  args: string[],
  opts: {
    env?: NodeJS.ProcessEnv;
    readOnly?: boolean;
    timeoutMs?: number;
    /** instead of `node bin/binder-sync.js` (e.g. as another user) */
    command?: string[];
    /** Closes the read end of the child's stdout at once, as `| true` does: its writes then fail with EPIPE. */
    closeStdout?: boolean;
  } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const [cmd, ...rest] = [...(opts.command ?? [process.execPath, BIN]), ...args];
    const child = spawn(cmd!, rest, {
      env: { ...process.env, E2E_SECRET: ws ? secretOf(ws, opts.readOnly) : '', BINDER_SYNC_LOG_LEVEL: 'info', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    if (opts.closeStdout) child.stdout.destroy();
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

export function sync(ws: Workspace, extraArgs: string[] = [], opts: Omit<NonNullable<Parameters<typeof runCli>[2]>, 'timeoutMs'> = {}): Promise<CliResult> {
  return runCli(ws, ['sync', '--config', ws.configFile, ...extraArgs], opts);
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * All regular files under dir, relative path -> sha256, skipping nothing (temp files would show up). With
 * `whileBusy`, a file or folder that vanishes during the walk (a running daemon's temp file) is left out
 * instead of failing the walk.
 */
export function localTree(dir: string, opts: { whileBusy?: boolean } = {}): Map<string, string> {
  const out = new Map<string, string>();
  const gone = (err: unknown) => opts.whileBusy === true && (err as NodeJS.ErrnoException).code === 'ENOENT';
  const walk = (abs: string, rel: string) => {
    if (!fs.existsSync(abs)) return;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(abs, { withFileTypes: true });
    } catch (err) {
      if (gone(err)) return;
      throw err;
    }
    for (const e of entries) {
      const a = path.join(abs, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(a, r);
      else if (e.isFile()) {
        try {
          out.set(r, sha256(fs.readFileSync(a)));
        } catch (err) {
          if (!gone(err)) throw err;
        }
      }
    }
  };
  walk(dir, '');
  return out;
}

/** The binder's documents as local paths (folder names joined) -> sha256 of the latest content. */
export function remoteTree(ws: Workspace): Map<string, string> {
  const c = ws.emulator.control;
  const folders = new Map(c.listFolders(ws.binderId).map((f) => [f.id, f]));
  const folderPath = (id: string): string => {
    const f = folders.get(id);
    if (!f) throw new Error(`unknown folder ${id}`);
    return f.parentId ? `${folderPath(f.parentId)}/${f.name}` : f.name;
  };
  const out = new Map<string, string>();
  for (const d of c.listDocuments(ws.binderId)) out.set(`${folderPath(d.folderId)}/${d.fileName}`, sha256(c.readContent(d.id)));
  return out;
}

export function writeLocal(ws: Workspace, rel: string, content: string | Buffer): void {
  const abs = path.join(ws.local, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
}

export function readLocal(ws: Workspace, rel: string): string {
  return fs.readFileSync(path.join(ws.local, rel), 'utf8');
}

/**
 * The file's content, or null while nothing is at the path: for polling a running daemon, which may be between
 * moving the old file aside and putting the new one in place (a keep-both conflict).
 */
export function readLocalIfThere(ws: Workspace, rel: string): string | null {
  try {
    return readLocal(ws, rel);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}
