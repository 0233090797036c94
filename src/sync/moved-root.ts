// A pair's state describes the files of one local folder. When the config names another folder, is it the synced
// folder moved there, or some other folder (ensureSameRoot, when the pair opens)? And is the folder at the path still
// the synced one (ensureSyncedRootInPlace, before each pass)?
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { PairConfig } from '../config/schema.js';
import { BinderSyncError } from '../errors.js';
import { dirHeldByOther } from '../local/root-lock.js';
import { StateStore } from '../state/store.js';
import type { BaseEntry } from './model.js';
import { findSiblingState } from '../state/sibling-states.js';
import { READ_FLAGS } from '../local/open-for-read.js';

/** Meta key: the local root this pair's state describes (its localPath when the state last accepted it). */
export const STATE_ROOT = 'localPath';
/** Meta key: that folder's own identity (identityOf): a folder moved with `mv` on one disk keeps it. */
const STATE_ROOT_ID = 'localPathId';

/** How many base files the checks look at, and the share of them that makes a folder "hold the synced files". */
const SAMPLE = 200;
const SHARE = 0.5;
/** How much one check may read to compare content (once per new localPath or replaced root). */
const HASH_BYTES = 256 * 1024 * 1024;

/**
 * If the config now names another folder, the base would be applied to whatever is there: a file of the same name
 * becomes the next version of the synced document, and pointing two pairs at each other's roots mixes two binders.
 * So a new localPath is accepted only when it is
 * - the same folder by another path (a symlink, a bind mount), or the recorded folder itself moved there (`mv` on
 *   one disk: the folder keeps its device and inode, whatever was edited inside since);
 * - or a copy of it, while the recorded folder no longer holds the synced files (gone, or an empty mount point):
 *   at least half of a sample of synced files found there with their content and modification time (`cp -a`,
 *   `rsync -a`, `mv` across disks all keep the time; an unrelated folder's `__init__.py` has the content, not the
 *   time: black-box round 11, F1).
 * While the recorded folder still holds them, a second folder with the same files is a copy or another pair's root
 * (two binders that share template files: round 11, F2), so it is refused: the user moves one of them away.
 * Refused like a changed binderId (exit 2); a state with no base, or from before this check, just records the path.
 */
export function ensureSameRoot(pair: PairConfig, store: StateStore, pairStateDir: string, log: Logger): void {
  const recorded = store.getMeta(STATE_ROOT);
  if (recorded === pair.localPath) return;
  const accept = () => {
    store.setMeta(STATE_ROOT, pair.localPath);
    recordRootIdentity(pair, store);
  };
  if (recorded === undefined || recorded === '' || store.countBase() === 0) return accept();
  if (sameDirectory(recorded, pair.localPath)) {
    // The same folder as the recorded path is now: only the path is new. Its recorded identity stays, so the check
    // before each pass still sees another folder that took the synced one's place at the same time (a symlinked
    // path given up for the real one just as another folder was moved there: black-box round 31b, F1).
    store.setMeta(STATE_ROOT, pair.localPath);
    if (!store.getMeta(STATE_ROOT_ID)) recordRootIdentity(pair, store);
    return;
  }
  const id = identityOf(pair.localPath);
  if (id !== null && id === store.getMeta(STATE_ROOT_ID)) {
    accept();
    log.info({ pair: pair.name, from: recorded, to: pair.localPath }, `the sync root is now ${pair.localPath} (was ${recorded}): it is the synced folder, moved there`);
    return;
  }
  const { sample, needed } = sampleOf(store);
  const refuse = (why: string, hint: string) =>
    new BinderSyncError(`pair ${pair.name}: its state was synced with the local folder ${recorded}, but the config now says ${pair.localPath}, ${why}`, {
      code: 'CONFIG_PAIR_ROOT_CHANGED',
      retryable: false,
      context: { pair: pair.name, recorded, configured: pair.localPath, state: pairStateDir },
      hint: `${hint} To sync ${pair.localPath} as a new pair instead (its files would be uploaded into binder ${pair.binderId}), give the pair a new name. Nothing was changed.`,
    });
  const stillThere = sample.filter((b) => unchangedAt(path.join(recorded, b.relPath), b)).length;
  if (stillThere >= needed) {
    throw refuse(
      `while ${recorded} still holds the synced files (${stillThere} of ${sample.length} looked at)`,
      `to go on with the synced folder, set localPath back to ${recorded}. If ${pair.localPath} is a copy of it, move ${recorded} away first (or move that folder itself to the new path).`,
    );
  }
  const present = copiesIn(pair.localPath, sample);
  if (present >= needed) {
    accept();
    log.info({ pair: pair.name, from: recorded, to: pair.localPath, matched: `${present}/${sample.length}` }, `the sync root is now ${pair.localPath} (was ${recorded}): it holds the synced files, so it is taken as the synced folder copied or moved there`);
    return;
  }
  throw refuse(
    `which does not hold the synced files (${present} of ${sample.length} looked for, ${needed} needed)`,
    fs.existsSync(recorded)
      ? `to go on with the synced folder, set localPath back to ${recorded} (or move that folder itself to the new path).`
      : `${recorded} is gone and ${pair.localPath} does not hold its files (with their content and modification time); if the disk of ${recorded} is not mounted, mount it.`,
  );
}

/**
 * Whether `state` records the folder `dir` as its root: by its path (or another path to the same folder), or by the
 * folder's identity, which a folder moved with `mv` on one disk keeps (the pair's next open accepts it there). For
 * telling a pair renamed in the config (and its folder moved, maybe) from a new pair (open-pair.ts).
 */
export function recordsRoot(state: StateStore, dir: string): boolean {
  const recorded = state.getMeta(STATE_ROOT);
  if (recorded === undefined || recorded === '') return false;
  if (path.resolve(recorded) === path.resolve(dir) || sameDirectory(recorded, dir)) return true;
  const id = identityOf(dir);
  return id !== null && id === state.getMeta(STATE_ROOT_ID);
}

/** Records the sync root's identity (an accepted new localPath). */
function recordRootIdentity(pair: PairConfig, store: StateStore): void {
  const id = identityOf(pair.localPath);
  if (id !== null && store.getMeta(STATE_ROOT_ID) !== id) store.setMeta(STATE_ROOT_ID, id);
}

/**
 * At the same path, the sync root may be another folder than the synced one: two synced folders swapped on disk,
 * or an unrelated folder moved to the root's name (`rm -rf root; mv other root`). Its files at synced paths would
 * become new versions of the synced documents (black-box round 12, G1). So before each pass, a root whose identity
 * (identityOf) is not the recorded one must hold the synced files, as a copy must (half of a sample with their
 * content and time: restored from a backup with `rsync -a`, say); it is then recorded. An empty folder in its
 * place (a disk not mounted) is left to the safety gates, and its identity is not recorded, so the synced folder
 * is known again when it is back. Otherwise LOCAL_ROOT_REPLACED, and nothing is done.
 * `record` false (a dry run): nothing is written.
 */
export async function ensureSyncedRootInPlace(pair: PairConfig, store: StateStore, log: Logger, record: boolean): Promise<void> {
  const id = identityOf(pair.localPath);
  const recorded = store.getMeta(STATE_ROOT_ID);
  if (id === null || recorded === id) return;
  if (recorded === undefined || recorded === '' || store.countBase() === 0) {
    if (record) store.setMeta(STATE_ROOT_ID, id); // first seen (by this version), or nothing synced yet
    return;
  }
  // An empty folder (a disk not mounted): the safety gates speak for it, each pass, with nothing read here. Any file
  // there is not the synced one's (files of other names only: two roots swapped whose binders share none, round 13, H1).
  if (isEmptyDir(pair.localPath)) return;
  // Another pair's root, swapped in (one daemon downloads the files two binders share in the same second, so
  // they look like copies: black-box round 13, H2): the root lock, or that pair's state, knows the folder as its.
  const other = (await dirHeldByOther(pair.localPath, pair.name)) ?? siblingRecording(store, id);
  if (other !== null) throw replaced(pair, `it is the root of ${other}`, store);
  const { sample, needed } = sampleOf(store);
  const held = copiesIn(pair.localPath, sample);
  if (held >= needed) {
    if (record) store.setMeta(STATE_ROOT_ID, id);
    log.info({ pair: pair.name, localPath: pair.localPath, matched: `${held}/${sample.length}` }, `the sync root ${pair.localPath} is another folder than before, holding the synced files (a copy, restored with their times): taken as the synced folder`);
    return;
  }
  throw replaced(pair, `it does not hold the synced files (${held} of ${sample.length} found with their content and time)`, store);
}

/**
 * The other pair of this stateDir whose state records the folder `id` as its root, if any: a `sync` opens its pairs
 * one after the other, so the root lock does not know the later ones yet (round 13, H2 through `sync`).
 */
function siblingRecording(store: StateStore, id: string): string | null {
  const pairDir = path.dirname(store.file);
  const name = findSiblingState(path.dirname(pairDir), path.basename(pairDir), (sibling) => sibling.getMeta(STATE_ROOT_ID) === id);
  return name === null ? null : `pair ${name} (as its state records)`;
}

function replaced(pair: PairConfig, why: string, store: StateStore): BinderSyncError {
  return new BinderSyncError(`pair ${pair.name}: the folder at ${pair.localPath} is not the synced one: another folder took its place, and ${why}`, {
    code: 'LOCAL_ROOT_REPLACED',
    retryable: false,
    context: { pair: pair.name, localPath: pair.localPath },
    hint: `if synced folders were swapped, or another folder was moved to this name, put the synced folder back (the pair resumes by itself); if this is the synced folder restored from a backup (made before most of its files last changed, or restored without their times), move the pair's state (${path.dirname(store.file)}) out of the stateDir to sync it as new (files equal on both sides are taken as synced, a file holding a version just before its document's latest takes the latest, other differences are kept both ways). Nothing was changed.`,
  });
}

/** The folder holds nothing at all (one entry read, however large it is). */
function isEmptyDir(dir: string): boolean {
  const d = fs.opendirSync(dir);
  try {
    return d.readSync() === null;
  } finally {
    d.closeSync();
  }
}

/** The base files the checks look at, and how many of them make a folder "hold the synced files". */
function sampleOf(store: StateStore): { sample: BaseEntry[]; needed: number } {
  const sample = [...store.loadBase().values()].slice(0, SAMPLE);
  return { sample, needed: Math.max(1, Math.ceil(sample.length * SHARE)) };
}

/** How many of the sampled synced files `root` holds as copies (copiedAt), reading at most HASH_BYTES. */
function copiesIn(root: string, sample: readonly BaseEntry[]): number {
  const budget = { bytes: HASH_BYTES };
  return sample.filter((b) => copiedAt(path.join(root, b.relPath), b, budget)).length;
}

/**
 * `dev:ino:birth`. Inode numbers are reused at once (`rm -rf root; mkdir other` may give other the root's), so
 * without a birth time (a filesystem that keeps none) a folder has no identity to go by.
 */
function identityOf(dir: string): string | null {
  const st = fs.statSync(dir, { throwIfNoEntry: false, bigint: true });
  if (st?.isDirectory() !== true || st.birthtimeNs === 0n) return null;
  return `${st.dev}:${st.ino}:${st.birthtimeNs}`;
}

/** The synced file is still where the base saw it, untouched: its inode, size and modification time. */
function unchangedAt(abs: string, b: BaseEntry): boolean {
  const st = fs.lstatSync(abs, { throwIfNoEntry: false });
  return st !== undefined && st.isFile() && st.ino === b.inode && st.size === b.size && st.mtimeMs === b.mtimeMs;
}

/**
 * The file at a base row's path in another folder is that synced file, copied or moved with its time: the same
 * size and modification time (to the second), and the same content (SHA-256, as the base records it) while `budget` lasts; past
 * it, the same inode. Content alone is not enough (an empty file, a template two binders share), nor are size
 * and time (files written in one clock tick share an mtime: black-box round 10).
 */
function copiedAt(abs: string, b: BaseEntry, budget: { bytes: number }): boolean {
  const st = fs.lstatSync(abs, { throwIfNoEntry: false });
  // The time to the second: copies keep it with less precision than the disk has (tar: seconds, Node's cp: ms).
  if (st === undefined || !st.isFile() || st.size !== b.size || Math.floor(st.mtimeMs / 1000) !== Math.floor(b.mtimeMs / 1000)) return false;
  if (st.size > budget.bytes) return st.ino === b.inode;
  budget.bytes -= st.size;
  let fd: number | undefined;
  try {
    // Not through a symbolic link, never waiting on a FIFO put there since the lstat (open-for-read.ts).
    fd = fs.openSync(abs, READ_FLAGS);
    if (!fs.fstatSync(fd).isFile()) return false;
    return createHash('sha256').update(fs.readFileSync(fd)).digest('hex') === b.sha256;
  } catch {
    return false; // unreadable: no evidence either way
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Both paths name one existing directory (same device and inode). */
function sameDirectory(a: string, b: string): boolean {
  const sa = fs.statSync(a, { throwIfNoEntry: false });
  const sb = fs.statSync(b, { throwIfNoEntry: false });
  return sa !== undefined && sb !== undefined && sa.isDirectory() && sa.dev === sb.dev && sa.ino === sb.ino;
}
