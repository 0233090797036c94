// `status` after a reload the daemon rejected: the config file then says something the daemon does not run. When
// the file cannot be used (a value out of range) or names another stateDir, status read nothing (exit 2) or the
// new, empty stateDir ("daemon not running", "never synced"), while the daemon went on with the config it had
// (black-box round 31b, F3). The daemon records its running config in its status file (configFile, stateDir,
// pairConfigs); this finds that daemon and what it runs, for status to show with the reason on top.
import fs from 'node:fs';
import path from 'node:path';
import type { PairConfig } from '../config/schema.js';
import { peekStateDir } from '../config/peek.js';
import { liveLockOwner, readDaemonStatus, type DaemonStatus } from '../daemon/status-file.js';
import { oneLineMessage } from '../errors.js';
import { rootHolder } from '../local/root-lock.js';

/** What status shows of a pair: the part of its config it reads. */
export type StatusPair = Pick<PairConfig, 'name' | 'localPath' | 'binderId' | 'direction' | 'ignore' | 'trashRetentionDays'>;

/** The daemon's running config, shown instead of the file's. */
export interface RunningConfig {
  /** The stateDir the daemon runs with. */
  stateDir: string;
  /** Its pairs, as it runs them. */
  pairs: StatusPair[];
  pid: number;
  /** Why the file's own config is not shown: it cannot be used (the problem), or it names another stateDir. */
  problem: string | null;
  fileStateDir: string | null;
}

/**
 * (a) The file does not pass validation: the daemon started with this file, found through the stateDir the file
 * still names (a later rejected reload rarely changes stateDir too), or null.
 */
export function runningConfigOfInvalidFile(configFile: string, problem: unknown, env: NodeJS.ProcessEnv = process.env): RunningConfig | null {
  const stateDir = peekStateDir(configFile, env);
  if (stateDir === null) return null;
  const found = daemonOf(stateDir, configFile);
  return found === null ? null : { ...found, problem: oneLineMessage(problem), fileStateDir: null };
}

/**
 * (b) The file is valid but no daemon runs in its stateDir: the daemon started with this file that holds one of its
 * pairs' folders with another stateDir (each holder says which: local/root-lock.ts), or null. One connect per pair
 * to a socket name nobody listens on when no daemon runs: refused at once.
 */
export async function runningConfigElsewhere(stateDir: string, pairs: readonly StatusPair[], configFile: string): Promise<RunningConfig | null> {
  if (liveLockOwner(stateDir) !== null) return null;
  const asked = new Set<string>();
  for (const p of pairs) {
    const holder = await rootHolder(p.localPath);
    if (holder === null || sameFile(holder.stateDir, stateDir) || asked.has(holder.stateDir)) continue;
    asked.add(holder.stateDir);
    const found = daemonOf(holder.stateDir, configFile);
    if (found !== null) return { ...found, problem: null, fileStateDir: stateDir };
  }
  return null;
}

/** The lines status puts first: what the file says, and that what follows is the daemon's. */
export function runningConfigLines(rc: RunningConfig): string {
  const why =
    rc.problem !== null
      ? `INVALID: ${rc.problem} (the daemon, pid ${rc.pid}, runs the config it had before, shown below; a restart would fail)`
      : `names stateDir ${rc.fileStateDir ?? '?'}, but the daemon (pid ${rc.pid}) runs with ${rc.stateDir}, shown below (a new stateDir needs a restart, with this one's content moved there first)`;
  return `${'config'.padEnd(11)}${why}\n`;
}

/** The pairs and stateDir of the live daemon in `stateDir` started with `configFile`, from its status file. */
function daemonOf(stateDir: string, configFile: string): Omit<RunningConfig, 'problem' | 'fileStateDir'> | null {
  const pid = liveLockOwner(stateDir);
  if (pid === null) return null;
  const status = readDaemonStatus(stateDir);
  if (status === null || status.pid !== pid || status.pairConfigs === undefined || status.configFile === undefined) return null;
  if (!sameFile(status.configFile, configFile)) return null;
  return { stateDir: status.stateDir ?? stateDir, pairs: pairsOf(status), pid };
}

function pairsOf(status: DaemonStatus): StatusPair[] {
  return Object.entries(status.pairConfigs ?? {}).map(([name, p]) => ({ name, ...p }));
}

function sameFile(a: string, b: string): boolean {
  const real = (f: string) => {
    try {
      return fs.realpathSync(f);
    } catch {
      return path.resolve(f);
    }
  };
  return real(a) === real(b);
}
