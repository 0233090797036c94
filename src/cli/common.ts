// Shared by the commands: loading the config with a clear error, building the service client, and mapping
// errors to exit codes.
import type { Logger } from 'pino';
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
