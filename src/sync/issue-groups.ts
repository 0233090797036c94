// Issues (items a pass could not sync) as people read them: actionable codes first, many issues of one code in
// one folder folded into one line. Shared by `status` and the daemon's log.
import { WAITING_PREFIX, type Issue } from './model.js';

/**
 * Issues that follow from the user's own configuration and leave nothing pending: a pass with only these
 * still counts as "in sync" (exit 0), and the daemon logs them at info, not warn.
 */
export const INFORMATIONAL_ISSUES: ReadonlySet<Issue['code']> = new Set(['local-delete-not-propagated', 'ignored', 'upload-only']);
/**
 * Issues the daemon logs at info, not warn: the informational ones, and a file still being written (it is not
 * in sync yet, so it still counts against convergence, but the next pass looks again by itself).
 */
export const LOGGED_AT_INFO: ReadonlySet<Issue['code']> = new Set([...INFORMATIONAL_ISSUES, 'changing']);

/**
 * Order of the human "not synced" list: what someone must act on (refused uploads, missing metadata, files
 * that cannot be read or named) first, the bulk that clears by itself once a remote folder exists after it, the
 * informational notes last. Codes not listed here sort with the actionable ones.
 */
const ISSUE_ORDER: ReadonlyArray<Issue['code']> = [
  'upload-refused',
  'metadata-missing',
  'unreadable',
  'name-not-representable',
  'remote-tree-inconsistent',
  'path-collision',
  'ambiguous-remote-name',
  'unknown-state',
  'special-file',
  'symlink',
  'local-change-not-uploaded',
  'remote-change-not-downloaded',
  'root-files-unsupported',
  'waiting-for-remote-folder',
  'changing',
  'local-delete-not-propagated',
  'upload-only',
  'ignored',
];

/** Issues of one code in one folder are folded into one line from this many on (fewer keep their names). */
export const GROUP_FROM = 4;

export interface IssueLine {
  /** The path (one item), or "folder/ (N files)" for several items of one code in one folder. */
  label: string;
  code: Issue['code'];
  /** The detail (the same for all of the group), or the first item's with "e.g." when they differ. */
  detail: string;
  count: number;
}

/**
 * The human "not synced" lines: GROUP_FROM or more issues of one code in one folder become one line with a
 * count (a new local folder of 300 files waiting for its remote folder is one line, not 300), sorted by
 * ISSUE_ORDER, then folder and path.
 */
export function groupIssues(issues: readonly Issue[]): IssueLine[] {
  const groups = new Map<string, { code: Issue['code']; folder: string; items: Issue[] }>();
  for (const i of issues) {
    const folder = folderOf(i);
    const key = issueGroupKey(i);
    const g = groups.get(key);
    if (g) g.items.push(i);
    else groups.set(key, { code: i.code, folder, items: [i] });
  }
  const rank = (code: Issue['code']) => {
    const n = ISSUE_ORDER.indexOf(code);
    return n < 0 ? 0 : n;
  };
  const sorted = [...groups.values()].sort(
    (a, b) => rank(a.code) - rank(b.code) || (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0),
  );
  return sorted.flatMap(({ code, folder, items: unsorted }): IssueLine[] => {
    const items = [...unsorted].sort((a, b) => (a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0));
    const first = items[0]!;
    if (items.length < GROUP_FROM) return items.map((i) => ({ label: printable(i.relPath), code, detail: oneLine(i.detail), count: 1 }));
    const noun = NOT_ONLY_FILES.has(code) ? 'items' : 'files';
    const nameOf = (i: Issue) => printable(i.relPath.slice(folder === '' ? 0 : folder.length + 1));
    const some = NAMED_IN_GROUPS.has(code) ? `: ${namesOf(items.map(nameOf))}` : '';
    const label = folder === '' ? `${items.length} items${some === '' ? '' : ` (${some.slice(2)})`}` : `${printable(folder)}/ (${items.length} ${noun}${some})`;
    const same = items.every((i) => i.detail === first.detail);
    const name = nameOf(first);
    return [{ label, code, detail: same ? oneLine(first.detail) : `e.g. ${name}: ${oneLine(first.detail)}`, count: items.length }];
  });
}

/**
 * Codes whose folded lines also name their first files: each file is one to look at (a held temp-like name may be
 * a real file, `20241127`; an unreadable one needs its permissions fixed; one in the root must move into a folder), whereas the files waiting for one remote
 * folder, or left out by one rule, are all answered by the folder (black-box round 30a, F5).
 */
const NAMED_IN_GROUPS: ReadonlySet<Issue['code']> = new Set([
  'changing', 'unreadable', 'upload-refused', 'metadata-missing', 'name-not-representable', 'ambiguous-remote-name',
  'path-collision', 'unknown-state', 'special-file', 'symlink',
  // Files directly in the root: each is one to move into a folder, and the root's line had no name to go by
  // (black-box round 31b, F8).
  'root-files-unsupported',
]);
/** How many names a folded line shows before "and N more". */
const NAMES_SHOWN = 3;

function namesOf(names: readonly string[]): string {
  // "and 1 more" would take the room of the one name it hides.
  if (names.length <= NAMES_SHOWN + 1) return names.join(', ');
  return `${names.slice(0, NAMES_SHOWN).join(', ')}, and ${names.length - NAMES_SHOWN} more`;
}

function folderOf(i: Issue): string {
  // Files waiting for a remote folder go by the outermost folder missing (its detail names it): a git work
  // tree's .git is one line, not one per object folder.
  if (i.code === 'waiting-for-remote-folder' && i.detail.startsWith(`${WAITING_PREFIX}"`)) {
    const end = i.detail.indexOf('" yet', WAITING_PREFIX.length + 1);
    const folder = end < 0 ? null : i.detail.slice(WAITING_PREFIX.length + 1, end);
    if (folder !== null && (i.relPath === folder || i.relPath.startsWith(`${folder}/`))) return folder;
  }
  const slash = i.relPath.lastIndexOf('/');
  return slash < 0 ? '' : i.relPath.slice(0, slash);
}

/** Codes whose items are not all regular files (symlinks, FIFOs, devices, folders): counted as "items". */
const NOT_ONLY_FILES: ReadonlySet<Issue['code']> = new Set(['unknown-state', 'symlink', 'special-file', 'path-collision']);

/**
 * The group an issue is shown in: its code and its folder. unknown-state groups also by its detail, which says
 * what the local path is (a symlink, not a regular file, unreadable): one line must not lend a FIFO the wording
 * of a symlink (black-box round 28a, T7).
 */
export function issueGroupKey(i: Issue): string {
  return `${i.code}\u0000${folderOf(i)}${i.code === 'unknown-state' ? `\u0000${i.detail}` : ''}`;
}

/**
 * A name as a terminal line can show it: control characters (a newline or a tab in a file name, which a
 * service or `printf` can make) as escapes, so that one item stays on one line of `status` or of the log; an
 * unpaired surrogate (not valid Unicode: a remote name can hold one) as its escape, not as U+FFFD.
 */
export function printable(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f-\u009f]|\p{Cs}/gu, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\t') return '\\t';
    if (c === '\r') return '\\r';
    const code = c.charCodeAt(0);
    return code >= 0xd800 ? `\\u${code.toString(16)}` : `\\x${code.toString(16).padStart(2, '0')}`;
  });
}

/** A detail on one line (details may quote multi-line service errors). */
export function oneLine(s: string): string {
  // Control characters left (a tab or an escape in a quoted file name) are shown escaped, as in names.
  return printable(s.replace(/\s*\n\s*/g, ' '));
}
