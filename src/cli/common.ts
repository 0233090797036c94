// Shared by the commands: loading the config with a clear error, building the service client, and mapping
// errors to exit codes.
import fs from 'node:fs';
import { InvalidArgumentError, Option } from 'commander';
import type { Logger } from 'pino';
import { LOG_LEVELS } from '../config/schema.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { BinderSyncError, describeError } from '../errors.js';
import { ServiceError } from '../service/errors.js';
import { stateDbWriteError } from '../state/state-dir-error.js';
import { ExitCode, isLocalFailure } from './exit-codes.js';

export function loadConfigOrExplain(file: string, log?: Logger, opts: { localOnly?: boolean } = {}): LoadedConfig {
  const loaded = loadConfig(file, process.env, opts);
  for (const w of loaded.warnings) {
    if (log) log.warn(w);
    else process.stderr.write(`warning: ${w}\n`);
  }
  return loaded;
}

/**
 * A warning when the stateDir belongs to another user than the one running this command: typically `sync` run
 * by root on a setup the daemon runs as its own user. The files it creates in the sync roots are then the
 * caller's, and the daemon's user cannot replace them later (EACCES, exit 6): said now, not then (black-box
 * round 28b, F8). Null when the owners match, or the stateDir does not exist yet.
 */
export function otherUsersStateDir(stateDir: string): string | null {
  const me = process.getuid?.();
  if (me === undefined) return null;
  let owner: number;
  try {
    owner = fs.statSync(stateDir).uid;
  } catch {
    return null;
  }
  if (owner === me) return null;
  return `the state directory ${stateDir} belongs to uid ${owner}, not to this user (uid ${me}): what this run creates in the sync roots will belong to uid ${me}, which binder-sync running as uid ${owner} (the daemon) may not be able to replace; run binder-sync as that user (sudo -u '#${owner}' binder-sync ...)`;
}

/** Exit code for an error that ended a command. */
export function exitCodeFor(thrown: unknown): number {
  const err = stateDbWriteError(thrown);
  if (err instanceof ServiceError) return ExitCode.service;
  if (err instanceof BinderSyncError) {
    if (err.code.startsWith('CONFIG')) return ExitCode.usage;
    if (err.code === 'STATE_LOCKED' || err.code === 'ROOT_LOCKED') return ExitCode.locked;
    if (isLocalFailure(err.code)) return ExitCode.local;
    if (err.code.startsWith('METADATA')) return ExitCode.usage;
    if (err.code.startsWith('SERVICE_')) return ExitCode.service; // a service answer, re-said with context
  }
  return ExitCode.incomplete;
}

export function printError(err: unknown): void {
  process.stderr.write(`binder-sync: ${describeError(stateDbWriteError(err))}\n`);
}

/** commander's collector for an option given more than once (`--pair a --pair b`). */
export function collectRepeated(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * The pairs `--pair` names (all of them when none is given), in the config's order; a name the config does not
 * have is said on stderr with the names it does have, and null returned (exit 2).
 */
export function selectPairs<P extends { name: string }>(all: readonly P[], names: readonly string[] | undefined, configFile: string): P[] | null {
  if (names === undefined || names.length === 0) return [...all];
  const unknown = names.filter((n) => !all.some((p) => p.name === n));
  if (unknown.length > 0) {
    const which = unknown.map((n) => `"${n}"`).join(', ');
    process.stderr.write(`binder-sync: no pair named ${which} in ${configFile} (pairs: ${all.map((p) => p.name).join(', ')})\n`);
    return null;
  }
  return all.filter((p) => names.includes(p.name));
}

/** `--log-level`: wins over BINDER_SYNC_LOG_LEVEL and log.level (for one run: a reload keeps it too). */
export function logLevelOption(): Option {
  return new Option('--log-level <level>', 'log level for this run (overrides BINDER_SYNC_LOG_LEVEL and log.level)').choices(LOG_LEVELS);
}

/** commander's parser of a TCP port option (0 = any free port): a usage error (exit 2) outside 0-65535. */
export function parsePort(raw: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('--port must be a whole number 0-65535');
  return n;
}
