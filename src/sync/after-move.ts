// A move-local changes the moved file's ctime (link, unlink and rename all do), and nothing else. The steps
// planned after it in the same group (the upload of a local edit, the download of a remote one, a conflict)
// expected the stat the scan saw, so without this each of them would find "changed since the plan" and fail,
// leaving the work to the next pass. Only a step that expected exactly the stat the move verified is carried
// over to the stat the move left; any other expectation is kept, and still refuses a file edited meanwhile.
import { sameStat, statOf, type Action, type FileStat } from './model.js';

export interface SettledMove {
  /** The path the file was moved to. */
  to: string;
  /** The stat the move verified before moving. */
  before: FileStat;
  /** The stat the move left (moveFile's settled stat: `before` with the new ctime, or `before` itself). */
  after: FileStat;
}

/** `a` with its expectation of the moved file updated to the stat the move left. */
export function expectingMovedFile(a: Action, m: SettledMove): Action {
  const carried = (stat: FileStat): FileStat | null =>
    sameStat(stat, m.before) ? statOf(m.after) : null;
  switch (a.kind) {
    case 'upload':
    case 'conflict': {
      if (a.relPath !== m.to) return a;
      const stat = carried(a.local);
      return stat === null ? a : { ...a, local: { ...a.local, ...stat } };
    }
    case 'download': {
      if (a.relPath !== m.to || a.expectLocal === null) return a;
      const stat = carried(a.expectLocal);
      return stat === null ? a : { ...a, expectLocal: stat };
    }
    default:
      return a;
  }
}
