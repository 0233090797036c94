// `binder-sync run`: the long-running daemon. Loads the config, takes the stateDir lock (exit 5 when another
// instance has it), and wires the signals: SIGTERM/SIGINT shut down gracefully (exit 0; a second SIGINT exits
// at once with 130), SIGHUP reloads the config. Under systemd (NOTIFY_SOCKET set) it reports readiness.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseDuration } from '../config/duration.js';
import { ConfigError, loadConfig } from '../config/load.js';
import { startEarlyWatchers } from '../daemon/early-watchers.js';
import type { Daemon } from '../daemon/run.js';
import { DEFAULT_SHUTDOWN_GRACE_MS, timingFromEnv } from '../daemon/timing.js';
import { HEAP_GROWING_ENV, tuneHeapForPolling } from '../daemon/heap-tuning.js';
import { BinderSyncError, oneLineMessage } from '../errors.js';
import { createLogger, logLevelFromEnv, type Logger, type LogLevel } from '../log.js';
import { stateDbWriteError } from '../state/state-dir-error.js';
import { exitCodeFor, logLevelOption, otherUsersStateDir, printError } from './common.js';
import { takeEarlySignals } from './early-signals.js';
import { ExitCode } from './exit-codes.js';
import { ProgressDisplay, wantProgress } from './progress.js';

interface RunOptions {
  config: string;
  shutdownTimeout: number;
  logLevel?: LogLevel;
}

/** Exit code of a forced exit on a second SIGINT (128 + SIGINT, what shells report). */
export const FORCED_EXIT_CODE = ExitCode.interrupted;

export function registerRunCommand(program: Command, setExit: (code: number) => void): void {
  program
    .command('run')
    .description('Run as a daemon: watch the local roots, poll the binders, and keep every pair in sync until stopped')
    .requiredOption('-c, --config <file>', 'YAML config file')
    .addOption(
      new Option('--shutdown-timeout <duration>', 'how long in-flight passes may run after SIGTERM/SIGINT before they are aborted')
        .argParser((raw: string) => {
          const ms = parseDuration(/^\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw);
          if (ms === null) throw new InvalidArgumentError("must be a duration such as '10s' or '500ms'");
          return ms;
        })
        .default(DEFAULT_SHUTDOWN_GRACE_MS, '10s'),
    )
    .addOption(logLevelOption())
    .addHelpText(
      'after',
      [
        '',
        'Signals: SIGTERM/SIGINT stop gracefully (a second SIGINT stops at once, exit 130); SIGHUP reloads the config.',
        'systemd: with Type=notify and NotifyAccess=all the daemon reports readiness through systemd-notify.',
        'Logs: JSON lines on stdout (human-readable on a terminal); BINDER_SYNC_LOG_LEVEL overrides log.level.',
      ].join('\n'),
    )
    .action(async (opts: RunOptions) => setExit(await runCommand(opts)));
}

export async function runCommand(opts: RunOptions, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let loaded;
  let levelOverride;
  try {
    levelOverride = opts.logLevel ?? logLevelFromEnv(env);
    // Its warnings go to the log below: under journald stdout and stderr are one stream, and a plain line among
    // the JSON ones stops `journalctl -o cat | jq` at it (black-box round 28b, F6).
    loaded = loadConfig(opts.config, env);
  } catch (err) {
    // A failed start is a log line like any other (JSON under systemd, where `journalctl -o cat | jq` must find
    // it: black-box round 31b, F4); on a terminal, the config's problems one per line, as `sync` says them.
    if (process.stdout.isTTY === true) printError(err);
    else sayFailedStart(createLogger({ level: levelOverride ?? 'info' }), err);
    return exitCodeFor(err);
  }
  const log = createLogger({ level: levelOverride ?? loaded.config.log.level });
  for (const w of loaded.warnings) log.warn(w);
  const owner = otherUsersStateDir(loaded.config.stateDir);
  if (owner !== null) log.warn(owner);
  const heap = tuneHeapForPolling(env);
  if (!heap.applied && heap.reason === 'invalid') {
    log.warn({ value: heap.raw }, `${HEAP_GROWING_ENV} must be a whole number from 0 to 400; keeping V8's own heap sizing`);
  } else {
    log.debug({ heap }, 'heap tuning');
  }

  // The watchers start before the daemon's modules load (~0.3 s), so that the first pass's walk of the tree,
  // which must wait for its watcher, can start as soon as the daemon is up (early-watchers.ts).
  const timing = timingFromEnv(env);
  const earlyWatchers = startEarlyWatchers(loaded.config, timing, log);

  // Signals are wired before the daemon starts: SIGHUP's default action would otherwise kill the process, and a
  // stop requested during start-up must still shut down cleanly once the pairs are running.
  let daemon: Daemon | undefined;
  let stopRequested = false;
  let signals = 0;
  const stop = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      if (signal === 'SIGINT') {
        log.warn('second SIGINT: exiting now');
        // The lock would be taken over anyway (its pid is dead), but leave nothing behind when we can.
        daemon?.releaseLockNow();
        process.exit(FORCED_EXIT_CODE);
      }
      return;
    }
    log.info({ signal }, 'stop requested');
    stopRequested = true;
    void daemon?.shutdown();
  };
  const onTerm = () => stop('SIGTERM');
  const onInt = () => stop('SIGINT');
  const onHup = () => {
    if (!daemon || stopRequested) return;
    log.info({ signal: 'SIGHUP' }, 'reloading the config');
    void daemon.reload();
  };
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  process.on('SIGHUP', onHup);
  // A SIGHUP while the modules loaded asked to reload a config that is only being read now: nothing to do.
  takeEarlySignals();
  // A long pass (the first sync of a large binder) shows a progress line on a terminal; never under systemd.
  const progress = wantProgress(process.stderr, env) ? new ProgressDisplay({ stream: process.stderr, intercept: [process.stdout, process.stderr] }) : null;
  try {
    try {
      const { startDaemon } = await import('../daemon/run.js');
      daemon = await startDaemon({
        earlyWatchers,
        ...(progress ? { passObserver: (pair: string) => progress.observer(pair) } : {}),
        configFile: opts.config,
        config: loaded.config,
        log,
        timing,
        graceMs: opts.shutdownTimeout,
        env,
        ...(levelOverride !== undefined ? { logLevelOverride: levelOverride } : {}),
      });
    } catch (err) {
      await Promise.all([...earlyWatchers.values()].map((w) => w.close())); // none left when startDaemon ran
      sayFailedStart(log, err);
      return exitCodeFor(err);
    }
    if (stopRequested) void daemon.shutdown();
    await daemon.finished;
  } finally {
    progress?.close();
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    process.off('SIGHUP', onHup);
  }
  return ExitCode.ok;
}

/**
 * Logs why the daemon could not start, at error level with the error's code and hint (and a config's problems,
 * one each); said on stderr too only where the log is not seen (stdout redirected, stderr a terminal).
 */
function sayFailedStart(log: Logger, err: unknown): void {
  if (process.stderr.isTTY === true && process.stdout.isTTY !== true) printError(err);
  const e = stateDbWriteError(err);
  const hint = e instanceof BinderSyncError ? e.hint : undefined;
  const problems = e instanceof ConfigError ? { problems: e.problems } : {};
  log.error({ code: (e as { code?: unknown }).code, ...(hint !== undefined ? { hint } : {}), ...problems }, `binder-sync daemon could not start: ${oneLineMessage(e)}`);
}
