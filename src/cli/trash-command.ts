// `binder-sync trash`: what each pair's trash holds (local content a pass replaced or removed: a download over
// a local file, a document deleted on the service, a conflict's losing side), and `trash restore` to put a file
// back into the sync root, from where it syncs like any local change. Writes no state DB (it only reads the
// pair's saved folder tree, to say when a restored file's folder does not exist on the service), so it works
// beside a running daemon.
import path from 'node:path';
import type { Command } from 'commander';
import type { Config, PairConfig } from '../config/schema.js';
import { BinderSyncError } from '../errors.js';
import { fmtBytes } from '../format-bytes.js';
import { Trash } from '../local/fs-ops.js';
import { createIgnoreMatcher } from '../local/ignore.js';
import { listTrashEntries, originOf, type TrashEntry } from '../local/trash-entries.js';
import { restoreFromTrash } from '../local/trash-restore.js';
import { detectCaseInsensitiveWithoutWriting } from '../local/fs-probe.js';
import { StateStore } from '../state/store.js';
import { printable } from '../sync/issue-groups.js';
import { parentOf, pathKey } from '../sync/path-key.js';
import { collectRepeated, exitCodeFor, loadConfigOrExplain, printError, selectPairs } from './common.js';
import { ExitCode } from './exit-codes.js';

/** What is said of an origin read from an entry's name (TrashEntry.originalPathGuessed). */
const GUESSED_NOTE = 'kept by an older binder-sync, which recorded no origins: the path is read from the name, whose "~N" may be its own rather than a second copy\'s';

/** Files listed per pair by the human listing; --json lists up to TRASH_JSON_LIMIT. */
const HUMAN_LIMIT = 200;
const TRASH_JSON_LIMIT = 100_000;

/** The document `trash --json` prints (fields are only ever added). */
export interface TrashDocument {
  version: 1;
  pairs: Array<{
    name: string;
    localPath: string;
    /** <stateDir>/<pair>/trash */
    dir: string;
    retentionDays: number;
    /** Newest day first. */
    entries: TrashEntry[];
    /** More files than were listed. */
    capped: boolean;
  }>;
}

interface ListOptions {
  config?: string;
  pair?: string[];
  /** Only the files that were at or under one of these paths (or whose entry is: a day, a day's folder). */
  path?: string[];
  json?: boolean;
}

interface RestoreOptions {
  config?: string;
  pair?: string;
  to?: string;
  replace?: boolean;
}

export function registerTrashCommand(program: Command, setExit: (code: number) => void): void {
  const trash = program
    .command('trash')
    .description('List what each pair\'s trash holds (local files a pass replaced or removed), or restore one')
    // Not a requiredOption: commander would ask it of `trash` also when `trash restore -c x` gives it to the
    // subcommand. Both take it before or after `restore` (optsWithGlobals), and say when neither has it.
    .option('-c, --config <file>', 'YAML config file (required)')
    .option('-p, --pair <name>', 'only this pair (repeat for several)', collectRepeated)
    .option('--path <path>', 'only files that were at this path or under it, relative to the sync root (or an entry\'s <day> or <day>/<folder>); repeat for several', collectRepeated)
    .option('--json', 'print one JSON document (shape: TrashDocument in src/cli/trash-command.ts)')
    .addHelpText(
      'after',
      `
Each file is listed as <day>/<path> (the day it went to the trash), with the path
it had in the sync root, newest day first: at most ${HUMAN_LIMIT} files per pair (--json
lists up to ${TRASH_JSON_LIMIT}). Files stay trashRetentionDays (30 by default), then go.
Only what was in one folder (or went on one day):
  binder-sync trash -c sync.yaml --path Docs/Reports
  binder-sync trash -c sync.yaml --path 2026-11-27

Exit status: 0 when listed, 2 when the config cannot be read, a pair is unknown or
a --path leaves the sync root (.., or an absolute path outside it), 6 when a trash
cannot be read (another user's stateDir).`,
    )
    .action((opts: ListOptions, cmd: Command) => setExit(withConfig(cmd, opts) ? listCommand(opts) : ExitCode.usage));
  trash
    .command('restore <entry>')
    .description('Copy a file from the trash back into the sync root (at the path it had, or --to); the next pass uploads it')
    .option('-c, --config <file>', 'YAML config file (required)')
    .option('-p, --pair <name>', 'the pair whose trash holds it (needed when the config has several)')
    .option('--to <path>', 'where to put it: relative to the sync root (not to the current folder), or absolute inside it (default: the path it had)')
    .option('--replace', 'replace a file that is at that path (it is kept in the trash first)')
    .addHelpText(
      'after',
      `
<entry> is <day>/<path> as \`binder-sync trash\` lists it, e.g.
  binder-sync trash restore -c sync.yaml 2026-11-27/Docs/report.docx
Nothing that exists is overwritten unless --replace is given, and then it is
kept in the trash first. A running daemon uploads the restored file as a new
version (or a new document), as it does any local change.

Exit status: 0 restored; 1 a file (or folder) is at the target; 2 bad usage, an
unknown pair or entry; 6 a local filesystem failure (or the target's folder was
moved while the file was copied into it: run it again).`,
    )
    .action(async (entry: string, _opts: RestoreOptions, cmd: Command) => {
      const opts = cmd.optsWithGlobals<RestoreOptions & { pair?: string | string[] }>();
      // `trash --pair a restore ...` gives the parent's (repeatable) --pair: one name is meant.
      const pair = Array.isArray(opts.pair) ? opts.pair.at(-1) : opts.pair;
      setExit(withConfig(cmd, opts) ? await restoreCommand(entry, { ...opts, ...(pair !== undefined ? { pair } : {}) }) : ExitCode.usage);
    });
}

/** Whether --config was given (before or after the subcommand); if not, says so as commander says it. */
function withConfig(cmd: Command, opts: { config?: string }): opts is { config: string } {
  if (opts.config !== undefined) return true;
  process.stderr.write(`error: required option '-c, --config <file>' not specified\n(run binder-sync ${cmd.name() === 'trash' ? 'trash' : 'trash restore'} --help for usage)\n`);
  return false;
}

function loadLocal(file: string): Config | null {
  try {
    // Local files only: the service's ${VAR}s and secret file need not resolve here.
    return loadConfigOrExplain(file, undefined, { localOnly: true }).config;
  } catch (err) {
    printError(err);
    return null;
  }
}

const trashDirOf = (config: Config, pair: PairConfig) => path.join(config.stateDir, pair.name, 'trash');

function listCommand(opts: ListOptions & { config: string }): number {
  const config = loadLocal(opts.config);
  if (config === null) return ExitCode.usage;
  const pairs = selectPairs(config.pairs, opts.pair, opts.config);
  if (pairs === null) return ExitCode.usage;
  const bad = pathLeavingRoots(opts.path ?? [], pairs);
  if (bad !== null) {
    process.stderr.write(`binder-sync: --path ${JSON.stringify(bad.path)} leaves the sync root${bad.roots}: name a folder or file in it, relative to it\n(run binder-sync trash --help for usage)\n`);
    return ExitCode.usage;
  }
  let doc: TrashDocument;
  try {
    doc = {
      version: 1,
      pairs: pairs.map((p) => {
        const dir = trashDirOf(config, p);
        const keep = opts.path === undefined ? undefined : underAny(opts.path.map((at) => relativeToRoot(at, p.localPath)));
        const { entries, capped } = listTrashEntries(dir, opts.json ? TRASH_JSON_LIMIT : HUMAN_LIMIT, keep);
        return { name: p.name, localPath: p.localPath, dir, retentionDays: p.trashRetentionDays, entries, capped };
      }),
    };
  } catch (err) {
    printError(err);
    return exitCodeFor(err);
  }
  process.stdout.write(opts.json ? `${JSON.stringify(doc, null, 2)}\n` : formatTrash(doc, opts.path));
  return ExitCode.ok;
}

/**
 * The first --path that is in no selected pair's sync root, with the roots it was compared with (" (Docs: /x)")
 * for an absolute one: a relative path with a `..` part, or an absolute path outside each root. The latter matched
 * no entry and was said as "no file at or under /etc" with exit 0, where `../x` is a usage error (black-box round
 * 31a, F16). An absolute path inside one pair's root of several narrows that pair and lists nothing of the others.
 */
function pathLeavingRoots(paths: readonly string[], pairs: readonly PairConfig[]): { path: string; roots: string } | null {
  for (const at of paths) {
    if (at.split('/').includes('..')) return { path: at, roots: '' };
    if (path.isAbsolute(at) && pairs.every((p) => relativeToRoot(at, p.localPath) === null)) {
      const roots = pairs.length === 1 ? ` ${pairs[0]?.localPath ?? ''}` : `s (${pairs.map((p) => `${p.name}: ${p.localPath}`).join(', ')})`;
      return { path: at, roots };
    }
  }
  return null;
}

/**
 * --path relative to the pair's sync root ("" for all of it): an absolute path inside the root names the path it
 * is, `./`, doubled and trailing slashes are dropped; null for an absolute path outside this pair's root.
 */
function relativeToRoot(at: string, root: string): string | null {
  let rel = at;
  if (path.isAbsolute(at)) {
    const r = path.relative(root, at);
    if (r === '..' || r.startsWith(`..${path.sep}`) || path.isAbsolute(r)) return null;
    rel = r.split(path.sep).join('/');
  }
  return rel.split('/').filter((p) => p !== '' && p !== '.').join('/');
}

/**
 * Whether an entry is at or under one of `prefixes` (relativeToRoot's), by the path it had or by its entry
 * (`<day>`, `<day>/<folder>`). Whole names only: Docs is not Docs2.
 */
function underAny(prefixes: Array<string | null>): (e: TrashEntry) => boolean {
  const under = (p: string, prefix: string) => prefix === '' || p === prefix || p.startsWith(`${prefix}/`);
  return (e) => prefixes.some((prefix) => prefix !== null && (under(e.originalPath, prefix) || under(e.entry, prefix)));
}

function formatTrash(doc: TrashDocument, paths: string[] | undefined): string {
  const lines: string[] = [];
  for (const p of doc.pairs) {
    if (lines.length > 0) lines.push('');
    lines.push(`${p.name}  ${p.localPath}   trash ${p.dir} (kept ${p.retentionDays} days)`);
    if (p.entries.length === 0) {
      lines.push(paths === undefined ? '  empty' : `  no file at or under ${paths.map(printable).join(', ')}`);
      continue;
    }
    const width = Math.max(...p.entries.map((e) => printable(e.entry).length));
    for (const e of p.entries) {
      const from = e.originalPath === e.entry.slice(e.day.length + 1) ? '' : `   (was ${printable(e.originalPath)}${e.originalPathGuessed ? '?' : ''})`;
      lines.push(`  ${printable(e.entry).padEnd(width)}  ${fmtBytes(e.size).padStart(9)}  modified ${e.mtime.slice(0, 16).replace('T', ' ')} UTC${from}`);
    }
    if (p.capped) lines.push(`  ... more than ${p.entries.length} files (see --json, or narrow it with --path <folder>)`);
  }
  if (doc.pairs.some((p) => p.entries.some((e) => e.originalPathGuessed))) lines.push('', `(was ...?): ${GUESSED_NOTE}`);
  lines.push('', 'restore one: binder-sync trash restore -c <config> [--pair <name>] <day>/<path> [--to <path>]');
  return `${lines.join('\n')}\n`;
}

/**
 * --to as a path relative to the sync root: an absolute path inside the root is taken as the path it names, `./`
 * and doubled slashes are dropped, and a path ending in `/` names a folder the file keeps its name in. Anything
 * that still leaves the root is refused by resolveInside.
 */
function insideRoot(to: string, root: string, kept: string): string {
  let rel = to;
  if (path.isAbsolute(to)) {
    const r = path.relative(root, to);
    if (r === '' || r.startsWith('..') || path.isAbsolute(r)) return to;
    rel = r.split(path.sep).join('/') + (to.endsWith('/') ? '/' : '');
  }
  const intoFolder = rel.endsWith('/');
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
  if (intoFolder) parts.push(kept.slice(kept.lastIndexOf('/') + 1));
  return parts.length === 0 ? to : parts.join('/');
}

/** Why a file restored at relPath would never be uploaded by this pair, or null when it will be. */
function whyNotUploaded(pair: PairConfig, relPath: string): string | null {
  if (pair.direction === 'download') return `pair ${pair.name} only downloads`;
  if (!relPath.includes('/')) return 'files directly in the sync root are not uploaded (documents live in folders)';
  const rule = createIgnoreMatcher(pair.ignore).ruleFor(relPath, false);
  return rule === undefined ? null : `the ignore rule ${rule} leaves it out`;
}

/**
 * Why a file restored at relPath waits for a folder on the service: its folder was not in the remote folder tree
 * the pair saved at its last pass (the service has no endpoint to create folders, so binder-sync cannot make
 * one). Null when the folder is known, or when the pair has no saved tree to tell by (never synced, unreadable).
 */
function missingRemoteFolder(config: Config, pair: PairConfig, relPath: string): string | null {
  const dir = parentOf(relPath);
  if (dir === '') return null;
  let store: StateStore | undefined;
  try {
    store = StateStore.openReadOnly(path.join(config.stateDir, pair.name, 'state.db'));
    const folders = store.loadFolders();
    if (folders.length === 0) return null;
    const key = pathKey(dir, detectCaseInsensitiveWithoutWriting(pair.localPath));
    if (folders.some((f) => f.key === key)) return null;
    return `the service had no folder ${printable(dir)} at the last pass, and binder-sync cannot create folders there: it is uploaded once someone creates that folder on the service`;
  } catch {
    return null; // a note only: the restore itself has succeeded
  } finally {
    store?.close();
  }
}

function restoreCommand(entry: string, opts: RestoreOptions & { config: string }): Promise<number> | number {
  const config = loadLocal(opts.config);
  if (config === null) return ExitCode.usage;
  let pair: PairConfig | undefined;
  if (opts.pair === undefined) {
    if (config.pairs.length > 1) {
      process.stderr.write(`binder-sync: the config has ${config.pairs.length} pairs (${config.pairs.map((p) => p.name).join(', ')}): say whose trash with --pair\n`);
      return ExitCode.usage;
    }
    pair = config.pairs[0];
  } else {
    pair = selectPairs(config.pairs, [opts.pair], opts.config)?.[0];
  }
  if (pair === undefined) return ExitCode.usage;
  const chosen = pair;
  const trash = new Trash(trashDirOf(config, chosen), chosen.localPath);
  const [day = '', ...inDay] = entry.split('/');
  const origin = originOf(path.join(trashDirOf(config, chosen), day), inDay.join('/'));
  const kept = origin.path;
  const target = opts.to === undefined ? kept : insideRoot(opts.to, chosen.localPath, kept);
  // Ctrl-C or SIGTERM stop the copy and remove its temp file (a second one exits at once; the next pass of the
  // pair removes what that leaves): without this, a large restore cut short left its partial temp file in the
  // sync root (black-box round 29a, F5).
  const stop = new AbortController();
  let stoppedBy: NodeJS.Signals | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppedBy !== null) process.exit(signal === 'SIGINT' ? ExitCode.interrupted : ExitCode.terminated);
    stoppedBy = signal;
    stop.abort(new BinderSyncError(`stopped by ${signal}`, { code: 'ABORTED', retryable: true }));
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  const uninstall = () => {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  };
  return restoreFromTrash(trash, entry, target, { replace: opts.replace === true, signal: stop.signal }).finally(uninstall).then(
    (r) => {
      process.stdout.write(`restored ${printable(entry)} (${fmtBytes(r.bytes)}) to ${printable(r.restoredTo)}\n`);
      if (r.replacedKeptAt !== null) process.stdout.write(`the file that was there is kept in the trash: ${printable(r.replacedKeptAt)}\n`);
      if (origin.guessed && opts.to === undefined) process.stdout.write(`note: ${GUESSED_NOTE}; if it was ${printable(entry.slice(day.length + 1))}, rename the restored file to that\n`);
      const never = whyNotUploaded(chosen, target);
      const waits = never === null ? missingRemoteFolder(config, chosen, target) : null;
      if (never !== null) process.stdout.write(`note: it stays local: ${never}\n`);
      else if (waits !== null) process.stdout.write(`note: it waits: ${waits}\n`);
      else process.stdout.write(`pair ${chosen.name}: a running daemon uploads it within its quiet period; else the next \`binder-sync sync\` does\n`);
      return ExitCode.ok;
    },
    (err: unknown) => {
      if (stoppedBy !== null) {
        process.stderr.write(`binder-sync: ${stoppedBy}: restore of ${printable(entry)} cancelled; nothing was written to the sync root (the trash still holds it)\n`);
        return stoppedBy === 'SIGINT' ? ExitCode.interrupted : ExitCode.terminated;
      }
      printError(err);
      if (err instanceof BinderSyncError && err.code === 'RESTORE_TARGET_EXISTS') return ExitCode.incomplete;
      if (err instanceof BinderSyncError && (err.code === 'TRASH_ENTRY_UNKNOWN' || err.code === 'PATH_ESCAPE')) return ExitCode.usage;
      return exitCodeFor(err);
    },
  );
}
