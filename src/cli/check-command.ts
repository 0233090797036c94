// `binder-sync check`: validates a config against the real world (credentials, binders, metadata rules,
// write access, local roots, stateDir, inotify watches) and prints one PASS/WARN/FAIL line per check. Changes nothing
// except a probe file it creates and removes again.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { loadConfig } from '../config/load.js';
import type { Config, PairConfig } from '../config/schema.js';
import { liveLockOwner } from '../daemon/status-file.js';
import { BinderSyncError, describeError } from '../errors.js';
import { DAEMON_FILE_PREFIX } from '../local/ignore.js';
import { inotifyWatchLimit, watchesNeeded } from '../local/watch-budget.js';
import { createLogger, LOG_LEVEL_ENV, logLevelFromEnv } from '../log.js';
import { ServiceError, type Binder, type ServiceClient } from '../service/index.js';
import { serviceClientFor } from '../service/from-config.js';
import { openForReading } from '../state/sibling-states.js';
import { StateStore } from '../state/store.js';
import { METADATA_RULES_HINT, compileMetadataRules } from '../sync/metadata-rules.js';
import { BASE_URL_404_HINT, LISTED_BINDER_404_HINT, stateBoundToOtherBinder } from '../sync/open-pair.js';
import { renamedPairError } from '../sync/pair-identity.js';
import { ExitCode } from './exit-codes.js';

type Outcome = 'PASS' | 'WARN' | 'FAIL' | 'SKIP';

export interface CheckResult {
  outcome: Outcome;
  /** What was checked, e.g. "token", "binder AbC (pair main)", "local root (pair main)". */
  subject: string;
  message: string;
  hint?: string;
  /** For FAIL: the exit code this failure stands for (usage, service or local). */
  exit?: number;
}

interface CheckOptions {
  config: string;
}

export function registerCheckCommand(program: Command, setExit: (code: number) => void): void {
  program
    .command('check')
    .description('Check the config, the credentials, each binder and its metadata rules, write access, the local roots and the stateDir')
    .requiredOption('-c, --config <file>', 'YAML config file')
    .addHelpText(
      'after',
      '\nExit status: 0 when every check passed (warnings allowed), 2 when the config is invalid or its metadata\nrules do not fit the binder, 3 when a service check failed, 6 when a local check failed (the lowest wins).',
    )
    .action(async (opts: CheckOptions) => {
      const results = await runChecks(opts.config, (r) => process.stdout.write(formatCheck(r)));
      setExit(checkExitCode(results));
    });
}

/** Exit code of a run: the lowest exit code among the failures (config before service before local). */
export function checkExitCode(results: readonly CheckResult[]): number {
  const codes = results.filter((r) => r.outcome === 'FAIL').map((r) => r.exit ?? ExitCode.incomplete);
  return codes.length === 0 ? ExitCode.ok : Math.min(...codes);
}

export function formatCheck(r: CheckResult): string {
  const text = `${r.message}${r.hint ? ` (hint: ${r.hint})` : ''}`;
  // Multi-line messages (a config with several problems) keep their lines, indented under the first.
  return `${r.outcome.padEnd(4)}  ${r.subject}: ${text.replace(/\n\s*/g, '\n        ')}\n`;
}

/** Runs every check, reporting each result as soon as it is known; returns them all. */
export async function runChecks(configFile: string, report: (r: CheckResult) => void): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  const add = (r: CheckResult) => {
    results.push(r);
    report(r);
  };

  let config: Config;
  try {
    const loaded = loadConfig(configFile);
    config = loaded.config;
    add({ outcome: 'PASS', subject: 'config', message: `${path.resolve(configFile)} is valid (${config.pairs.length} pair${config.pairs.length === 1 ? '' : 's'})` });
    for (const w of loaded.warnings) add({ outcome: 'WARN', subject: 'config', message: w });
  } catch (err) {
    add(failure('config', err, ExitCode.usage));
    return results;
  }
  try {
    const level = logLevelFromEnv();
    if (level !== undefined) add({ outcome: 'PASS', subject: 'environment', message: `${LOG_LEVEL_ENV}=${level} (overrides log.level ${config.log.level})` });
  } catch (err) {
    add(failure('environment', err, ExitCode.usage));
  }

  await serviceChecks(config, add);
  localChecks(config, add);
  return results;
}

/**
 * A configured address as a PASS line names it: as written in the config (its path included, black-box round 32b,
 * F6), without a query string or fragment, where a secret could be. The config refuses user:password@ in it.
 */
function shownAddress(url: string): string {
  return url.replace(/[?#].*$/s, '');
}

function failure(subject: string, err: unknown, exit: number): CheckResult {
  if (err instanceof BinderSyncError) {
    return { outcome: 'FAIL', subject, message: err.message, ...(err.hint ? { hint: err.hint } : {}), exit };
  }
  return { outcome: 'FAIL', subject, message: describeError(err), exit };
}

// ---- service ----

async function serviceChecks(config: Config, add: (r: CheckResult) => void): Promise<void> {
  const s = config.service;
  // Few retries and a short timeout: a check should answer in seconds, not wait out a long outage.
  const client = serviceClientFor(config, createLogger({ level: 'silent', destination: process.stderr }), undefined, {
    requestTimeoutMs: Math.min(s.requestTimeout, 20_000),
    retry: { maxAttempts: 2, baseDelayMs: 250, maxDelayMs: 2000 },
  }, 'ignore');
  const skipAll = (why: string) => {
    add({ outcome: 'SKIP', subject: 'access', message: why });
    for (const p of config.pairs) add({ outcome: 'SKIP', subject: `binder ${p.binderId} (pair ${p.name})`, message: why });
  };
  try {
    // The spec has no token-only call: the first API call fetches the token, and a failure of the token
    // request itself (POST /connect/token) is what the token check reports.
    let binders: Binder[];
    try {
      binders = await client.listBinders();
      add({ outcome: 'PASS', subject: 'token', message: `got a token from ${shownAddress(s.authUrl)} for client ${s.clientId}` });
    } catch (err) {
      if (err instanceof ServiceError && err.request.startsWith('POST /connect/token')) {
        add(failure('token', err, ExitCode.service));
        skipAll('needs a token');
        return;
      }
      add({ outcome: 'PASS', subject: 'token', message: `got a token from ${shownAddress(s.authUrl)} for client ${s.clientId}` });
      // GET /binders is the one path every server has: a 404 there means the base address misses its prefix.
      if (err instanceof ServiceError && err.code === 'SERVICE_NOT_FOUND') {
        add({
          outcome: 'FAIL',
          subject: 'binders',
          message: `${new URL('binders', s.baseUrl.endsWith('/') ? s.baseUrl : `${s.baseUrl}/`).href} answered 404 (${err.message})`,
          hint: BASE_URL_404_HINT,
          exit: ExitCode.service,
        });
      } else add(failure('binders', err, ExitCode.service));
      skipAll('needs the list of binders');
      return;
    }
    const readOnly = await accessCheck(client, config, add);
    for (const [i, pair] of config.pairs.entries()) await binderCheck(client, pair, i, binders, readOnly, add);
  } finally {
    await client.close();
  }
}

/**
 * There is no side-effect-free way to learn whether the client may write (the spec has no "whoami"):
 * GET presignedupload answers 403 to a read-only client, and otherwise only issues a slot that is never
 * used (it expires unused). Returns true when the client is read-only.
 */
async function accessCheck(client: ServiceClient, config: Config, add: (r: CheckResult) => void): Promise<boolean> {
  try {
    await client.getPresignedUpload();
    // An upload slot was granted; a server may still refuse the commit (spec 3): the first upload tells.
    add({ outcome: 'PASS', subject: 'access', message: 'read/write (upload slots are granted; whether commits are shows at the first upload)' });
    return false;
  } catch (err) {
    if (err instanceof ServiceError && err.status === 403) {
      add(readOnlyAccess(config.pairs));
      return true;
    }
    add(failure('access', err, ExitCode.service));
    return false;
  }
}

/**
 * A read-only client, said for the pairs there are: enough for download pairs; `both` pairs run download-only
 * (named); an upload pair fails on its own line (binderCheck).
 */
export function readOnlyAccess(pairs: readonly Pick<PairConfig, 'name' | 'direction'>[]): CheckResult {
  const both = pairs.filter((p) => p.direction === 'both').map((p) => p.name);
  if (pairs.every((p) => p.direction === 'download')) {
    return { outcome: 'PASS', subject: 'access', message: 'read-only, which is enough: every pair only downloads' };
  }
  if (both.length === 0) return { outcome: 'WARN', subject: 'access', message: 'read-only', hint: 'uploads need an API client with read/write access' };
  const which = both.length === 1 ? `pair ${both[0]} runs` : `pairs ${both.join(', ')} run`;
  return {
    outcome: 'WARN',
    subject: 'access',
    message: `read-only: ${which} download-only, local changes are not uploaded`,
    hint: 'uploads need an API client with read/write access',
  };
}

async function binderCheck(
  client: ServiceClient,
  pair: PairConfig,
  index: number,
  binders: readonly Binder[],
  readOnly: boolean,
  add: (r: CheckResult) => void,
): Promise<void> {
  const subject = `binder ${pair.binderId} (pair ${pair.name})`;
  const binder = binders.find((b) => b.id === pair.binderId);
  if (!binder) {
    const known = binders.slice(0, 5).map((b) => `${b.id} "${b.name}"`).join(', ');
    const more = binders.length > 5 ? `, and ${binders.length - 5} more` : '';
    add({
      outcome: 'FAIL',
      subject,
      message: `not found among the ${binders.length} binder${binders.length === 1 ? '' : 's'} of the tenant`,
      hint: binders.length === 0
        ? `this API client sees no binder: check service.tenantId and the client's access`
        : `check pairs[${index}].binderId; the tenant has ${known}${more}`,
      exit: ExitCode.service,
    });
    return;
  }
  add({ outcome: 'PASS', subject, message: `found "${binder.name}"` });
  if (readOnly && pair.direction === 'upload') {
    add({ outcome: 'FAIL', subject: `direction (pair ${pair.name})`, message: 'is upload, but the client is read-only', hint: 'use a read/write API client, or direction: download', exit: ExitCode.service });
  }

  const mSubject = `metadata (pair ${pair.name})`;
  let elements;
  try {
    elements = await client.getMetadataElements(pair.binderId);
  } catch (err) {
    const f = failure(mSubject, err, ExitCode.service);
    // The binder was found above (GET /binders lists it): a 404 here is not a wrong binderId (round 24, M8).
    if (err instanceof ServiceError && err.code === 'SERVICE_NOT_FOUND') {
      f.hint = LISTED_BINDER_404_HINT;
    }
    add(f);
    return;
  }
  let resolver;
  try {
    resolver = compileMetadataRules(pair.metadata, elements, pair.name);
  } catch (err) {
    // The rules are part of the config: a mismatch is fixed there, hence the config exit code. The error's own
    // hint ends "check checks them again", which a user running check does not need (black-box round 40c).
    const f = failure(mSubject, err, ExitCode.usage);
    add(f.hint === undefined ? f : { ...f, hint: METADATA_RULES_HINT });
    return;
  }
  const rules = pair.metadata.length;
  add({
    outcome: 'PASS',
    subject: mSubject,
    message: rules === 0
      ? `no rules; the binder has ${elements.length} metadata element${elements.length === 1 ? '' : 's'}`
      : `${rules} rule${rules === 1 ? ' fits' : 's fit'} the binder's ${elements.length} metadata element${elements.length === 1 ? '' : 's'}`,
  });
  if (pair.direction !== 'download' && !readOnly) {
    const coverage = resolver.requiredCoverage();
    const uncovered = coverage.filter((c) => c.globs.length === 0).map((c) => c.element);
    if (uncovered.length > 0) {
      add({
        outcome: 'WARN',
        subject: mSubject,
        message: `required element${uncovered.length === 1 ? '' : 's'} ${uncovered.join(', ')} ha${uncovered.length === 1 ? 's' : 've'} no rule: new local files will not be uploaded`,
        hint: `add a rule to pairs[${index}].metadata, e.g. match: "**"`,
      });
    }
    // Set by rules for some folders only: new files elsewhere wait as metadata-missing (black-box round 24, M7).
    for (const c of coverage.filter((x) => x.globs.length > 0 && !x.everywhere)) {
      add({
        outcome: 'WARN',
        subject: mSubject,
        message: `required element ${c.element} is set only for files matching ${c.globs.map((g) => `"${g}"`).join(', ')}: new local files elsewhere will not be uploaded`,
        hint: `if that is not meant, give it a value in a rule with match: "**" (rules apply in order: put it first, and the folder rules after it override it)`,
      });
    }
  }
}

// ---- local ----

function localChecks(config: Config, add: (r: CheckResult) => void): void {
  add(directoryCheck('state dir', config.stateDir, null));
  const owner = liveLockOwner(config.stateDir);
  if (owner !== null) add({ outcome: 'WARN', subject: 'state dir', message: `a binder-sync (pid ${owner}) is running on it; \`sync\` and \`run\` refuse to start (exit 5) until it stops` });
  for (const pair of config.pairs) {
    add(directoryCheck(`local root (pair ${pair.name})`, pair.localPath, path.join(config.stateDir, pair.name, 'state.db')));
    const damaged = stateDbIntegrity(config.stateDir, pair);
    if (damaged !== null) add(damaged);
    // A damaged DB is said once, by the line above, not again as a state that cannot be read.
    const bound = damaged?.outcome === 'FAIL' ? null : stateBinding(config.stateDir, pair);
    if (bound !== null) add(bound);
  }
  // Watches count per user, so all pairs together.
  const needed = config.pairs.reduce((n, p) => n + watchesNeeded(p), 0);
  add({ subject: 'inotify watches', ...watchBudget(needed, inotifyWatchLimit()) });
}

/**
 * The pair's state DB as SQLite's quick_check finds it: damage that `sync` and the daemon refuse when the pair opens
 * (exit 6) is said here too (black-box round 37b, F5). Null when there is no state DB yet.
 */
function stateDbIntegrity(stateDir: string, pair: PairConfig): CheckResult | null {
  const file = path.join(stateDir, pair.name, 'state.db');
  if (!fs.existsSync(file)) return null;
  const subject = `state DB (pair ${pair.name})`;
  let store: StateStore | undefined;
  try {
    store = openForReading(file);
    store.assertIntact(pair.name);
  } catch (err) {
    // One a first pass is creating right now holds nothing yet: nothing to check.
    if (err instanceof BinderSyncError && err.code === 'STATE_NOT_CREATED') return null;
    return failure(subject, err, ExitCode.local);
  } finally {
    store?.close();
  }
  return { outcome: 'PASS', subject, message: `${file} is intact (SQLite's quick_check)` };
}

/**
 * `sync` refuses a pair whose state was synced with another binder than the config now names (exit 2): `check`
 * says so before it (black-box round 26, Q4). Null when the state is bound to this binder, or to none yet.
 */
function stateBinding(stateDir: string, pair: PairConfig): CheckResult | null {
  let err;
  try {
    err = stateBoundToOtherBinder(pair, stateDir) ?? renamedPairError(pair, stateDir);
  } catch (e) {
    return failure(`state (pair ${pair.name})`, e, ExitCode.local);
  }
  return err === null ? null : { outcome: 'FAIL', subject: `state (pair ${pair.name})`, message: err.message, ...(err.hint !== undefined ? { hint: err.hint } : {}), exit: ExitCode.usage };
}

/** The verdict for `needed` watches against `limit`: a warning from 80% of it (other programs use watches too). */
export function watchBudget(needed: number, limit: number | null): Omit<CheckResult, 'subject' | 'exit'> {
  if (limit === null) return { outcome: 'SKIP', message: `${needed} needed; no inotify limit to compare with on this system` };
  const hint = `raise it, e.g. \`echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-binder-sync.conf && sudo sysctl --system\` (docs/OPERATIONS.md, section 8)`;
  const text = `${needed} needed, the limit is ${limit} per user`;
  if (needed > limit) return { outcome: 'WARN', message: `${text}: local changes would be found by rescans only`, hint };
  if (needed > limit * 0.8) return { outcome: 'WARN', message: `${text}: close to it (editors and other programs of this user use watches too)`, hint };
  return { outcome: 'PASS', message: text };
}

/**
 * A directory binder-sync must read and write: it exists (or can be created), is a directory, and a probe
 * file can be created and removed in it. `stateDb` (for sync roots) tells whether a missing root is an
 * error: a pair that has synced before never recreates its root (an unmounted disk must not look empty).
 */
function directoryCheck(subject: string, dir: string, stateDb: string | null): CheckResult {
  const fail = (message: string, hint: string): CheckResult => ({ outcome: 'FAIL', subject, message: `${dir} ${message}`, hint, exit: ExitCode.local });
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') return fail(`cannot be read (${code ?? 'error'})`, 'check the path and its permissions');
    if (stateDb !== null && syncedBefore(stateDb)) {
      return fail('is missing, but this pair has synced before', 'is the disk mounted? binder-sync will not recreate it (that would look like everything was deleted)');
    }
    // A sync root is created only inside an existing folder (see ensureRoot in sync/pass.ts).
    if (stateDb !== null && !fs.statSync(path.dirname(dir), { throwIfNoEntry: false })?.isDirectory()) {
      return fail(`does not exist, and neither does its parent folder ${path.dirname(dir)}`, `if the path is right, create it (mkdir -p ${dir}); a missing parent is often a disk that is not mounted`);
    }
    const ancestor = nearestExisting(dir);
    if (ancestor === null || !isWritableDir(ancestor)) {
      return fail('does not exist and cannot be created', `make ${ancestor ?? 'its parent'} writable, or create the directory`);
    }
    // Created in a folder of a full disk, it would fail at the first write (black-box round 37b, F8).
    if (diskFull(ancestor)) return fail(`does not exist, and the disk of ${ancestor} is full`, 'free some space on that disk, or point the path at another one');
    return { outcome: 'PASS', subject, message: `${dir} does not exist yet; it will be created` };
  }
  if (!st.isDirectory()) return fail('is not a directory', 'point the path at a directory');
  let entries: string[];
  try {
    entries = fs.readdirSync(dir);
  } catch (err) {
    return fail(`is not readable (${(err as NodeJS.ErrnoException).code ?? 'error'})`, `chmod u+rx ${dir}`);
  }
  // An empty root of a pair that has synced files: an unmounted disk's mount point looks like this, and every
  // pass stops at the local-root-empty gate (exit 4) until it is back (black-box round 37b, F9).
  const empty = entries.every((name) => name.startsWith(DAEMON_FILE_PREFIX));
  const synced = stateDb === null || !empty ? 0 : (StateStore.peekBaseCount(stateDb) ?? 0);
  if (synced > 0) {
    return {
      outcome: 'FAIL',
      subject,
      message: `${dir} is empty, but this pair has synced ${synced} file${synced === 1 ? '' : 's'}: passes stop at the safety gate (nothing is deleted)`,
      hint: 'is the disk mounted? Once it is, the pair goes on by itself; if the folder was emptied on purpose, `binder-sync sync --force` goes on from there',
      exit: ExitCode.blocked,
    };
  }
  const probe = probeWrite(dir);
  if (probe !== null) return fail(`is not writable (${probe})`, unwritableHint(probe, dir));
  return { outcome: 'PASS', subject, message: `${dir} is a readable and writable directory` };
}

/** What to do about a directory the probe could not write in, by why (chmod helps with permissions only). */
function unwritableHint(code: string, dir: string): string {
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'its disk is full (or over quota): free some space on it';
  if (code === 'EROFS') return 'it is on a read-only filesystem: remount it read-write, or point the path at another disk';
  return `chmod u+w ${dir}, or run binder-sync as its owner`;
}

/**
 * No block left for this user on the disk of `dir` (statfs); false when that cannot be told. Root may still write
 * into the blocks the filesystem reserves (bfree), which an unprivileged user may not (bavail).
 */
function diskFull(dir: string): boolean {
  try {
    const st = fs.statfsSync(dir);
    return (process.getuid?.() === 0 ? st.bfree : st.bavail) === 0;
  } catch {
    return false;
  }
}

/** Creates and removes `.binder-sync-probe-<random>` (a name the scanner ignores); null when it worked. */
function probeWrite(dir: string): string | null {
  const file = path.join(dir, `${DAEMON_FILE_PREFIX}probe-${randomBytes(6).toString('hex')}`);
  try {
    fs.writeFileSync(file, 'probe', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    // Created but not written (a full disk): not left behind (black-box round 37b, F8).
    if (code !== 'EEXIST') fs.rmSync(file, { force: true });
    return code;
  }
  try {
    fs.unlinkSync(file);
  } catch (err) {
    return `probe file ${file} could not be removed: ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  return null;
}

function isWritableDir(dir: string): boolean {
  try {
    if (!fs.statSync(dir).isDirectory()) return false;
    fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function nearestExisting(p: string): string | null {
  let cur = path.dirname(p);
  for (;;) {
    if (fs.existsSync(cur)) return cur;
    const up = path.dirname(cur);
    if (up === cur) return null;
    cur = up;
  }
}

function syncedBefore(stateDb: string): boolean {
  return (StateStore.peekBaseCount(stateDb) ?? 0) > 0;
}
