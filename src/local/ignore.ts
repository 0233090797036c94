// Ignore rules: built-in ones (our own temp files, editors' temp/lock/swap files, OS clutter) plus the
// user's globs from the config. Ignored paths are invisible to sync on both sides: never uploaded, downloaded or deleted.
import { compileGlob, toNFC, type CompiledGlob } from './glob.js';

/** Prefix of every file the daemon itself creates inside a sync root (temps, probes). */
export const DAEMON_FILE_PREFIX = '.binder-sync-';

/**
 * Prefix of the daemon's temp files: downloads under way (beside their destination) and copies into the trash not
 * finished yet (local/fs-ops.ts). A crash can leave them behind; they are never content of their own.
 */
export const TEMP_PREFIX = `${DAEMON_FILE_PREFIX}tmp-`;

export const BUILTIN_IGNORES: readonly string[] = [
  `${DAEMON_FILE_PREFIX}*`,
  // Editors: vim swap files (.swp, .swo, ... and .swx) and its "can I write here" probe, emacs autosave
  // and lock files, backup files, Office owner files, LibreOffice locks, partial downloads.
  '.*.sw[a-px]',
  '4913',
  '*~',
  '.#*',
  '#*#',
  '~$*',
  '*.tmp',
  '.~lock.*#',
  '*.part',
  '*.crdownload',
  // OS clutter.
  '.DS_Store',
  'Thumbs.db',
  'desktop.ini',
  '.Trash-*',
  '$RECYCLE.BIN',
  '.fuse_hidden*',
  '.nfs*',
];

export interface IgnoreMatcher {
  /** True when relPath itself or any of its parent directories is ignored. */
  ignores(relPath: string, isDir: boolean): boolean;
  /**
   * True when this entry itself matches a rule; its parents are assumed to have been checked already.
   * For walkers that prune ignored directories (cheaper than `ignores` on every file).
   */
  ignoresEntry(relPath: string, isDir: boolean): boolean;
  /**
   * The rule that ignores relPath or one of its parent folders, for messages ("'*.tmp' (built-in rule)",
   * "'build/' (the pair's ignore list)"), or undefined. Tests each rule on its own: only for the rare ignored
   * item that is reported, never per scanned entry.
   */
  ruleFor(relPath: string, isDir: boolean): string | undefined;
}

function combine(globs: CompiledGlob[]): RegExp | null {
  if (globs.length === 0) return null;
  return new RegExp(`^(?:${globs.map((g) => `(?:${g.source})`).join('|')})$`, 'su');
}

/**
 * Builds a matcher from the user's globs plus the built-in rules. Globs use '/' separators; see
 * compileGlob for the syntax. Matching is case-sensitive (an ignore rule should not silently widen), but not
 * sensitive to Unicode form: rules and paths are compared in NFC (glob.ts toNFC).
 */
export function createIgnoreMatcher(userGlobs: string[]): IgnoreMatcher {
  const user = userGlobs.filter((g) => g.trim() !== '');
  const all = [...BUILTIN_IGNORES, ...user].map(compileGlob);
  // Four combined regexes keep the per-entry cost at a few regex tests whatever the number of rules.
  const nameAny = combine(all.filter((g) => !g.anchored && !g.dirOnly));
  const nameDir = combine(all.filter((g) => !g.anchored && g.dirOnly));
  const pathAny = combine(all.filter((g) => g.anchored && !g.dirOnly));
  const pathDir = combine(all.filter((g) => g.anchored && g.dirOnly));

  /** ignoresEntry for a path already in NFC. */
  function entryMatches(relPath: string, isDir: boolean): boolean {
    const name = relPath.slice(relPath.lastIndexOf('/') + 1);
    if (nameAny?.test(name) || pathAny?.test(relPath)) return true;
    return isDir && (nameDir?.test(name) === true || pathDir?.test(relPath) === true);
  }

  function ignoresEntry(relPath: string, isDir: boolean): boolean {
    return entryMatches(toNFC(relPath), isDir);
  }

  /** The first rule that matches a parent folder of relPath, or relPath itself. */
  function firstRuleOnPath(relPath: string, isDir: boolean): string | undefined {
    let i = relPath.indexOf('/');
    while (i >= 0) {
      const hit = ruleOf(relPath.slice(0, i), true);
      if (hit !== undefined) return hit;
      i = relPath.indexOf('/', i + 1);
    }
    return ruleOf(relPath, isDir);
  }

  // Rules one by one, for ruleFor. A user glob that repeats a built-in one is named as the built-in rule.
  const single = all.map((g, i) => ({ g, re: new RegExp(`^(?:${g.source})$`, 'su'), builtin: i < BUILTIN_IGNORES.length }));
  const ruleOf = (path: string, dir: boolean): string | undefined => {
    const p = toNFC(path);
    const name = p.slice(p.lastIndexOf('/') + 1);
    const hit = single.find(({ g, re }) => (dir || !g.dirOnly) && re.test(g.anchored ? p : name));
    return hit && `'${hit.g.glob}' (${hit.builtin ? 'built-in rule' : "the pair's ignore list"})`;
  };

  return {
    ignoresEntry,
    // Hot (every watcher event): the plain loop, no callback.
    ignores(relPath: string, isDir: boolean): boolean {
      // NFC never joins across '/': the whole path in NFC is each of its folders' paths in NFC.
      const p = toNFC(relPath);
      let i = p.indexOf('/');
      while (i >= 0) {
        if (entryMatches(p.slice(0, i), true)) return true;
        i = p.indexOf('/', i + 1);
      }
      return entryMatches(p, isDir);
    },
    ruleFor: firstRuleOnPath,
  };
}
