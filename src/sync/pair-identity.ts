// A pair's name names its state (<stateDir>/<name>/state.db), which records the binder and the local folder it
// synced. Renaming a pair in the config, or swapping two pairs' names, leaves each name with no state or with
// another pair's: such a pair is refused (exit 2) with the `mv` that keeps the record (openPair, the daemon's
// reload, `check`).
import fs from 'node:fs';
import path from 'node:path';
import type { PairConfig } from '../config/schema.js';
import { BinderSyncError } from '../errors.js';
import { findSiblingState, openForReading } from '../state/sibling-states.js';
import type { StateStore } from '../state/store.js';
import { recordsRoot, STATE_ROOT } from './moved-root.js';

/** Meta key: the binder this pair's state describes. */
export const STATE_BINDER = 'binderId';

/** What another pair's state that synced this pair's binder and folder says of itself. */
interface Recorder {
  /** Its pair's name (the name of its directory). */
  name: string;
  /** Its directory. */
  dir: string;
  /** The folder it recorded, when that is not the pair's localPath (the folder was moved there since). */
  movedFrom: string | null;
}

/**
 * The state of a directory of `parent` (other than `except`) that synced pair's binder into pair's folder, with
 * files synced: the folder by its path, another path to it, or its identity (moved there with `mv` since, which the
 * pair's open accepts: black-box round 31a, F9).
 */
function recorderOf(pair: PairConfig, parent: string, except: string): Recorder | null {
  let movedFrom: string | null = null;
  const name = findSiblingState(parent, except, (state) => {
    if (state.getMeta(STATE_BINDER) !== pair.binderId || state.countBase() === 0 || !recordsRoot(state, pair.localPath)) return false;
    const recorded = state.getMeta(STATE_ROOT) ?? '';
    movedFrom = path.resolve(recorded) === path.resolve(pair.localPath) ? null : recorded;
    return true;
  });
  return name === null ? null : { name, dir: path.join(parent, name), movedFrom };
}

/** "(/x/root)", or where the state saw the folder when it was moved since. */
function folderText(pair: PairConfig, r: Recorder): string {
  return r.movedFrom === null ? `(${pair.localPath})` : `(then at ${r.movedFrom}, moved to ${pair.localPath} since)`;
}

/**
 * A pair with nothing synced yet must not be another pair's folder and binder under a new name: renaming a pair in
 * the config started it over with no record, so documents deleted on the service since came back from the local
 * copies and files changed on one side became conflict copies (black-box round 30b, F2). Another state of the
 * stateDir that synced this binder into this folder is that pair's record: the error (exit 2) says to rename it to
 * the new name, or to move it away to start over on purpose. Null when there is none.
 *
 * `ownStateEmpty`: the caller knows this pair's own state has nothing synced (it has it open, or there is none);
 * otherwise it is read, and a state with files synced is never refused here. Read-only.
 */
export function renamedPairError(pair: PairConfig, stateDir: string, ownStateEmpty = false): BinderSyncError | null {
  const newDir = path.join(stateDir, pair.name);
  if (!ownStateEmpty && hasSyncedState(path.join(newDir, 'state.db'))) return null;
  const beside = recorderOf(pair, stateDir, pair.name);
  if (beside !== null) {
    return renamed(pair, `the stateDir holds the state of pair ${beside.name} (${beside.dir}), which synced this same folder ${folderText(pair, beside)} with this same binder (${pair.binderId}): was the pair renamed?`, {
      keep: renameCommand(beside.dir, newDir),
      recordedBy: beside.name,
      recordAt: beside.dir,
      outOf: 'the stateDir',
    });
  }
  // The record moved into the new name's directory: `mv old new` onto a directory that exists moves `old` inside
  // it (a refused start of an older version left one), and that record is found nowhere else (black-box round
  // 31a, F3).
  const inside = recorderOf(pair, newDir, '');
  if (inside === null) return null;
  const aside = asideOf(newDir);
  return renamed(pair, `the state of pair ${inside.name}, which synced this same folder ${folderText(pair, inside)} with this same binder (${pair.binderId}), is inside this pair's state directory (${inside.dir}): was the pair renamed, and its state moved into ${newDir} instead of renamed to it (an mv onto a directory that exists moves into it)?`, {
    keep: `mv -T '${newDir}' '${aside}' && mv -T '${aside}/${inside.name}' '${newDir}' (${aside} then holds what else was in ${newDir}: no synced file)`,
    recordedBy: inside.name,
    recordAt: inside.dir,
    outOf: newDir,
  });
}

function renamed(pair: PairConfig, why: string, how: { keep: string; recordedBy: string; recordAt: string; outOf: string }): BinderSyncError {
  return new BinderSyncError(`pair ${pair.name}: has no state yet, but ${why} A renamed pair would start over with no record of what was synced`, {
    code: 'CONFIG_PAIR_RENAMED',
    retryable: false,
    context: { pair: pair.name, recordedBy: how.recordedBy, state: how.recordAt },
    hint: `to keep the record, stop binder-sync and rename the state: ${how.keep}; to start over on purpose (files equal on both sides are taken as synced, different ones are kept both ways, documents deleted on the service come back), move '${how.recordAt}' out of ${how.outOf}. Nothing was changed.`,
  });
}

/**
 * The shell command that renames the state directory `from` to `to`. `mv -T` never moves `from` into a `to` that
 * exists: it replaces an empty one, and fails on one that holds anything (a plain `mv` moved the record inside
 * it, where it was lost to the pair: black-box round 31a, F3). Such a `to` holds no synced file (or the pair
 * would not have been refused): it is moved aside first.
 */
function renameCommand(from: string, to: string): string {
  const rename = `mv -T '${from}' '${to}'`;
  if (!fs.existsSync(to) || isEmptyDir(to)) return rename;
  const aside = asideOf(to);
  return `mv -T '${to}' '${aside}' && ${rename} (${aside} then holds what was in ${to}: no synced file)`;
}

/** Where a state directory that holds no synced file is moved out of the way. */
const asideOf = (dir: string) => `${dir}.before-rename`;

function isEmptyDir(dir: string): boolean {
  try {
    return fs.readdirSync(dir).length === 0;
  } catch {
    return false;
  }
}

/**
 * A pair whose own state records another binder or folder (its open refuses it), while another pair's state of
 * the stateDir synced this pair's binder into this pair's folder: the names of the two pairs were swapped in the
 * config (or one took the other's). Said as such, with the three `mv` that swap the states too; the error for a
 * changed binder or folder sent the user to set the binder back (black-box round 31a, F13). Null when no other
 * state is this pair's. Read-only.
 *
 * `recorded`: what this pair's own state records (binder, folder).
 */
export function swappedNamesError(pair: PairConfig, stateDir: string, recorded: { binder: string | undefined; root: string | undefined }): BinderSyncError | null {
  const other = recorderOf(pair, stateDir, pair.name);
  if (other === null) return null;
  const ownDir = path.join(stateDir, pair.name);
  // The same commands whichever of the two pairs says it.
  const [first, second] = [pair.name, other.name].sort();
  const a = path.join(stateDir, first as string);
  const b = path.join(stateDir, second as string);
  const tmp = `${a}.swapping`;
  const ownRecord = [recorded.binder !== undefined && recorded.binder !== '' ? `binder ${recorded.binder}` : null, recorded.root !== undefined && recorded.root !== '' ? `the folder ${recorded.root}` : null].filter((t) => t !== null).join(' and ');
  return new BinderSyncError(`pair ${pair.name}: its state (${ownDir}) was synced with ${ownRecord || 'another binder or folder'}, while the state of pair ${other.name} (${other.dir}) synced this pair's binder (${pair.binderId}) and folder ${folderText(pair, other)}: were the names of pairs ${first} and ${second} swapped in the config? Each pair would go on from the other's record`, {
    code: 'CONFIG_PAIR_NAMES_SWAPPED',
    retryable: false,
    context: { pair: pair.name, recordedBy: other.name, state: ownDir },
    hint: `to keep both records, stop binder-sync and swap the states as well: mv -T '${a}' '${tmp}' && mv -T '${b}' '${a}' && mv -T '${tmp}' '${b}' (or swap the names back in the config). Nothing was changed.`,
  });
}

/** A state DB file with at least one synced file recorded (false when absent or unreadable). */
function hasSyncedState(file: string): boolean {
  if (!fs.existsSync(file)) return false;
  let store: StateStore | undefined;
  try {
    store = openForReading(file);
    return store.countBase() > 0;
  } catch {
    return false;
  } finally {
    store?.close();
  }
}
