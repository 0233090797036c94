// `binder-sync sync`: one full pass for every pair (or one), then exit. Exit 0 when both sides agree.
import path from 'node:path';
import type { Command } from 'commander';
import type { Logger } from 'pino';
import { createLogger, logLevelFromEnv, type LogLevel } from '../log.js';
import { isRetryable, oneLineMessage } from '../errors.js';
import { stateDbWriteError } from '../state/state-dir-error.js';
import { acquireStateLock } from '../state/lock.js';
import { lastErrorMeta, writePairMeta } from '../state/pair-meta.js';
import { pendingOf } from '../sync/pending.js';
import { runPass, settleInSyncMark, type PassReport } from '../sync/pass.js';
import { openPair } from '../sync/open-pair.js';
import { noteDir, removeIfCreatedEmpty } from '../state/fresh-state.js';
import type { PairRuntime } from '../sync/pair-runtime.js';
import { describePlan, summarizeReport } from './report-format.js';
import { passHooks, ProgressDisplay, wantProgress } from './progress.js';
import { serviceClientFor } from '../service/from-config.js';
import { settingsIdentityOf } from '../service/index.js';
import { collectRepeated, exitCodeFor, loadConfigOrExplain, logLevelOption, otherUsersStateDir, printError, selectPairs } from './common.js';
import { ExitCode, isLocalFailure } from './exit-codes.js';
import { BinderSyncError } from '../errors.js';

interface SyncOptions {
  config: string;
  pair?: string[];
  dryRun?: boolean;
  force?: boolean;
  json?: boolean;
  walkFolders?: boolean;
  logLevel?: LogLevel;
}

export function registerSyncCommand(program: Command, setExit: (code: number) => void): void {
  program
    .command('sync')
    .description('Run one full sync pass for every pair (or one) and exit; 0 when both sides agree')
    .requiredOption('-c, --config <file>', 'YAML config file')
    .option('-p, --pair <name>', 'only this pair (repeat for several)', collectRepeated)
    .option('-n, --dry-run', 'print the plan and change nothing')
    .option('--force', 'run past the safety gates (mass delete, empty root or listing)')
    .option('--json', 'print the pass reports as JSON on stdout')
    .option('--walk-folders', 'list every remote folder, even where a recent walk of a large tree may stand in')
    .addOption(logLevelOption())
    .action(async (opts: SyncOptions) => setExit(await syncCommand(opts)));
}

async function syncCommand(opts: SyncOptions): Promise<number> {
  let loaded;
  let levelOverride;
  try {
    levelOverride = opts.logLevel ?? logLevelFromEnv();
    loaded = loadConfigOrExplain(opts.config);
  } catch (err) {
    printError(err);
    return exitCodeFor(err);
  }
  const { config } = loaded;
  const pairs = selectPairs(config.pairs, opts.pair, opts.config);
  if (pairs === null) return ExitCode.usage;
  // With --json, stdout carries only the report: logs go to stderr.
  const log = createLogger({
    level: levelOverride ?? config.log.level,
    ...(opts.json ? { destination: process.stderr, pretty: false } : {}),
  });
  const owner = otherUsersStateDir(config.stateDir);
  if (owner !== null) log.warn(owner);
  let lock;
  const stateDirNote = noteDir(config.stateDir);
  try {
    lock = opts.dryRun ? null : acquireStateLock(config.stateDir);
  } catch (err) {
    printError(err);
    return exitCodeFor(err);
  }
  // SIGINT or SIGTERM cancels the pass: transfers in flight stop and their temp files are removed, an upload
  // slot not committed is dropped, the state stays consistent, and the exit code says which signal (130, 143).
  // A second signal stops at once, like a crash, which the state DB is built to survive (black-box round 22, K3).
  const stop = new AbortController();
  const stopSignals = cancelOnSignals(stop, () => lock?.release());
  // A dry run uses what an earlier pass found the server to speak, and writes nothing down.
  const client = serviceClientFor(config, log, stop.signal, {}, opts.dryRun ? 'read' : 'remember');
  // On a terminal a long pass shows a progress line on stderr; --json and --dry-run are for reading, not watching.
  const progress =
    !opts.json && !opts.dryRun && wantProgress(process.stderr)
      ? new ProgressDisplay({ stream: process.stderr, intercept: [process.stdout, process.stderr] })
      : null;
  // One --json entry per pair, in order: a pass's report, or the error that stopped the pair.
  const entries: object[] = [];
  let worst: number = ExitCode.ok;
  try {
    for (const pair of pairs) {
      if (stop.signal.aborted) break;
      let rt;
      try {
        rt = await openPair(pair, config.stateDir, client, log, { dryRun: opts.dryRun === true, unreadableElements: 'hold-uploads' });
        const observer = progress?.observer(pair.name);
        let report: PassReport | null = null;
        try {
          report = await runPass(rt, {
            dryRun: opts.dryRun === true,
            force: opts.force === true,
            // A tree whose walk costs over a second of requests is walked at most every folderTreeMaxAgeMs.
            reuseSavedFolderTree: opts.walkFolders === true ? false : 'when-costly',
            signal: stop.signal,
            ...passHooks(observer),
          });
        } finally {
          observer?.onPassEnd?.(report);
        }
        entries.push(jsonReport(report));
        // What is left, where `status` reads it (the daemon writes the same after each of its passes).
        if (!opts.dryRun) {
          const left = pendingOf(report);
          writePairMeta(rt.store, path.join(config.stateDir, pair.name, 'state.db'), { pendingUploads: String(left.uploads), pendingDownloads: String(left.downloads) }, { create: false });
        }
        if (!opts.json) {
          const by = stopSignals.received();
          if (by !== null) {
            // Not "FAILED": the steps were stopped on purpose, and cleanly.
            const stopped = report.execution?.failures.length ?? 0;
            process.stdout.write(`[${pair.name}] cancelled by ${by}: ${stopped} step${stopped === 1 ? '' : 's'} stopped before ${stopped === 1 ? 'it' : 'they'} finished, nothing half-done left; the next run takes ${stopped === 1 ? 'it' : 'them'} up\n`);
          } else {
            if (opts.dryRun) process.stdout.write(describePlan(report));
            process.stdout.write(summarizeReport(report, opts.dryRun === true));
          }
        }
        if (!report.converged) worst = Math.max(worst, notConvergedExit(report));
        else if (!opts.dryRun && !stop.signal.aborted && settlingPays(report, rt.store.countBase())) await leaveInSyncMark(rt, log);
        // The service did not give the binder's metadata elements: its failure, said as such (uploads, if any,
        // were held back; the rest of the pass ran).
        if (rt.metadataUnread !== null) {
          const why = rt.metadataUnread;
          printError(new BinderSyncError(`pair ${pair.name}: uploads held back (the rest of the pass ran): the binder's metadata elements could not be read: ${oneLineMessage(why)}`, {
            code: why.code,
            retryable: true,
            context: { pair: pair.name },
            ...(why.hint !== undefined ? { hint: why.hint } : {}),
            cause: why,
          }));
          worst = Math.max(worst, exitCodeFor(why));
        }
      } catch (err) {
        if (stop.signal.aborted) break;
        err = stateDbWriteError(err, path.join(config.stateDir, pair.name, 'state.db'));
        printError(err);
        // printError said it, with its hint, on stderr; the log keeps the details (stack, context) for debugging
        // only: at error level a failed cron `sync` printed every failure twice.
        log.debug({ pair: pair.name, err }, 'pass failed');
        worst = Math.max(worst, exitCodeFor(err));
        entries.push(jsonFailure(pair.name, stateDbWriteError(err)));
        // Left where `status` reads it, as the daemon does (a failed cron `sync` must not look like the last good
        // pass). A state DB that does not exist yet is not created for it.
        if (!opts.dryRun) writePairMeta(rt?.store, path.join(config.stateDir, pair.name, 'state.db'), lastErrorMeta(oneLineMessage(stateDbWriteError(err)), settingsIdentityOf(config.service)), { create: false });
      } finally {
        rt?.store.close();
      }
    }
  } finally {
    progress?.close();
    await client.close();
    lock?.release();
    // A stateDir this run made for pairs that all failed to open holds nothing now (the lock file is gone).
    if (lock) removeIfCreatedEmpty(stateDirNote);
    stopSignals.uninstall();
  }
  if (opts.json) process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
  const by = stopSignals.received();
  return by === null ? worst : by === 'SIGINT' ? ExitCode.interrupted : ExitCode.terminated;
}

/**
 * The first SIGINT or SIGTERM aborts `stop` (and says so on stderr); a second one runs `atOnce` (synchronous
 * cleanup) and exits with 130 or 143 at once.
 */
function cancelOnSignals(stop: AbortController, atOnce: () => void): { received(): NodeJS.Signals | null; uninstall(): void } {
  let first: NodeJS.Signals | null = null;
  const on = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? ExitCode.interrupted : ExitCode.terminated;
    if (first !== null) {
      process.stderr.write(`binder-sync: ${signal} again: stopping at once (the next run finishes what was cut short)\n`);
      atOnce();
      process.exit(code);
    }
    first = signal;
    process.stderr.write(`binder-sync: ${signal}: cancelling the pass (transfers in flight stop and leave no temp file); ${signal === 'SIGINT' ? 'Ctrl-C' : 'the signal'} again stops at once\n`);
    stop.abort(new BinderSyncError(`stopped by ${signal}`, { code: 'ABORTED', retryable: true, hint: 'the next run takes the pass up again' }));
  };
  const onInt = () => on('SIGINT');
  const onTerm = () => on('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return {
    received: () => first,
    uninstall() {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
    },
  };
}

/** Blocked by a gate: 4; every failure local (disk full, permissions): 6; anything else left: 1. */
export function notConvergedExit(r: PassReport): number {
  if (r.plan.blocked) return ExitCode.blocked;
  const failures = r.execution?.failures ?? [];
  if (failures.length > 0 && failures.every((f) => isLocalFailure(f.code))) return ExitCode.local;
  return ExitCode.incomplete;
}

/**
 * The --json entry of a pair whose pass did not run or stopped with an error (a wrong binderId, the service
 * unreachable, a damaged state DB): said as such, with the exit code it adds, so that a script reading the JSON
 * does not take a list without that pair for success. (It was left out: one failing pair printed `[]`.)
 */
function jsonFailure(pair: string, err: unknown) {
  return {
    pair,
    converged: false,
    // Every key of a pass's entry, empty: a script reading `actions.length` works on this entry too.
    blocked: null,
    actions: [],
    done: {},
    failures: [],
    conflicts: [],
    identical: 0,
    issues: [],
    hashed: 0,
    remoteRequests: 0,
    folderTreeFrom: null,
    bytesDownloaded: 0,
    bytesUploaded: 0,
    durationMs: 0,
    error: {
      code: err instanceof BinderSyncError ? err.code : 'UNEXPECTED',
      message: oneLineMessage(err),
      hint: err instanceof BinderSyncError ? (err.hint ?? null) : null,
      retryable: isRetryable(err),
      exitCode: exitCodeFor(err),
    },
  };
}

function jsonReport(r: PassReport) {
  return {
    pair: r.pair,
    converged: r.converged,
    /** Set (code, message, hint, retryable, exitCode) when the pair's pass could not run or stopped: see jsonFailure. */
    error: null,
    blocked: r.plan.blocked,
    actions: r.plan.groups.flat().map((a) => a.kind),
    done: r.execution?.done ?? {},
    failures: r.execution?.failures ?? [],
    conflicts: r.execution?.conflicts ?? [],
    identical: r.execution?.identical ?? 0,
    issues: r.issues,
    hashed: r.hashed,
    remoteRequests: r.remoteRequests,
    folderTreeFrom: r.folderTreeFrom,
    bytesDownloaded: r.execution?.bytesDownloaded ?? 0,
    bytesUploaded: r.execution?.bytesUploaded ?? 0,
    durationMs: r.durationMs,
  };
}

/**
 * Whether to check a pass's work again for the in-sync mark (settleInSyncMark): it costs one scan and reconcile of
 * the whole tree (~2 s at 100k files), so only after a pass whose own work was a tenth of the tree or more, such
 * as the first sync of a binder (then at most a few percent of the pass). After a small change in a large tree
 * the next run's normal pass leaves the mark itself, at about the same cost, and only if nothing changed again.
 */
export function settlingPays(report: PassReport, baseFiles: number): boolean {
  const actions = report.plan.groups.reduce((n, g) => n + g.length, 0);
  return actions > 0 && actions * 10 >= baseFiles;
}

/**
 * After a pass that did work, lets the next run (or a daemon started next) skip the full pass when nothing
 * changes in between (settleInSyncMark). An optimization only: a failure is logged and changes no exit code.
 */
async function leaveInSyncMark(rt: PairRuntime, log: Logger): Promise<void> {
  try {
    const left = await settleInSyncMark(rt);
    log.debug({ pair: rt.pair.name, left }, left ? 'left the in-sync mark for the next run' : 'no in-sync mark: the next run takes a full pass');
  } catch (err) {
    log.debug({ pair: rt.pair.name, err }, 'could not check for the in-sync mark: the next run takes a full pass');
  }
}
