// A synced file its owner made read-only (chmod 444) gets a new version on the service: the download replaces it
// (a rename needs no write permission on the file), keeps its mode, and keeps exactly one copy of the old content
// in the trash, whether the trash links it (same filesystem) or copies it (stateDir on another one, as in the
// systemd sandbox). It failed with EACCES on every pass, each attempt leaving one more trash copy (black-box
// round 23/24). EACCES cannot happen for root, so as root the CLI runs as nobody (see unprivileged.ts).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, localTree, sha256, sync, type CliResult, type Workspace } from './harness.js';
import { chownTree, isRoot, NOBODY, releaseUnprivileged, unprivilegedCommand } from './unprivileged.js';

const command = unprivilegedCommand ?? [];
afterAll(releaseUnprivileged);
let ws: Workspace | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) c();
  await ws?.close();
  ws = undefined;
});

const output = (r: CliResult) => `${r.stdout}\n${r.stderr}`;
const canMount = isRoot && spawnSync('sh', ['-c', 'command -v mount'], { stdio: 'ignore' }).status === 0;

async function ownedWorkspace(stateOnTmpfs: boolean): Promise<Workspace> {
  const w = await createWorkspace();
  fs.mkdirSync(w.local, { recursive: true });
  fs.mkdirSync(w.stateDir, { recursive: true });
  if (stateOnTmpfs) {
    const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0755', 'tmpfs', w.stateDir], { encoding: 'utf8' });
    if (m.status !== 0) throw new Error(`mount failed: ${m.stderr}`);
    cleanups.push(() => spawnSync('umount', ['-l', w.stateDir]));
  }
  if (isRoot) {
    fs.chmodSync(w.dir, 0o755);
    chownTree(w.dir);
  }
  return w;
}

function trashFiles(w: Workspace): string[] {
  const dir = path.join(w.stateDir, 'main', 'trash');
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe.skipIf(unprivilegedCommand === null)('a read-only synced file', () => {
  it.each([
    ['linked into the trash (same filesystem)', false],
    ['copied into the trash (stateDir on another filesystem)', true],
  ] as const)('is replaced by a new remote version, keeps its mode, and leaves one trash copy: %s', async (_how, stateOnTmpfs) => {
    if (stateOnTmpfs && !canMount) return; // needs root to mount the stateDir's tmpfs
    ws = await ownedWorkspace(stateOnTmpfs);
    const w = ws;
    const c = w.emulator.control;
    const folder = c.createFolder(w.binderId, { name: 'Docs' });
    const { document } = c.addDocument(w.binderId, folder.id, 'report.txt', 'v1 from the service');
    const first = await sync(w, [], { command });
    expect(first.code, output(first)).toBe(0);
    const abs = path.join(w.local, 'Docs', 'report.txt');
    if (isRoot) fs.chownSync(abs, NOBODY, NOBODY);
    fs.chmodSync(abs, 0o444);

    c.addVersion(document.id, 'v2 from the service, longer');
    const second = await sync(w, [], { command });
    expect(second.code, output(second)).toBe(0);
    expect(fs.readFileSync(abs, 'utf8')).toBe('v2 from the service, longer');
    expect(fs.statSync(abs).mode & 0o777).toBe(0o444);
    const kept = trashFiles(w);
    expect(kept.map((f) => fs.readFileSync(f, 'utf8'))).toEqual(['v1 from the service']);
    expect([...localTree(w.local).keys()].filter((p) => p.includes('.binder-sync-'))).toEqual([]);

    const third = await sync(w, [], { command });
    expect(third.code, output(third)).toBe(0);
    expect(trashFiles(w)).toHaveLength(1);
    expect(sha256(fs.readFileSync(abs))).toBe(sha256(Buffer.from('v2 from the service, longer')));
  });
});
