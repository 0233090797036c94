// Permission denied inside the sync root, end to end: a file or a folder the user running binder-sync may not
// read (chmod 000). Nothing there may be taken as deleted, replaced, or uploaded half-read: the pass names the
// path, syncs everything else, and the next pass (or the running daemon) completes once the mode is restored.
// EACCES cannot happen for root, so as root the CLI runs as nobody (see unprivileged.ts); skipped when it cannot.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createWorkspace, localTree, remoteTree, sha256, sync, type CliResult, type Workspace } from './harness.js';
import { eventually, msgHas, startDaemonProcess, type DaemonProcess, type LogLine } from './run-helpers.js';
import { chownTree, isRoot, NOBODY, releaseUnprivileged, unprivilegedCommand } from './unprivileged.js';

const command = unprivilegedCommand ?? [];
afterAll(releaseUnprivileged);
let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
afterEach(async () => {
  await daemon?.dispose();
  daemon = undefined;
  await ws?.close();
  ws = undefined;
});

const output = (r: CliResult) => `${r.stdout}\n${r.stderr}`;
const runSync = (w: Workspace) => sync(w, [], { command });

/** A workspace the unprivileged user owns (config, state, local root). */
async function ownedWorkspace(): Promise<Workspace> {
  const w = await createWorkspace();
  fs.mkdirSync(w.local, { recursive: true });
  fs.mkdirSync(w.stateDir, { recursive: true });
  if (isRoot) {
    fs.chmodSync(w.dir, 0o755);
    chownTree(w.dir);
  }
  return w;
}

/** Writes a local file as the unprivileged user would have (owned by it), with `mode`. */
function writeOwned(w: Workspace, rel: string, content: string, mode = 0o644): void {
  const abs = path.join(w.local, rel);
  fs.mkdirSync(path.dirname(abs), { recursive: true });
  fs.writeFileSync(abs, content);
  if (isRoot) fs.chownSync(abs, NOBODY, NOBODY);
  fs.chmodSync(abs, mode);
}

/** binder-sync's own files (temp files, probes) anywhere under the root. */
const daemonFiles = (dir: string) => [...localTree(dir).keys()].filter((p) => path.posix.basename(p).startsWith('.binder-sync-'));

describe.skipIf(unprivilegedCommand === null)('unreadable paths inside the sync root', () => {
  it('sync: an unreadable file and folder are reported and left alone, the rest syncs, and both complete once readable', async () => {
    ws = await ownedWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const priv = c.createFolder(w.binderId, { name: 'Private' });
    const a = c.addDocument(w.binderId, docs.id, 'a.txt', 'a v1').document;
    const b = c.addDocument(w.binderId, docs.id, 'b.txt', 'b v1').document;
    const p1 = c.addDocument(w.binderId, priv.id, 'p1.txt', 'p1 v1').document;
    const first = await runSync(w);
    expect(first.code, output(first)).toBe(0);
    expect(localTree(w.local)).toEqual(remoteTree(w));

    // Closed to the user: one synced file, one synced folder, and one new file.
    fs.chmodSync(path.join(w.local, 'Docs/a.txt'), 0o000);
    fs.chmodSync(path.join(w.local, 'Private'), 0o000);
    writeOwned(w, 'Docs/new-secret.txt', 'not readable yet', 0o000);
    // Meanwhile: a local edit, and remote changes to the closed file and folder, and elsewhere.
    writeOwned(w, 'Docs/b.txt', 'b v2 (local)');
    c.addVersion(a.id, 'a v2 (remote)');
    c.addVersion(p1.id, 'p1 v2 (remote)');
    c.addDocument(w.binderId, priv.id, 'p2.txt', 'p2 (remote)');
    c.addDocument(w.binderId, docs.id, 'c.txt', 'c (remote)');
    const docsBefore = c.listDocuments(w.binderId).length;

    const r = await runSync(w);
    const text = output(r);
    expect(r.code, text).toBe(1); // incomplete: something is left
    for (const rel of ['Docs/a.txt', 'Private', 'Docs/new-secret.txt']) expect(text, rel).toContain(rel);
    expect(text).toMatch(/unreadable/);
    expect(text).toMatch(/EACCES/);
    // The rest went through: the local edit is up, the remote new file is down.
    expect(c.readContent(b.id).toString()).toBe('b v2 (local)');
    expect(fs.readFileSync(path.join(w.local, 'Docs/c.txt'), 'utf8')).toBe('c (remote)');
    // The closed paths are untouched: not replaced, not uploaded, not taken as deleted, modes kept.
    expect(fs.readFileSync(path.join(w.local, 'Docs/a.txt'), 'utf8')).toBe('a v1');
    expect(fs.statSync(path.join(w.local, 'Docs/a.txt')).mode & 0o777).toBe(0o000);
    expect(fs.statSync(path.join(w.local, 'Private')).mode & 0o777).toBe(0o000);
    expect(fs.readdirSync(path.join(w.local, 'Private')).sort()).toEqual(['p1.txt']);
    expect(fs.readFileSync(path.join(w.local, 'Private/p1.txt'), 'utf8')).toBe('p1 v1');
    expect(c.listDocuments(w.binderId)).toHaveLength(docsBefore);
    expect(c.readContent(a.id).toString()).toBe('a v2 (remote)');
    expect(daemonFiles(w.local)).toEqual([]);

    // Readable again: the next pass completes, the remote versions land, the new file goes up, nothing is lost.
    fs.chmodSync(path.join(w.local, 'Docs/a.txt'), 0o644);
    fs.chmodSync(path.join(w.local, 'Private'), 0o755);
    fs.chmodSync(path.join(w.local, 'Docs/new-secret.txt'), 0o644);
    const after = await runSync(w);
    expect(after.code, output(after)).toBe(0);
    expect(localTree(w.local)).toEqual(remoteTree(w));
    expect(fs.readFileSync(path.join(w.local, 'Docs/a.txt'), 'utf8')).toBe('a v2 (remote)');
    expect(fs.readFileSync(path.join(w.local, 'Private/p1.txt'), 'utf8')).toBe('p1 v2 (remote)');
    expect(fs.readFileSync(path.join(w.local, 'Private/p2.txt'), 'utf8')).toBe('p2 (remote)');
    const uploaded = c.listDocuments(w.binderId).find((d) => d.fileName === 'new-secret.txt');
    expect(uploaded && c.readContent(uploaded.id).toString()).toBe('not readable yet');
    expect(c.listVersions(a.id)).toHaveLength(2); // no version made of the closed copy
  }, 90_000);

  it('run: the daemon reports an unreadable file, keeps syncing, and takes it up once its mode is restored', async () => {
    ws = await ownedWorkspace();
    const w = ws;
    const c = w.emulator.control;
    const docs = c.createFolder(w.binderId, { name: 'Docs' });
    const a = c.addDocument(w.binderId, docs.id, 'a.txt', 'a v1').document;
    daemon = startDaemonProcess(w, { command });
    const d = daemon;
    await d.waitForLog(msgHas('pass: '), 30_000, 'the first pass');
    expect(fs.readFileSync(path.join(w.local, 'Docs/a.txt'), 'utf8')).toBe('a v1');

    // A synced file closed to the user while a remote version arrives; a new file saved unreadable.
    fs.chmodSync(path.join(w.local, 'Docs/a.txt'), 0o000);
    writeOwned(w, 'Docs/draft.txt', 'draft', 0o000);
    c.addVersion(a.id, 'a v2 (remote)');
    // Named once in the log, at warn: a service's operator reads the journal, not only `status`.
    const warned = (rel: string) => (l: LogLine) => l.level === 40 && l.msg === `not synced: ${rel}: unreadable: cannot read: EACCES`;
    await d.waitForLog(warned('Docs/draft.txt'), 30_000, 'draft.txt reported');
    await d.waitForLog(warned('Docs/a.txt'), 30_000, 'a.txt reported');
    // Meanwhile other work goes on.
    writeOwned(w, 'Docs/other.txt', 'other');
    await eventually(() => c.listDocuments(w.binderId).some((doc) => doc.fileName === 'other.txt'), 30_000, 'other.txt uploaded', () => d.tail());
    expect(fs.readFileSync(path.join(w.local, 'Docs/a.txt'), 'utf8')).toBe('a v1');
    expect(c.listDocuments(w.binderId).some((doc) => doc.fileName === 'draft.txt')).toBe(false);
    expect(d.child.exitCode).toBe(null);

    // Modes restored: the daemon notices without a restart.
    fs.chmodSync(path.join(w.local, 'Docs/a.txt'), 0o644);
    fs.chmodSync(path.join(w.local, 'Docs/draft.txt'), 0o644);
    await eventually(() => fs.readFileSync(path.join(w.local, 'Docs/a.txt'), 'utf8') === 'a v2 (remote)', 30_000, 'a.txt updated', () => d.tail());
    const draft = await eventually(() => c.listDocuments(w.binderId).find((doc) => doc.fileName === 'draft.txt'), 30_000, 'draft.txt uploaded', () => d.tail());
    expect(sha256(c.readContent(draft.id))).toBe(sha256('draft'));
    expect(c.listVersions(a.id)).toHaveLength(2);
    expect(daemonFiles(w.local)).toEqual([]);
    await d.waitForLog((l) => l.msg === 'no longer blocked: Docs/a.txt, Docs/draft.txt', 10_000, 'the issues cleared');
    expect(d.count(warned('Docs/draft.txt')), d.tail()).toBe(1); // polls in between repeated nothing
  }, 120_000);
});
