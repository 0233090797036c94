// Helpers of the reliability suite (chaos, random kills, bad input): a seeded PRNG, the leak check over captured
// output, waiting for a quiet daemon pass, and the end-of-run invariants (duplicates, snapshots, state hash).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { mulberry32 } from '../../src/emulator/ids.js';
import type { RequestRecord } from '../../src/emulator/index.js';
import { LAST_ERROR, LAST_ERROR_WITH } from '../../src/state/pair-meta.js';
import { createWorkspace, secretOf, sha256, type Workspace } from './harness.js';
import { startDaemonProcess, writeRunConfig, type DaemonProcess, type LogLine } from './run-helpers.js';
import { everyContentHash, expectConvergedPass, explain, syncJson, type SyncRun } from './scenario-helpers.js';

export interface Rng {
  readonly seed: number;
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  /** k distinct items, in random order. */
  sample<T>(items: readonly T[], k: number): T[];
}

/** A reproducible PRNG; the seed comes from `envName` when set (to replay a failure), else from the clock. */
export function seededRng(envName: string): Rng {
  const fromEnv = Number(process.env[envName]);
  const seed = Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : (Date.now() % 2_147_483_647) + 1;
  const random = mulberry32(seed);
  const rng: Rng = {
    seed,
    next: random,
    int: (lo, hi) => lo + Math.floor(random() * (hi - lo + 1)),
    pick: (items) => {
      const v = items[Math.floor(random() * items.length)];
      if (v === undefined) throw new Error('pick from an empty list');
      return v;
    },
    sample: (items, k) => {
      const copy = [...items];
      for (let i = copy.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [copy[i], copy[j]] = [copy[j]!, copy[i]!];
      }
      return copy.slice(0, k);
    },
  };
  return rng;
}

/**
 * Secrets, tokens and presigned signatures found in text (used by the chaos, kill and security tests):
 * emulator tokens are `base64url(JSON payload).base64url(HMAC-SHA256)` whose payload starts with {"cid"
 * ("eyJjaWQi"); presigned URLs carry `exp` and `sig` in the query string (src/emulator/signing.ts).
 */
export function leaksIn(text: string, w: Workspace): string[] {
  const found: string[] = [];
  const around = (i: number) => JSON.stringify(text.slice(Math.max(0, i - 60), i + 80));
  const check = (what: string, re: RegExp) => {
    for (const m of text.matchAll(re)) found.push(`${what} at ${around(m.index)}`);
  };
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  check('client secret', new RegExp(escape(secretOf(w)), 'g'));
  check('read-only client secret', new RegExp(escape(secretOf(w, true)), 'g'));
  check('token payload', /eyJjaWQi/g);
  check('token-shaped string', /[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g);
  check('presigned signature', /[?&]sig=|\bsig=[A-Za-z0-9_-]/g);
  check('presigned expiry', /[?&]exp=\d/g);
  check('URL query string', /https?:\/\/[^\s"'<>?#]+[?#](?!\[redacted\])/g);
  check('bearer token', /bearer\s+(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}/gi);
  return found;
}

/**
 * Waits until the daemon (at debug level) logs a "quiet pass" for a pass that STARTED after line index `from`:
 * a pass that planned nothing, so both sides agreed when it looked. A quiet line of a pass begun before the
 * mark (e.g. before the faults were cleared) does not count.
 */
export async function waitForQuietPass(d: DaemonProcess, from: number, timeoutMs: number): Promise<LogLine> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const started = d.lines.findIndex((l, i) => i >= from && l.msg === 'pass starting');
    if (started >= 0) {
      const quiet = d.lines.find((l, i) => i > started && l.msg === 'quiet pass');
      if (quiet) return quiet;
    }
    if (d.child.exitCode !== null || d.child.signalCode !== null) throw new Error(`the daemon exited while waiting for a quiet pass\n${d.tail()}`);
    if (Date.now() > deadline) throw new Error(`no quiet pass within ${timeoutMs} ms\n${d.tail(40)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Remote documents by local path (folder names joined); every path that two documents map to is reported. */
export function remoteByPath(w: Workspace): { tree: Map<string, string>; duplicatePaths: string[] } {
  const c = w.emulator.control;
  const folders = new Map(c.listFolders(w.binderId).map((f) => [f.id, f]));
  const folderPath = (id: string): string => {
    const f = folders.get(id);
    if (!f) throw new Error(`unknown folder ${id}`);
    return f.parentId ? `${folderPath(f.parentId)}/${f.name}` : f.name;
  };
  const tree = new Map<string, string>();
  const duplicatePaths: string[] = [];
  for (const d of c.listDocuments(w.binderId)) {
    const p = `${folderPath(d.folderId)}/${d.fileName}`;
    if (tree.has(p)) duplicatePaths.push(p);
    tree.set(p, sha256(c.readContent(d.id)));
  }
  return { tree, duplicatePaths };
}

/**
 * Documents with two consecutive versions of identical content: one edit committed twice. `allowed` lists
 * contents the test itself wrote twice in a row (none by default).
 */
export function repeatedVersions(w: Workspace, allowed: ReadonlySet<string> = new Set()): string[] {
  const c = w.emulator.control;
  const out: string[] = [];
  for (const d of c.listDocuments(w.binderId)) {
    const hashes = c.listVersions(d.id).map((v) => sha256(c.readContent(d.id, v.id)));
    for (let i = 1; i < hashes.length; i++) {
      if (hashes[i] === hashes[i - 1] && !allowed.has(hashes[i]!)) out.push(`${d.fileName} (${d.id}) versions ${i} and ${i + 1}`);
    }
  }
  return out;
}

/**
 * Documents created twice for one file: two documents whose first versions hold the same content (every test
 * content is unique, so only a repeated create produces this).
 */
export function documentsCreatedTwice(w: Workspace): string[] {
  const c = w.emulator.control;
  const byFirst = new Map<string, string[]>();
  for (const d of c.listDocuments(w.binderId)) {
    const first = c.listVersions(d.id)[0];
    if (!first) continue;
    const h = sha256(c.readContent(d.id, first.id));
    byFirst.set(h, [...(byFirst.get(h) ?? []), `${d.fileName} (${d.id})`]);
  }
  return [...byFirst.values()].filter((names) => names.length > 1).map((names) => names.join(' = '));
}

/** sha256 of a file, or 'missing'. */
export function fileHash(abs: string): string {
  try {
    return createHash('sha256').update(fs.readFileSync(abs)).digest('hex');
  } catch {
    return 'missing';
  }
}

/** The pair's state DB file (what a failed pass must not have changed). */
export function stateDbPath(w: Workspace, pair = 'main'): string {
  return path.join(w.stateDir, pair, 'state.db');
}

/**
 * A digest of everything the pair's state DB holds (every table, row by row) except the `lastError` note (and the
 * service settings it was met with), which a failed pass writes for `status`: equal means the pass changed no sync
 * state. 'missing' when there is no DB.
 */
export function stateDigest(w: Workspace, pair = 'main'): string {
  const file = stateDbPath(w, pair);
  if (!fs.existsSync(file)) return 'missing';
  const db = new Database(file, { readonly: true });
  try {
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map((t) => t.name);
    const dump = tables.map((t) => {
      const rows = db.prepare(`SELECT * FROM "${t}" ORDER BY rowid`).all() as Array<Record<string, unknown>>;
      return [t, t === 'meta' ? rows.filter((r) => r.key !== LAST_ERROR && r.key !== LAST_ERROR_WITH) : rows];
    });
    return createHash('sha256').update(JSON.stringify(dump)).digest('hex');
  } finally {
    db.close();
  }
}

/** Every file and directory under dir with type, size, mtime, inode and content hash: equal means untouched. */
export function deepSnapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (abs: string, rel: string) => {
    if (!fs.existsSync(abs)) return;
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      const a = path.join(abs, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      const st = fs.lstatSync(a);
      if (e.isDirectory()) {
        out.set(`${r}/`, `dir ${st.ino}`);
        walk(a, r);
      } else out.set(r, `${fileHash(a)} ${st.size} ${st.ino} ${st.mtimeMs}`);
    }
  };
  walk(dir, '');
  return out;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Unique content for label, padded to a random size (so transfers of different lengths get truncated/dropped). */
export function contentFor(rng: Rng, label: string, maxPad = 16_000): string {
  return `${label}\n${'.'.repeat(rng.int(0, maxPad))}\n`;
}

export interface ChaosOptions {
  /** Files in the tree: half start remote, half local. */
  files: number;
  /** Share of requests that hit a fault (split over 500, 503, 429, drop, truncate, latency). */
  faultShare: number;
  /** How long the daemon works under faults after the mid-run edits. */
  chaosMs: number;
  quietTimeoutMs: number;
}

export interface ChaosOutcome {
  daemon: DaemonProcess;
  /** What every path must hold at the end (the test wrote all of it). */
  expected: Map<string, string>;
  exitCode: number | null;
  /** Requests answered 5xx/429 or dropped while the faults were on (truncated ones answer 200). */
  faultedRequests: number;
  requests: number;
}

const CHAOS_FOLDERS = ['A', 'B', 'C', 'D/E'] as const;

/**
 * The chaos run: a tree split between both sides, a daemon (`run`, debug level) working under ~faultShare
 * random faults on every route plus token revocations, edits, new files, renames and moves on both sides
 * while it works; then the faults are cleared, the daemon converges (a quiet pass) and is stopped with
 * SIGTERM. Edits touch disjoint files on the two sides, so the final content of every path is known.
 */
export async function runChaosScenario(
  w: Workspace,
  rng: Rng,
  o: ChaosOptions,
  start: (env: NodeJS.ProcessEnv) => DaemonProcess,
): Promise<ChaosOutcome> {
  const c = w.emulator.control;
  const a = c.createFolder(w.binderId, { name: 'A' });
  const b = c.createFolder(w.binderId, { name: 'B' });
  const cc = c.createFolder(w.binderId, { name: 'C' });
  const dd = c.createFolder(w.binderId, { name: 'D' });
  const e = c.createFolder(w.binderId, { name: 'E', parentId: dd.id });
  const folderIds: Record<(typeof CHAOS_FOLDERS)[number], string> = { A: a.id, B: b.id, C: cc.id, 'D/E': e.id };
  const expected = new Map<string, string>();
  const remote: Array<{ id: string; dir: (typeof CHAOS_FOLDERS)[number]; name: string }> = [];
  const local: string[] = [];
  const half = Math.floor(o.files / 2);
  for (let i = 0; i < half; i++) {
    const dir = rng.pick(CHAOS_FOLDERS);
    const name = `r-${i}.txt`;
    const content = contentFor(rng, `remote ${rng.seed} ${i} v1`);
    const { document } = c.addDocument(w.binderId, folderIds[dir], name, content);
    remote.push({ id: document.id, dir, name });
    expected.set(`${dir}/${name}`, content);
  }
  for (let i = 0; i < o.files - half; i++) {
    const rel = `${rng.pick(CHAOS_FOLDERS)}/l-${i}.txt`;
    const content = contentFor(rng, `local ${rng.seed} ${i} v1`);
    fs.mkdirSync(path.dirname(path.join(w.local, rel)), { recursive: true });
    fs.writeFileSync(path.join(w.local, rel), content);
    local.push(rel);
    expected.set(rel, content);
  }

  // Six fault kinds drawn independently on every request; together about faultShare of all requests.
  const each = 1 - (1 - o.faultShare) ** (1 / 6);
  c.injectFault({ route: '*', status: 500, probability: each });
  c.injectFault({ route: '*', status: 503, probability: each });
  c.injectFault({ route: '*', status: 429, retryAfterSeconds: 1, probability: each });
  c.injectFault({ route: '*', drop: true, probability: each });
  c.injectFault({ route: '*', truncate: true, probability: each });
  c.injectFault({ route: '*', latencyMs: 400, probability: each });
  c.resetCounters();

  const d = start({ BINDER_SYNC_LOG_LEVEL: 'debug', BINDER_SYNC_POLL_INTERVAL_MS: '1000' });
  // Tokens revoked every 1.5 s: passes keep running into a 401 mid-flight.
  const revoke = setInterval(() => c.expireTokens(), 1500);
  // The emulator keeps the last 1000 requests: take them and clear the log often enough to see every one (it
  // runs in this process, so nothing lands between the read and the reset).
  const seen: RequestRecord[] = [];
  const sample = () => {
    seen.push(...c.lastRequests(1000));
    c.resetCounters();
  };
  const sampler = setInterval(sample, 200);
  let faultedRequests = 0;
  let requests = 0;
  try {
    // Let the first pass get under way, then change both sides while it works.
    await d.waitForLog((l) => l.msg === 'uploaded' || l.msg === 'downloaded', 30_000, 'the first transfer');
    await sleep(rng.int(200, 1200));
    const share = (n: number) => Math.max(1, Math.round(n * 0.15));
    for (const rel of rng.sample(local, share(local.length))) {
      const content = contentFor(rng, `local edit ${rng.seed} ${rel}`);
      fs.writeFileSync(path.join(w.local, rel), content);
      expected.set(rel, content);
    }
    const shuffled = rng.sample(remote, remote.length);
    const edits = shuffled.slice(0, share(remote.length));
    const renames = shuffled.slice(edits.length, edits.length + share(remote.length / 3));
    const moves = shuffled.slice(edits.length + renames.length, edits.length + renames.length + share(remote.length / 3));
    for (const r of edits) {
      const content = contentFor(rng, `remote edit ${rng.seed} ${r.id}`);
      c.addVersion(r.id, content);
      expected.set(`${r.dir}/${r.name}`, content);
    }
    for (const r of renames) {
      const from = `${r.dir}/${r.name}`;
      const content = expected.get(from)!;
      expected.delete(from);
      r.name = r.name.replace('.txt', '-renamed.txt');
      c.renameDocument(r.id, r.name);
      expected.set(`${r.dir}/${r.name}`, content);
    }
    for (const r of moves) {
      const from = `${r.dir}/${r.name}`;
      const content = expected.get(from)!;
      expected.delete(from);
      r.dir = rng.pick(CHAOS_FOLDERS.filter((x) => x !== r.dir));
      c.moveDocument(r.id, folderIds[r.dir]);
      expected.set(`${r.dir}/${r.name}`, content);
    }
    for (let i = 0; i < share(half / 3); i++) {
      const dir = rng.pick(CHAOS_FOLDERS);
      const content = contentFor(rng, `remote new ${rng.seed} ${i}`);
      c.addDocument(w.binderId, folderIds[dir], `rn-${i}.txt`, content);
      expected.set(`${dir}/rn-${i}.txt`, content);
      const rel = `${rng.pick(CHAOS_FOLDERS)}/ln-${i}.txt`;
      const lc = contentFor(rng, `local new ${rng.seed} ${i}`);
      fs.writeFileSync(path.join(w.local, rel), lc);
      expected.set(rel, lc);
    }
    await sleep(o.chaosMs);
  } finally {
    clearInterval(revoke);
    clearInterval(sampler);
    sample();
    requests = seen.length;
    faultedRequests = seen.filter((r) => r.status === 0 || r.status >= 500 || r.status === 429).length;
    c.clearFaults();
  }
  const mark = d.lines.length;
  await waitForQuietPass(d, mark, o.quietTimeoutMs);
  d.kill('SIGTERM');
  const exit = await d.exited;
  return { daemon: d, expected, exitCode: exit.code, faultedRequests, requests };
}

/** Every `.binder-sync-tmp-*` path under the local root and the stateDir. */
export function leftoverTemps(w: Workspace): string[] {
  const out: string[] = [];
  const walk = (abs: string, rel: string) => {
    if (!fs.existsSync(abs)) return;
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      const r = `${rel}/${e.name}`;
      if (e.name.startsWith('.binder-sync-tmp-')) out.push(r);
      if (e.isDirectory()) walk(path.join(abs, e.name), r);
    }
  };
  walk(w.local, 'local');
  walk(w.stateDir, 'state');
  return out;
}

/** The chaos run's end state: both sides hold exactly `expected`, nothing doubled, no temp, no leak. */
export function expectChaosInvariants(w: Workspace, o: ChaosOutcome, seed: number): void {
  const why = `seed ${seed} (replay with the same *_SEED env)\n${o.daemon.tail(30)}`;
  expect(o.exitCode, `SIGTERM exit\n${why}`).toBe(0);
  // The faults really happened (else this would prove nothing).
  expect(o.faultedRequests, `faulted requests of ${o.requests}`).toBeGreaterThan(o.requests * 0.05);
  const want = new Map([...o.expected].map(([p, content]) => [p, sha256(content)]));
  const localSide = localTreeOf(w.local);
  const { tree: remoteSide, duplicatePaths } = remoteByPath(w);
  expect(duplicatePaths, why).toEqual([]);
  expect(diffTrees(localSide, want), `local vs expected; ${why}`).toEqual([]);
  expect(diffTrees(remoteSide, want), `remote vs expected; ${why}`).toEqual([]);
  expect(w.emulator.control.listDocuments(w.binderId).length).toBe(want.size);
  expect(repeatedVersions(w), why).toEqual([]);
  expect(documentsCreatedTwice(w), why).toEqual([]);
  expect(leftoverTemps(w), why).toEqual([]);
  expect(leaksIn(`${o.daemon.stdout}\n${o.daemon.stderr}`, w)).toEqual([]);
}

/** For failure messages: the first line of the local file and of every version of the document at each path. */
function describePaths(w: Workspace, paths: string[]): string {
  const c = w.emulator.control;
  const folders = new Map(c.listFolders(w.binderId).map((f) => [f.id, f]));
  const folderPath = (id: string): string => {
    const f = folders.get(id)!;
    return f.parentId ? `${folderPath(f.parentId)}/${f.name}` : f.name;
  };
  const first = (b: Buffer) => b.toString('utf8').split('\n')[0];
  return paths
    .map((p) => {
      const abs = path.join(w.local, p);
      const localLine = fs.existsSync(abs) ? first(fs.readFileSync(abs)) : '(none)';
      const doc = c.listDocuments(w.binderId).find((d) => `${folderPath(d.folderId)}/${d.fileName}` === p);
      const versions = doc ? c.listVersions(doc.id).map((v) => `${v.version}:${first(c.readContent(doc.id, v.id))}`).join(' | ') : '(none)';
      return `${p}: local "${localLine}"; remote ${doc?.id ?? ''} versions ${versions}`;
    })
    .join('\n');
}

/** Paths that differ between two path -> hash maps, as readable strings (sorted). */
export function diffTrees(actual: Map<string, string>, want: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [p, h] of want) if (actual.get(p) !== h) out.push(`${p}: ${actual.has(p) ? 'different content' : 'missing'}`);
  for (const p of actual.keys()) if (!want.has(p)) out.push(`${p}: unexpected`);
  return out.sort();
}

/** Regular files under dir as relative path -> sha256. */
export function localTreeOf(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [rel, v] of deepSnapshot(dir)) if (!rel.endsWith('/')) out.set(rel, v.split(' ')[0]!);
  return out;
}

export interface KillRunOptions {
  kills: number;
  /** A kill lands this long (ms, uniform) after the daemon was spawned; it needs ~0.3 s to start. */
  killAfterMs: [number, number];
  /** Random changes made before and while each daemon runs. */
  opsPerRound: number;
}

export interface KillRunOutcome {
  /** Every content the test wrote on either side (each unique, each path written at most once locally). */
  written: string[];
  /** Daemons that were still running when killed (the rest ended on their own: a failure). */
  killedRunning: number;
  /** Output of all daemons, for the leak check. */
  output: string;
}

/**
 * The random-kill run: a synced base of remote documents, then `kills` rounds of: random changes on both sides
 * (local new files and edits, remote new documents, versions, renames and moves, and both sides editing one
 * file), a daemon started, more changes while it works, and a SIGKILL at a random instant. Storage answers a
 * little slowly so the kills land inside transfers too.
 */
export async function runRandomKills(
  w: Workspace,
  rng: Rng,
  o: KillRunOptions,
  start: () => DaemonProcess,
): Promise<KillRunOutcome> {
  const c = w.emulator.control;
  const dirs = ['A', 'B', 'C'] as const;
  const folders = Object.fromEntries(dirs.map((n) => [n, c.createFolder(w.binderId, { name: n }).id])) as Record<(typeof dirs)[number], string>;
  const written: string[] = [];
  const docs: Array<{ id: string; dir: (typeof dirs)[number]; name: string }> = [];
  let n = 0;
  const fresh = (what: string) => contentFor(rng, `${what} ${rng.seed} #${++n}`, 24_000);
  const addRemote = () => {
    const dir = rng.pick(dirs);
    const name = `r${++n}.txt`;
    const content = fresh('remote new');
    docs.push({ id: c.addDocument(w.binderId, folders[dir], name, content).document.id, dir, name });
    written.push(content);
  };
  for (let i = 0; i < 20; i++) addRemote();
  await expectConvergedPass(w);
  // What the test has written locally: each path, and each document's file, at most once, so no test write
  // ever overwrites content the daemon had no chance to see (that loss would be the test's, not the daemon's).
  // A document counts as well as its path: the daemon moves an edited file along with a remote rename, and a
  // second edit at the new path would overwrite the first one, as a user who saves over their own unsynced
  // edit would (seed 222706863 did that, 53 ms after the move).
  const touched = new Set<string>();
  const writeLocalOnce = (rel: string, what: string, documentId?: string): boolean => {
    const doc = documentId === undefined ? undefined : `document ${documentId}`;
    if (touched.has(rel) || (doc !== undefined && touched.has(doc))) return false;
    touched.add(rel);
    if (doc !== undefined) touched.add(doc);
    const content = fresh(what);
    fs.mkdirSync(path.dirname(path.join(w.local, rel)), { recursive: true });
    fs.writeFileSync(path.join(w.local, rel), content);
    written.push(content);
    return true;
  };
  const ops: Array<() => void> = [
    () => writeLocalOnce(`${rng.pick(dirs)}/l${++n}.txt`, 'local new'),
    () => {
      const d = rng.pick(docs);
      writeLocalOnce(`${d.dir}/${d.name}`, 'local edit', d.id);
    },
    addRemote,
    () => {
      const content = fresh('remote version');
      c.addVersion(rng.pick(docs).id, content);
      written.push(content);
    },
    () => {
      const d = rng.pick(docs);
      d.name = `r${++n}.txt`;
      c.renameDocument(d.id, d.name);
    },
    () => {
      // Never into a folder that already holds a document of that name: two documents at one path would be
      // this test's doing, not the daemon's, and the check below reads any such pair as a duplicate upload
      // (seed 256884401: a local edit written at a renamed document's new path before the daemon had moved
      // the file there became a new document, rightly, and a later move put the original beside it).
      const d = rng.pick(docs);
      const to = rng.pick(dirs.filter((x) => x !== d.dir));
      if (c.listDocuments(w.binderId).some((o) => o.folderId === folders[to] && o.fileName === d.name)) return;
      d.dir = to;
      c.moveDocument(d.id, folders[d.dir]);
    },
    () => {
      // Both sides edit one document: a conflict when neither side has synced the other's edit yet.
      const d = rng.pick(docs);
      if (!writeLocalOnce(`${d.dir}/${d.name}`, 'conflict local', d.id)) return;
      const content = fresh('conflict remote');
      c.addVersion(d.id, content);
      written.push(content);
    },
  ];
  const randomOps = (k: number) => {
    for (let i = 0; i < k; i++) rng.pick(ops)();
  };

  c.injectFault({ route: 'storage-get', latencyMs: 150, probability: 0.5 });
  c.injectFault({ route: 'storage-put', latencyMs: 150, probability: 0.5 });
  c.injectFault({ route: 'commit', latencyMs: 100, probability: 0.5 });
  let output = '';
  let killedRunning = 0;
  for (let round = 0; round < o.kills; round++) {
    randomOps(Math.ceil(o.opsPerRound / 2));
    const d = start();
    const spawned = Date.now();
    const killAt = rng.int(o.killAfterMs[0], o.killAfterMs[1]);
    await sleep(rng.int(0, killAt));
    randomOps(Math.floor(o.opsPerRound / 2));
    await sleep(Math.max(0, killAt - (Date.now() - spawned)));
    if (d.child.exitCode === null && d.child.signalCode === null) killedRunning++;
    d.kill('SIGKILL');
    await d.exited;
    output += `${d.stdout}\n${d.stderr}\n`;
  }
  c.clearFaults();
  return { written, killedRunning, output };
}

/**
 * The whole random-kill test (test/e2e/crash-random and its soak): a workspace, `o.kills` daemons killed at
 * random instants (polling every 500 ms), then the invariants. Cleans up after itself.
 */
export async function randomKillTest(rng: Rng, o: KillRunOptions): Promise<void> {
  const w = await createWorkspace();
  const daemons: DaemonProcess[] = [];
  try {
    writeRunConfig(w);
    const outcome = await runRandomKills(w, rng, o, () => {
      const d = startDaemonProcess(w, { env: { BINDER_SYNC_POLL_INTERVAL_MS: '500' } });
      daemons.push(d);
      return d;
    });
    await expectKillRunInvariants(w, outcome, rng.seed, o.kills);
  } finally {
    for (const d of daemons) await d.dispose();
    await w.close();
  }
}

/** After the kills: ordinary `sync` runs converge, then both sides agree and nothing is lost or doubled. */
export async function expectKillRunInvariants(w: Workspace, o: KillRunOutcome, seed: number, kills?: number): Promise<void> {
  const why = (more = '') => `seed ${seed} (replay with CRASH_SEED=${seed})${more ? `\n${more}` : ''}`;
  if (kills !== undefined) expect(o.killedRunning, why(`daemons that ended on their own:\n${o.output.slice(-3000)}`)).toBe(kills);
  const runs: SyncRun[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await syncJson(w);
    runs.push(r);
    if (r.code === 0 && r.report?.converged) break;
  }
  const last = runs[runs.length - 1]!;
  expect(last.code, why(runs.map(explain).join('\n---\n'))).toBe(0);
  // Stays converged: a wrong base row would show up as another transfer here.
  const quiet = await syncJson(w);
  expect(quiet.code, why(explain(quiet))).toBe(0);
  expect(quiet.report?.actions, why(explain(quiet))).toEqual([]);

  const { tree: remoteSide, duplicatePaths } = remoteByPath(w);
  expect(duplicatePaths, why()).toEqual([]);
  const differ = diffTrees(localTreeOf(w.local), remoteSide);
  expect(differ, why(`local vs remote\n${describePaths(w, differ.map((d) => d.split(': ')[0]!))}\nlast sync:\n${explain(quiet)}`)).toEqual([]);
  const everywhere = everyContentHash(w);
  const lost = o.written.filter((content) => !everywhere.has(sha256(content))).map((content) => content.split('\n')[0]);
  expect(lost, why('contents found nowhere (local, trash, any remote version)')).toEqual([]);
  expect(repeatedVersions(w), why()).toEqual([]);
  expect(documentsCreatedTwice(w), why()).toEqual([]);
  expect(leftoverTemps(w), why()).toEqual([]);
  expect(leaksIn(o.output, w), why()).toEqual([]);
}
