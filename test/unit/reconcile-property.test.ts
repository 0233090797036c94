// Property-based tests of reconcile: invariants over random three-way states, and a simulation of both sides
// with random edits and sync passes that must converge without losing content. SOAK=1 runs many more cases.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Action, BaseEntry, FileStat, Plan, ReconcileContext } from '../../src/sync/model.js';
import { parentOf, pathKey } from '../../src/sync/path-key.js';
import { reconcile } from '../../src/sync/reconcile.js';
import { writesOf } from '../../src/sync/reconcile-builder.js';
import { ctxOf, deepFreeze, World } from './reconcile-fixtures.js';
import { runSimulation, simOpArb, type SimOp } from './reconcile-sim.js';

const SOAK = process.env.SOAK === '1';
const runs = (normal: number) => (SOAK ? Number(process.env.SOAK_RUNS ?? normal * 50) : normal);
const timeout = SOAK ? 3_600_000 : 30_000;
/**
 * SOAK_SEED replays the seed fast-check printed for a failing soak run (with the same SOAK_RUNS or more). Random
 * seeds are the soak's (SOAK=1), as in the crash simulation: the normal suite runs a fixed set, so that a rare
 * corner does not turn one CI run red by chance (one did, unreproduced in 60 runs after); the soak finds such
 * corners, and each becomes a fixed case below.
 */
const seeded = process.env.SOAK_SEED !== undefined ? { seed: Number(process.env.SOAK_SEED) } : SOAK ? {} : { seed: 20_261_128 };

const PATHS = ['A/a.txt', 'A/b.txt', 'B/a.txt', 'B/b.txt', 'C/a.txt', 'a.txt', 'A/S/a.txt', 'A/S'];
const pathArb = fc.nat(PATHS.length - 1).map((i) => PATHS[i] ?? 'A/a.txt');
const shaArb = fc.constantFrom('s1', 's2', 's3');
const remoteModeArb = fc.constantFrom('same', 'modified', 'moved', 'moved-modified', 'gone', 'unknown');

const stateArb = fc.record({
  base: fc.array(fc.record({ path: pathArb, sha: shaArb }), { maxLength: 5 }),
  local: fc.array(fc.record({ path: pathArb, sha: shaArb, touched: fc.boolean() }), { maxLength: 6 }),
  problems: fc.array(fc.record({ path: fc.constantFrom('A/a.txt', 'B', 'A/S/a.txt'), reason: fc.constantFrom('unreadable', 'changing') as fc.Arbitrary<'unreadable' | 'changing'> }), { maxLength: 1 }),
  remote: fc.array(fc.record({ mode: remoteModeArb, path: pathArb }), { minLength: 5, maxLength: 5 }),
  remoteNew: fc.array(pathArb, { maxLength: 3 }),
  folderB: fc.boolean(),
  folderC: fc.boolean(),
  /** A folder renamed on the service (B to R, or A/S to A/T), its documents with it: what a directory move follows. */
  renamed: fc.constantFrom('none', 'B', 'S'),
  ctx: fc.record({
    direction: fc.constantFrom('both', 'download', 'upload') as fc.Arbitrary<ReconcileContext['direction']>,
    conflictPolicy: fc.constantFrom('keep-both', 'remote-wins', 'local-wins') as fc.Arbitrary<ReconcileContext['conflictPolicy']>,
    localDeletePolicy: fc.constantFrom('restore', 'forget') as fc.Arbitrary<ReconcileContext['localDeletePolicy']>,
    force: fc.boolean(),
    maxDeleteShare: fc.constantFrom(0.25, 0.5, 1),
  }),
  reverse: fc.boolean(),
});
type State = typeof stateArb extends fc.Arbitrary<infer T> ? T : never;

/** Builds the world; `reverse` inserts everything in the opposite order (same content, other Map order). */
function build(st: State, reverse: boolean): World {
  const w = new World();
  const rev = <T>(xs: T[]) => (reverse ? [...xs].reverse() : xs);
  const folders: Array<[string, string, string | null]> = [['fA', 'A', null], ['fS', st.renamed === 'S' ? 'A/T' : 'A/S', 'fA']];
  if (st.folderB) folders.push(['fB', st.renamed === 'B' ? 'R' : 'B', null]);
  if (st.folderC) folders.push(['fC', 'C', null]);
  for (const [id, p, parent] of rev(folders)) w.folder(id, p, parent);
  // Where a path's folder is now on the service (only a folder that exists is renamed).
  const remotePath = (p: string) =>
    st.renamed === 'B' && st.folderB && p.startsWith('B/') ? `R/${p.slice(2)}` : st.renamed === 'S' && p.startsWith('A/S/') ? `A/T/${p.slice(4)}` : p;
  const folderOf = (p: string) => w.remote.folders.get(parentOf(p) === 'A' ? 'fA' : parentOf(p) === 'B' ? 'fB' : parentOf(p) === 'C' ? 'fC' : 'fS')?.folderId ?? 'fA';
  const baseRows: Array<{ id: string; path: string; sha: string }> = [];
  for (const [i, b] of st.base.entries()) if (!baseRows.some((x) => x.path === b.path) && b.path !== 'A/S') baseRows.push({ id: `d${i}`, path: b.path, sha: b.sha });
  const usedRemote = new Set<string>();
  const docs: Array<() => void> = [];
  for (const [i, b] of baseRows.entries()) {
    const r = st.remote[i] ?? { mode: 'same', path: b.path };
    const at = r.mode === 'moved' || r.mode === 'moved-modified' ? r.path : b.path;
    const folderId = folderOf(at);
    const target = remotePath(at);
    if (r.mode === 'gone') docs.push(() => w.gone(b.id));
    else if (r.mode !== 'unknown' && !usedRemote.has(target) && target !== 'A/S') {
      usedRemote.add(target);
      const version = r.mode === 'modified' || r.mode === 'moved-modified' ? 'v2' : 'v1';
      docs.push(() => w.doc(b.id, target, version, folderId));
    }
  }
  for (const [i, p0] of st.remoteNew.entries()) {
    const p = remotePath(p0);
    if (!usedRemote.has(p) && p !== 'A/S') { usedRemote.add(p); docs.push(() => w.doc(`n${i}`, p, 'v1', 'fA')); }
  }
  for (const f of rev(docs)) f();
  // Each row in its path's folder, as a synced file is: a folder renamed on the service keeps its documents' folder.
  for (const b of rev(baseRows)) w.baseRow(b.id, b.path, 'v1', folderOf(b.path), b.sha);
  // A file at A/S replaced the remote folder's directory locally (rm -r A/S; echo > A/S), unless files lie
  // under A/S: a path is not both a file and a directory.
  const sIsDir = st.local.some((f) => f.path.startsWith('A/S/'));
  const firstPerPath = st.local.filter((f, i) => st.local.findIndex((g) => g.path === f.path) === i && !(f.path === 'A/S' && sIsDir));
  for (const f of rev(firstPerPath)) w.file(f.path, f.sha, f.touched ? { mtimeMs: 1 } : {});
  w.dir('A');
  if (!w.local.files.has('A/S')) w.dir('A/S');
  for (const p of st.problems) w.problem(p.path, p.reason);
  return w;
}

function sameStat(a: FileStat | undefined, b: FileStat | null): boolean {
  if (b === null) return a === undefined;
  return a !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs && a.inode === b.inode && a.ctimeMs === b.ctimeMs;
}

/** Replays groups over a model of the local disk, in the given order, checking every expectation. */
function replay(w: World, groups: Action[][], base: Map<string, BaseEntry>): string | null {
  const disk = new Map<string, FileStat & { sha: string }>([...w.local.files].map(([k, f]) => [k, { ...f, sha: f.sha256 as string }]));
  let marker = 0;
  const fresh = (sha: string) => ({ size: 1, mtimeMs: -++marker, inode: -marker, ctimeMs: -marker, sha });
  for (const g of groups)
    for (const a of g) {
      const k = (p: string) => pathKey(p, false);
      switch (a.kind) {
        case 'download': {
          const cur = disk.get(a.key);
          if (!sameStat(cur, a.expectLocal)) return `download ${a.relPath}: expectLocal differs`;
          // A look, not an overwrite: the latest replaces the file only when its content is an earlier version the
          // service holds (the executor's checkPutBack), so nothing is lost either way; only a file put back with
          // an old time is looked at, with the hash the scan read.
          if (a.reason === 'earlier-version-put-back') {
            const b = base.get(a.doc.documentId);
            if (cur === undefined || b === undefined || cur.mtimeMs >= b.mtimeMs || cur.sha !== a.localSha256) return `check ${a.relPath}: not a file put back with an old time`;
            break;
          }
          if (cur && cur.sha !== base.get(a.doc.documentId)?.sha256) return `download ${a.relPath} overwrites content that is not the base`;
          disk.set(a.key, fresh(`remote:${a.doc.versionId}`));
          break;
        }
        case 'upload':
          if (!sameStat(disk.get(a.key), a.local)) return `upload ${a.relPath}: local differs`;
          break;
        case 'move-local': {
          const cur = disk.get(k(a.from));
          if (!sameStat(cur, a.expectLocal) || disk.has(a.toKey)) return `move ${a.from}: expectation differs`;
          disk.delete(k(a.from));
          disk.set(a.toKey, cur as FileStat & { sha: string });
          break;
        }
        case 'move-dir-local': {
          // Everything under the directory moves (synced or not), onto a place where nothing is: each synced file
          // it names must be there as the plan saw it.
          const under = (key: string, dir: string) => key === dir || key.startsWith(`${dir}/`);
          if ([...disk.keys()].some((key) => under(key, a.toKey))) return `move-dir ${a.from}: something is at ${a.to}`;
          for (const f of a.files) if (!sameStat(disk.get(k(f.from)), f.expectLocal)) return `move-dir ${a.from}: ${f.from} differs`;
          for (const [key, f] of [...disk]) {
            if (!under(key, a.fromKey)) continue;
            disk.delete(key);
            disk.set(a.toKey + key.slice(a.fromKey.length), f);
          }
          break;
        }
        case 'trash-local': {
          const cur = disk.get(a.key);
          if (!sameStat(cur, a.expectLocal)) return `trash ${a.relPath}: expectLocal differs`;
          if (cur?.sha !== base.get(a.documentId)?.sha256) return `trash ${a.relPath}: content modified relative to base`;
          disk.delete(a.key);
          break;
        }
        case 'conflict':
          if (!sameStat(disk.get(a.key), a.local)) return `conflict ${a.relPath}: local differs`;
          if (disk.has(k(a.conflictPath))) return `conflict copy ${a.conflictPath} exists`;
          break;
        default:
          break;
      }
    }
  return null;
}

const LOCAL_CHANGING: ReadonlySet<Action['kind']> = new Set(['download', 'move-local', 'move-dir-local', 'trash-local', 'mkdir-local', 'conflict']);

function checkInvariants(w: World, ctx: ReconcileContext, plan: Plan): string | null {
  const base = w.base;
  const all = plan.groups.flat();
  // (a) + (b): every expectation holds, whatever order independent groups run in
  const r1 = replay(w, plan.groups, base) ?? replay(w, [...plan.groups].reverse(), base);
  if (r1) return r1;
  // (c) direction
  if (ctx.direction === 'download' && all.some((a) => a.kind === 'upload')) return 'upload in download mode';
  // An upload-only pair's conflict only compares, then uploads (local-wins, keepLocal): it changes nothing locally.
  const changesLocal = (a: Action) => LOCAL_CHANGING.has(a.kind) && !(a.kind === 'conflict' && a.keepLocal && a.policy === 'local-wins');
  if (ctx.direction === 'upload' && all.some(changesLocal)) return 'local change in upload mode';
  // (d) every new or modified local file is uploaded, part of a conflict, moved, or reported
  const unknown = (key: string) => w.local.problems.some((p) => key === p.key || key.startsWith(`${p.key}/`));
  const baseAt = new Map([...base.values()].map((b) => [b.key, b]));
  if (!plan.blocked)
    for (const f of w.local.files.values()) {
      const b = baseAt.get(f.key);
      if (unknown(f.key) || (b && b.sha256 === f.sha256)) continue;
      if (b && !w.remote.docs.has(b.documentId) && !w.remote.gone.has(b.documentId)) continue; // remote unknown
      // The same rename made on both sides: the file is the document's own, unchanged content. An adopt that
      // records it here, or a download of the document's newer version over it, syncs it. Names swapped alike
      // (a rename cycle) are one adopt whose other rows go `alongside` (one transaction): each row counts.
      // A document's own unchanged file, moved with its folder, trashed when the document's new name is taken
      // locally (its content is a remote version): synced as well.
      const adopted = (a: Action) => (a.kind === 'adopt' && [a.base, ...(a.alongside ?? [])].some((row) => row.key === f.key && row.sha256 === f.sha256))
        || (a.kind === 'download' && a.key === f.key && base.get(a.doc.documentId)?.sha256 === f.sha256)
        || (a.kind === 'trash-local' && a.key === f.key && a.reason === 'replaced-by-remote-move' && base.get(a.documentId)?.sha256 === f.sha256);
      const handled = all.some((a) => (a.kind === 'upload' || a.kind === 'conflict') ? a.key === f.key : (a.kind === 'move-local' && pathKey(a.from, false) === f.key)
        || (a.kind === 'move-dir-local' && f.key.startsWith(`${a.fromKey}/`)) || adopted(a))
        || plan.issues.some((i) => pathKey(i.relPath, false) === f.key);
      if (!handled) return `local change at ${f.relPath} neither synced nor reported`;
    }
  // (e) no two groups write one key
  const owner = new Map<string, number>();
  for (const [gi, g] of plan.groups.entries())
    for (const a of g)
      for (const key of writesOf(a, false)) {
        if (owner.has(key) && owner.get(key) !== gi) return `two groups write ${key}`;
        owner.set(key, gi);
      }
  // unknown is never acted on
  for (const a of all) {
    const touched = a.kind === 'move-local' ? [pathKey(a.from, false), a.toKey] : a.kind === 'move-dir-local' ? [a.fromKey, ...writesOf(a, false), ...a.files.map((f) => pathKey(f.from, false))] : a.kind === 'forget' || a.kind === 'adopt' ? [base.get(a.kind === 'forget' ? a.documentId : a.base.documentId)?.key ?? ''] : writesOf(a, false).concat(a.kind === 'trash-local' ? [a.key] : []);
    if (a.kind !== 'upload' && touched.some((k) => k !== '' && unknown(k))) return `${a.kind} touches an unknown path`;
  }
  return null;
}

// States the invariants failed on in soak runs (shrunk by fast-check), kept as fixed cases. `why` says what it caught.
const FOUND_STATES: Array<{ why: string; state: State }> = [
  {
    // An upload-only pair takes a file at a document's new name for a hard link of the document's own file (one
    // inode at both paths): not when the row's path is one the scan could not look at, whose file is only what an
    // earlier scan saw (seed 2132646948: the file at A/a.txt was neither synced nor reported).
    why: 'a hard link of a synced file is only told where the scan looked at that file\'s path',
    state: {
      base: [{ path: 'B/b.txt', sha: 's2' }],
      local: [{ path: 'A/a.txt', sha: 's2', touched: false }, { path: 'B/b.txt', sha: 's2', touched: false }],
      problems: [{ path: 'B', reason: 'unreadable' }],
      remote: [{ mode: 'moved-modified', path: 'A/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'upload', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // d0's own file (its inode) in its folder's new place, and a file at its old path in a folder that could not
    // be read: that file was taken for a stranger's and kept as a new file, a step on an unknown path (seed
    // -71719798). What the scan could not look at is left as it is.
    why: 'a file at a path the scan could not look at is never taken for a stranger\'s',
    state: {
      base: [{ path: 'B/a.txt', sha: 's1' }],
      local: [{ path: 'A/a.txt', sha: 's1', touched: false }, { path: 'B/a.txt', sha: 's2', touched: false }],
      problems: [{ path: 'B', reason: 'unreadable' }],
      remote: [{ mode: 'moved', path: 'A/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // d0's own file (its inode) is in its folder's new place (A/S/a.txt), a stranger's file at its old path; the
    // document's rename cannot be followed (folder B unreadable): said at both paths (seed -475899623).
    why: "a stranger's file at the old path of a file moved with its folder is said when the rename waits",
    state: {
      base: [{ path: 'a.txt', sha: 's3' }],
      local: [{ path: 'a.txt', sha: 's1', touched: false }, { path: 'A/S/a.txt', sha: 's3', touched: false }],
      problems: [{ path: 'B', reason: 'unreadable' }],
      remote: [{ mode: 'moved', path: 'B/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // The same, with the document's new path held by a new local file (compared with the document): the
    // stranger at the old path stays a new local file too.
    why: "a stranger's file at the old path of a file moved with its folder is kept when the new path is taken",
    state: {
      base: [{ path: 'a.txt', sha: 's1' }],
      local: [{ path: 'A/S/a.txt', sha: 's1', touched: false }, { path: 'C/a.txt', sha: 's3', touched: false }, { path: 'a.txt', sha: 's2', touched: false }],
      problems: [],
      remote: [{ mode: 'moved', path: 'C/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // d0 (C/a.txt) and d3 (A/b.txt) swapped paths on both sides: the plan is one adopt moving both rows with their
    // files (renamed-alike), which syncs A/b.txt; the invariant looked only at the adopt's first row, not at the
    // rows alongside it (seed 890515221; a model bug, the plan was right).
    why: 'names swapped alike: the rows an adopt moves alongside its first one sync their files too',
    state: {
      base: [{ path: 'C/a.txt', sha: 's3' }, { path: 'A/a.txt', sha: 's1' }, { path: 'B/a.txt', sha: 's1' }, { path: 'A/b.txt', sha: 's2' }],
      local: [{ path: 'C/a.txt', sha: 's2', touched: false }, { path: 'A/b.txt', sha: 's3', touched: false }],
      problems: [],
      remote: [{ mode: 'moved', path: 'A/b.txt' }, { mode: 'same', path: 'A/a.txt' }, { mode: 'same', path: 'A/a.txt' }, { mode: 'moved', path: 'C/a.txt' }, { mode: 'same', path: 'A/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // d2's file (B/a.txt) renamed alike to A/a.txt, where its document is now, but folder B could not be read:
    // the file may still be at B/a.txt, so nothing says A/a.txt is d2's file (the adopt touched an unknown path).
    why: 'a file is followed as renamed alike only when its old path was looked at',
    state: {
      base: [{ path: 'A/b.txt', sha: 's1' }, { path: 'A/a.txt', sha: 's1' }, { path: 'B/a.txt', sha: 's3' }],
      local: [{ path: 'A/a.txt', sha: 's3', touched: false }],
      problems: [{ path: 'B', reason: 'unreadable' }],
      remote: [{ mode: 'same', path: 'A/a.txt' }, { mode: 'moved-modified', path: 'C/a.txt' }, { mode: 'moved', path: 'A/a.txt' }, { mode: 'same', path: 'A/a.txt' }, { mode: 'same', path: 'A/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // d4's file renamed alike to B/b.txt, where d1's row is, in an upload-only pair: once such a pair read it as
    // not d1's without following it (d1 planned as deleted, the file at B/b.txt left unsaid). Since round 38b F5b
    // the pair's row follows a file renamed alike: the file is d4's, d1 is a local delete, said so.
    why: 'an upload-only pair: a file renamed alike onto another row\'s path is followed or said, never left unsaid',
    state: {
      base: [{ path: 'A/b.txt', sha: 's1' }, { path: 'B/b.txt', sha: 's2' }, { path: 'C/a.txt', sha: 's1' }, { path: 'A/a.txt', sha: 's1' }, { path: 'B/a.txt', sha: 's1' }],
      local: [{ path: 'B/b.txt', sha: 's1', touched: false }],
      problems: [],
      remote: [{ mode: 'same', path: 'A/a.txt' }, { mode: 'gone', path: 'A/a.txt' }, { mode: 'same', path: 'A/a.txt' }, { mode: 'same', path: 'A/a.txt' }, { mode: 'moved', path: 'B/b.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'upload', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // Names swapped alike (d2's file at A/S/a.txt, d3's at A/b.txt, the same renames on the service) in an
    // upload-only pair: the rows follow the files in one step; d2's remote version, which such a pair does not
    // download, was planned as a download (soak seed -1304179557, after round 38b F5b).
    why: 'an upload-only pair follows names swapped alike without a download',
    state: {
      base: [{ path: 'A/a.txt', sha: 's1' }, { path: 'B/a.txt', sha: 's1' }, { path: 'A/b.txt', sha: 's2' }, { path: 'A/S/a.txt', sha: 's3' }],
      local: [{ path: 'A/b.txt', sha: 's3', touched: false }, { path: 'A/S/a.txt', sha: 's2', touched: false }],
      problems: [],
      remote: [{ mode: 'same', path: 'A/a.txt' }, { mode: 'same', path: 'A/a.txt' }, { mode: 'moved-modified', path: 'A/S/a.txt' }, { mode: 'moved', path: 'A/b.txt' }, { mode: 'same', path: 'A/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'upload', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // A rename cycle of rows (d1 -> C/a.txt held by d3, d3 -> B/b.txt held by d1) with d1's own file moved with its
    // folder to A/b.txt and a stranger's file at d1's path: broken by trashing the moved file, d1 was vacated and
    // d3's download planned over the stranger's file (soak seed -824262299, after round 39b F7's change). The
    // moved file breaks a cycle only where b's path holds nothing; else what is at b's path does, as before.
    why: "a rename cycle is broken at a file moved with its folder only where the row's path is empty",
    state: {
      base: [{ path: 'a.txt', sha: 's1' }, { path: 'B/b.txt', sha: 's3' }, { path: 'A/a.txt', sha: 's1' }, { path: 'C/a.txt', sha: 's2' }],
      local: [{ path: 'B/b.txt', sha: 's1', touched: false }, { path: 'A/b.txt', sha: 's3', touched: false }],
      problems: [],
      remote: [{ mode: 'same', path: 'A/a.txt' }, { mode: 'moved', path: 'C/a.txt' }, { mode: 'same', path: 'A/a.txt' }, { mode: 'moved-modified', path: 'B/b.txt' }, { mode: 'same', path: 'A/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
  {
    // The same with a stranger's file at the path of a row whose own file moved to A/S (soak seed 1152940835).
    why: "a rename cycle whose row's path holds a stranger's file is broken there, not at the moved file",
    state: {
      base: [{ path: 'A/b.txt', sha: 's1' }, { path: 'A/a.txt', sha: 's1' }, { path: 'A/S/a.txt', sha: 's3' }, { path: 'a.txt', sha: 's2' }],
      local: [{ path: 'A/S/a.txt', sha: 's1', touched: false }, { path: 'A/a.txt', sha: 's3', touched: false }],
      problems: [],
      remote: [{ mode: 'same', path: 'A/a.txt' }, { mode: 'moved-modified', path: 'a.txt' }, { mode: 'moved-modified', path: 'A/a.txt' }, { mode: 'moved-modified', path: 'A/S/a.txt' }, { mode: 'same', path: 'A/a.txt' }],
      remoteNew: [], folderB: false, folderC: false, renamed: 'none',
      ctx: { direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', force: false, maxDeleteShare: 0.25 },
      reverse: false,
    },
  },
];

describe('reconcile properties over states found by soak runs', () => {
  it.each(FOUND_STATES)('$why', ({ state }) => {
    const w = build(state, false);
    const ctx = ctxOf(state.ctx);
    expect(checkInvariants(w, ctx, reconcile(w.base, w.local, w.remote, ctx))).toBeNull();
  });
});

describe('reconcile properties over random states', () => {
  it('keeps expectations, never trashes modified content, respects direction, reports every local change, never writes a key twice, is deterministic', () => {
    let dirMoves = 0;
    fc.assert(
      fc.property(stateArb, (st) => {
        const w = build(st, false);
        const ctx = ctxOf(st.ctx);
        deepFreeze(w);
        const plan = reconcile(w.base, w.local, w.remote, ctx);
        const problem = checkInvariants(w, ctx, plan);
        if (problem) throw new Error(problem);
        if (plan.groups.some((g) => g[0]?.kind === 'move-dir-local')) dirMoves++;
        // (f) deterministic, and independent of Map insertion order
        expect(reconcile(w.base, w.local, w.remote, ctx)).toEqual(plan);
        const w2 = build(st, true);
        expect(reconcile(w2.base, w2.local, w2.remote, ctx)).toEqual(plan);
      }),
      { numRuns: runs(600), ...seeded },
    );
    // The generator really renames folders whose directories can move whole (else the replay above never met one).
    expect(dirMoves).toBeGreaterThan(0);
  }, timeout);
});

describe('reconcile simulation: random edits on both sides, then sync until quiet', () => {
  for (const policy of ['keep-both', 'remote-wins', 'local-wins'] as const) {
    it(`converges to equal sides without losing content (${policy})`, () => {
      let dirMoves = 0;
      fc.assert(
        fc.property(fc.array(simOpArb, { minLength: 1, maxLength: SOAK ? 80 : 30, size: 'max' }), (ops) => {
          dirMoves += runSimulation(ops, policy).dirMoves;
        }),
        { numRuns: runs(300), ...seeded },
      );
      // Folders renamed on the service whose directories moved whole: the simulation reaches the directory move.
      expect(dirMoves).toBeGreaterThan(0);
    }, timeout);

    // New files the scan left unread (sha256 null, as it does for large ones): all of them (0), or only the
    // unique contents and not the shared one ('same', 4 characters), so equal contents meet unread ones.
    it(`converges without losing content when new files are observed unread (${policy})`, () => {
      fc.assert(
        fc.property(fc.array(simOpArb, { minLength: 1, maxLength: SOAK ? 80 : 30, size: 'max' }), fc.constantFrom(0, 5), (ops, lazyFrom) => {
          runSimulation(ops, policy, lazyFrom);
        }),
        { numRuns: runs(150), ...seeded },
      );
    }, timeout);
  }
});

// Histories the simulation failed on in soak runs (shrunk by fast-check), kept as fixed cases: each must converge
// in one pass like any other. `why` says which rule it caught.
const FOUND_HISTORIES: Array<{ why: string; policy: ReconcileContext['conflictPolicy']; ops: SimOp[] }> = [
  {
    // A rename cycle broken at an edited file left its move for the next pass (its base row took the remote name);
    // the document was then deleted remotely and the file edited again: recreated under the remote name, the new
    // document was listed elsewhere and a second pass moved the file (seed -201859445, remote-wins).
    why: 'a file recreated after a remote delete, its base row holding a remote rename it had not followed',
    policy: 'remote-wins',
    ops: [
      { t: 'remote-add', folder: 0, name: 0, content: 0 }, { t: 'local-write', dir: 0, name: 0, content: 1 }, { t: 'sync' },
      { t: 'local-write', dir: 0, name: 1, content: 0 }, { t: 'swap-alike', pick: 0, other: 0 }, { t: 'remote-add', folder: 1, name: 0, content: 0 }, { t: 'sync' },
      { t: 'local-modify', pick: 0, content: 0 }, { t: 'swap-alike', pick: 7, other: 0 }, { t: 'sync' },
      { t: 'local-modify', pick: 0, content: 0 }, { t: 'remote-rename', pick: 2, name: 2 }, { t: 'remote-delete', pick: 0 },
      { t: 'remote-rename', pick: 11, name: 1 }, { t: 'local-delete', pick: 1 },
    ],
  },
];

describe('reconcile simulation: histories found by soak runs', () => {
  it.each(FOUND_HISTORIES)('$why ($policy)', ({ policy, ops }) => {
    runSimulation(ops, policy);
  });
});
