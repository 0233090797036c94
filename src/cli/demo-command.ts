// `binder-sync demo` (what `npm start` runs): the bundled emulator seeded with the "Project Atlas" binder and the
// daemon syncing it into ./demo/Project Atlas, in one process, with a short "what to try" guide. Ctrl-C stops both.
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { Option, type Command } from 'commander';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../config/load.js';
import { startDaemon, type Daemon } from '../daemon/run.js';
import { DEFAULT_SHUTDOWN_GRACE_MS, timingFromEnv } from '../daemon/timing.js';
import { startEmulator, type Emulator } from '../emulator/index.js';
import { BinderSyncError, describeError } from '../errors.js';
import { createLogger, logLevelFromEnv } from '../log.js';
import { acquireStateLock, type StateLock } from '../state/lock.js';
import { StateStore } from '../state/store.js';
import type { PassObserver, PassReport } from '../sync/pass.js';
import { exitCodeFor, parsePort } from './common.js';
import { takeEarlySignals } from './early-signals.js';
import { ExitCode } from './exit-codes.js';
import { ProgressDisplay, wantProgress } from './progress.js';
import { FORCED_EXIT_CODE } from './run-command.js';

export const DEMO_DEFAULT_PORT = 8470;
const PAIR = 'project-atlas';
const LOCAL_NAME = 'Project Atlas';
/** The folder the guide points at (a top-level tab of the demo seed with plain names). */
const GUIDE_FOLDER = '05 Correspondence';
/** The seed's required enumerated element and one of its allowed value ids (see emulator/seed.ts DEPARTMENTS). */
const REQUIRED_ELEMENT = 'Department';
const DEPARTMENT_VALUE = 'eng';
/** If the first pass has not ended by then (the service refused, a pair error), print the guide anyway. */
const GUIDE_FALLBACK_MS = 60_000;

/**
 * Everything the demo owns lives in ./demo (relative to the working directory; .gitignore has /demo/). Nothing
 * outside it is ever written or deleted. Decision: the emulator keeps its data in ./demo/emulator, so a second
 * `npm start` continues where the first stopped (remote edits, uploaded versions, the sync state and the local
 * folder are all reused); `--reset` starts over.
 */
export interface DemoPaths {
  dir: string;
  emulatorData: string;
  stateDir: string;
  local: string;
  config: string;
  secret: string;
}

export function demoPaths(cwd: string): DemoPaths {
  const dir = path.resolve(cwd, 'demo');
  return {
    dir,
    emulatorData: path.join(dir, 'emulator'),
    stateDir: path.join(dir, 'state'),
    local: path.join(dir, LOCAL_NAME),
    config: path.join(dir, 'sync.yaml'),
    secret: path.join(dir, 'client-secret'),
  };
}

export interface DemoOptions {
  /** Preferred emulator port; when it is taken a free one is used. 0 = any free port. */
  port: number;
  /** Remove what an earlier demo left in ./demo first. */
  reset: boolean;
  cwd: string;
}

export function registerDemoCommand(program: Command, setExit: (code: number) => void): void {
  program
    .command('demo')
    .description('Try binder-sync: run the bundled emulator with a demo binder and sync it into ./demo/Project Atlas (what npm start runs)')
    .addOption(
      new Option('--port <n>', 'emulator port on 127.0.0.1 (a free one is used when it is taken; 0 = any)')
        .default(DEMO_DEFAULT_PORT)
        .argParser(parsePort),
    )
    .option('--reset', 'start over: remove the emulator data, sync state and local folder in ./demo first')
    .addHelpText('after', '\nEverything lives in ./demo; running it again continues where the last run stopped. Ctrl-C (or SIGTERM, or\nSIGHUP from a closed terminal) stops it cleanly: the daemon first, then the emulator.')
    .action(async (raw: { port: number; reset?: boolean }) => setExit(await runDemo({ port: raw.port, reset: raw.reset === true, cwd: process.cwd() })));
}

export async function runDemo(opts: DemoOptions, out: Writable = process.stdout, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const paths = demoPaths(opts.cwd);
  const rel = (p: string) => path.relative(opts.cwd, p) || '.';
  let levelOverride;
  try {
    levelOverride = logLevelFromEnv(env);
  } catch (err) {
    process.stderr.write(`binder-sync demo: ${describeError(err)}\n`);
    return exitCodeFor(err);
  }

  // Signals first, so that a Ctrl-C during start-up still stops cleanly once things are running.
  let stopRequested = false;
  let daemon: Daemon | undefined;
  let wake: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (wake = resolve));
  let signals = 0;
  let lock: StateLock | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (++signals > 1 && signal === 'SIGINT') {
      // Second Ctrl-C: leave now (the state DB and the emulator data are crash-safe).
      daemon?.releaseLockNow();
      lock?.release();
      process.exit(FORCED_EXIT_CODE);
    }
    stopRequested = true;
    wake();
  };
  const onInt = () => onSignal('SIGINT');
  const onTerm = () => onSignal('SIGTERM');
  // A closed terminal (SIGHUP) stops the demo too, instead of killing it mid-write.
  const onHup = () => onSignal('SIGHUP');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onHup);
  // A SIGHUP that arrived while the modules loaded (cli.ts held it): stop before anything is started or written.
  const hupWhileLoading = takeEarlySignals().has('SIGHUP');

  let emu: Emulator | undefined;
  let progress: ProgressDisplay | null = null;
  let guideTimer: NodeJS.Timeout | undefined;
  try {
    if (hupWhileLoading) {
      out.write('Demo stopped (SIGHUP) before it started: nothing was started or changed.\n');
      return ExitCode.ok;
    }
    fs.mkdirSync(paths.dir, { recursive: true });
    try {
      // One demo per directory: a second one would share the emulator's data files.
      lock = acquireStateLock(paths.dir);
    } catch (err) {
      if (err instanceof BinderSyncError && err.code === 'STATE_LOCKED') {
        process.stderr.write(`binder-sync: a demo is already running in ${rel(paths.dir)} (pid ${String(err.context?.pid)}); stop it first (Ctrl-C in its terminal)\n`);
        return ExitCode.locked;
      }
      throw err;
    }
    if (opts.reset) {
      for (const p of [paths.emulatorData, paths.stateDir, paths.local, paths.config, paths.secret]) fs.rmSync(p, { recursive: true, force: true });
      out.write(`Starting over: removed the emulator data, sync state and local folder in ${rel(paths.dir)}\n`);
    }

    const started = Date.now();
    let portNote = '';
    emu = await startEmulatorOnPort(opts.port, paths.emulatorData, (taken) => {
      portNote = ` (port ${taken} is taken, so another one was picked)`;
    });
    const binderId = emu.demoBinderId;
    if (!binderId) {
      throw new BinderSyncError(`the emulator data in ${rel(paths.emulatorData)} has no "Project Atlas" binder`, {
        code: 'DEMO_DATA',
        retryable: false,
        hint: 'start over with `npm start -- --reset` (or `binder-sync demo --reset`)',
      });
    }
    // The state DB remembers document ids; ids of another emulator data set would all look deleted remotely.
    // Then only the state is reset: the local folder stays, and the first pass compares it with the binder
    // (same content is adopted, different content kept as a conflict copy) so no local edit is lost.
    const previousBinder = previousBinderId(paths.config);
    if (fs.existsSync(paths.stateDir) && previousBinder !== binderId) {
      fs.rmSync(paths.stateDir, { recursive: true, force: true });
      out.write(`The emulator data is new: the sync state in ${rel(paths.stateDir)} was reset (the local folder is kept)\n`);
    }
    writeDemoConfig(paths, emu, binderId);
    if (stopRequested) return await finish();

    const { config } = loadConfig(paths.config, env);
    const log = createLogger({ level: levelOverride ?? config.log.level });
    const docs = emu.control.listDocuments(binderId).length;
    out.write(
      [
        '',
        `binder-sync demo: emulator with "Project Atlas" (${docs} documents) ready in ${Date.now() - started} ms at ${emu.controlUrl.replace(/\/_control$/, '')}${portNote}`,
        `Syncing it into ${rel(paths.local)} ... (config: ${rel(paths.config)})`,
        '',
      ].join('\n'),
    );

    progress = wantProgress(process.stderr, env) ? new ProgressDisplay({ stream: process.stderr, intercept: [process.stdout, process.stderr] }) : null;
    const runningEmu = emu;
    let guideShown = false;
    /** After the first pass (its report; null when it failed), or when it takes too long (undefined). */
    const showGuide = (first?: PassReport | null) => {
      if (guideShown || stopRequested) return;
      guideShown = true;
      clearTimeout(guideTimer);
      const headline = firstPassHeadline(first, first ? filesInSync(paths.stateDir) : null, rel(paths.local), `npx binder-sync status --config ${shellQuote(rel(paths.config))}`);
      out.write(guideText(runningEmu, binderId, paths, opts.cwd, headline));
    };
    guideTimer = setTimeout(() => showGuide(), GUIDE_FALLBACK_MS);
    guideTimer.unref();
    daemon = await startDaemon({
      configFile: paths.config,
      config,
      log,
      timing: timingFromEnv(env),
      graceMs: DEFAULT_SHUTDOWN_GRACE_MS,
      env,
      passObserver: (pair) => withGuide(progress?.observer(pair), showGuide),
    });
    await stopped;
    return await finish();
  } catch (err) {
    process.stderr.write(`binder-sync demo: ${describeError(err)}\n`);
    await finish().catch(() => undefined);
    return exitCodeFor(err);
  } finally {
    clearTimeout(guideTimer);
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    process.off('SIGHUP', onHup);
  }

  /** The daemon first (it finishes what it is writing), then the emulator it talks to. */
  async function finish(): Promise<number> {
    progress?.close();
    progress = null;
    if (daemon) await daemon.shutdown();
    daemon = undefined;
    await emu?.close();
    emu = undefined;
    lock?.release();
    if (stopRequested) {
      out.write(`\nDemo stopped. Everything stays in ${rel(paths.dir)}: npm start continues where you left off, npm start -- --reset starts over.\n`);
    }
    return ExitCode.ok;
  }
}

/** The preferred port, or any free one when it is taken (a second checkout, another service on 8470). */
async function startEmulatorOnPort(port: number, dataDir: string, onTaken: (port: number) => void): Promise<Emulator> {
  const options = { seed: 'demo' as const, dataDir, quiet: true };
  try {
    return await startEmulator({ ...options, port });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || port === 0) throw err;
    onTaken(port);
    return startEmulator({ ...options, port: 0 });
  }
}

/** The binder id the existing demo config was written for, or null. */
function previousBinderId(configFile: string): string | null {
  try {
    const doc = parse(fs.readFileSync(configFile, 'utf8')) as { pairs?: Array<{ binderId?: unknown }> } | null;
    const id = doc?.pairs?.[0]?.binderId;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

/**
 * Rewritten on every start: the port may differ. The secret goes to a 0600 file next to it (clientSecretFile),
 * never into the YAML. Paths in the config are relative to it.
 */
export function writeDemoConfig(paths: DemoPaths, emu: Emulator, binderId: string): void {
  writePrivate(paths.secret, `${emu.credentials.clientSecret}\n`);
  const config = {
    service: {
      baseUrl: emu.baseUrl,
      authUrl: emu.authUrl,
      tenantId: emu.credentials.tenantId,
      clientId: emu.credentials.clientId,
      clientSecretFile: path.basename(paths.secret),
    },
    stateDir: path.basename(paths.stateDir),
    log: { level: 'info' },
    pairs: [
      {
        name: PAIR,
        localPath: LOCAL_NAME,
        binderId,
        // Short, so that a document added through the control API shows up quickly.
        pollInterval: '10s',
        // The emulator runs in this process: its CPU (answering the listing) would count against the poll CPU
        // budget and space the polls out to 20-40 s, breaking the guide's "at the next poll (10 s)".
        pollCpuBudget: 0,
        // Department is a required element of the demo binder: every upload needs a value.
        metadata: [{ match: '**', values: { [REQUIRED_ELEMENT]: DEPARTMENT_VALUE } }],
      },
    ],
  };
  const header = '# Written by `binder-sync demo` on every start (the emulator port may change); edits here are overwritten.\n';
  writePrivate(paths.config, header + stringify(config));
}

function writePrivate(file: string, text: string): void {
  fs.writeFileSync(file, text, { mode: 0o600 });
  // writeFileSync keeps the mode of an existing file.
  fs.chmodSync(file, 0o600);
}

/** Adds "show the guide after the first pass" to the progress callbacks of a pair. */
function withGuide(obs: PassObserver | undefined, showGuide: (first: PassReport | null) => void): PassObserver {
  return {
    ...obs,
    onPassEnd: (report) => {
      obs?.onPassEnd?.(report);
      // After the pass summary the worker logs right after this call: the guide is the last thing on screen.
      setImmediate(() => showGuide(report));
    },
  };
}

/** Files the demo pair has in sync (its state DB, read-only beside the daemon); null when it cannot be read. */
function filesInSync(stateDir: string): number | null {
  return StateStore.peekBaseCount(path.join(stateDir, PAIR, 'state.db'));
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * The guide's first line: what the first pass actually did. "In sync" only when it is (nothing failed, nothing
 * left, no conflict); otherwise the counts and the status command that lists them. `first` is the first pass's
 * report, null when that pass failed as a whole, undefined when it has not ended yet (the guide's fallback).
 */
export function firstPassHeadline(first: PassReport | null | undefined, inSync: number | null, localRel: string, statusCommand: string): string {
  if (first === undefined) return `The first sync of the binder "Project Atlas" into ${localRel} is still running or retrying: \`${statusCommand}\` shows where it is`;
  if (first === null) return `The first sync of the binder "Project Atlas" failed (see the log above); it is retried with back-off: \`${statusCommand}\` shows the last error`;
  const files = inSync === null ? '' : ` (${plural(inSync, 'file')})`;
  const conflicts = first.execution?.conflicts.length ?? 0;
  const failed = first.execution?.failures.length ?? 0;
  const notSynced = first.issues.length + first.deferred.length;
  if (first.plan.blocked) return `The first sync stopped before deleting anything: ${first.plan.blocked.message}; see \`${statusCommand}\``;
  if (first.converged && conflicts === 0) return `The binder "Project Atlas" is in sync with the folder ${localRel}${files}`;
  const parts = [
    conflicts > 0 ? plural(conflicts, 'conflict') : '',
    failed > 0 ? `${failed} failed` : '',
    notSynced > 0 ? `${plural(notSynced, 'item')} not synced` : '',
  ].filter(Boolean);
  const what = inSync === null ? 'First sync done' : `First sync done: ${plural(inSync, 'file')} in sync`;
  return `${what}; ${parts.join(', ')}: see \`${statusCommand}\``;
}

/** Quotes a string for a POSIX shell. */
function shellQuote(s: string): string {
  return /^[\w./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The "what to try" block, with ready-to-paste commands for this emulator, binder and folder. */
export function guideText(emu: Emulator, binderId: string, paths: DemoPaths, cwd: string, headline?: string): string {
  const rel = (p: string) => path.relative(cwd, p) || '.';
  const control = emu.controlUrl;
  const folders = emu.control.listFolders(binderId);
  const folder = folders.find((f) => f.name === GUIDE_FOLDER && f.parentId === null) ?? folders.find((f) => f.parentId === null);
  const docs = emu.control.listDocuments(binderId);
  const lines = [
    '',
    '──────────────────────────── what to try ────────────────────────────',
    headline ?? `The binder "Project Atlas" is synced into the folder ${rel(paths.local)}`,
  ];
  let step = 1;
  if (folder) {
    const inFolder = docs.filter((d) => d.folderId === folder.id);
    // A plain ASCII name keeps the command easy to paste in any shell.
    const sample = inFolder.find((d) => /^[\w .-]+$/.test(d.fileName)) ?? inFolder[0];
    if (sample) {
      const file = path.join(rel(paths.local), folder.name, sample.fileName);
      lines.push(
        `${step++}. Edit a file there; it is uploaded as a new version within seconds:`,
        `     echo "my first edit" >> ${shellQuote(file)}`,
        `   then see the pass in the status, and the new version on the service:`,
        `     npx binder-sync status --config ${shellQuote(rel(paths.config))}`,
        `     curl -s ${control}/documents/${sample.id}/versions`,
      );
    }
    const taken = new Set(inFolder.map((d) => d.fileName));
    let fileName = 'Hello from the service.txt';
    for (let n = 2; taken.has(fileName); n++) fileName = `Hello from the service ${n}.txt`;
    const body = JSON.stringify({
      binderId,
      folderId: folder.id,
      fileName,
      content: 'Added on the service side through the emulator control API.\n',
      metadata: [{ metadataElementId: REQUIRED_ELEMENT, valueId: DEPARTMENT_VALUE }],
    });
    lines.push(
      `${step++}. Add a document on the service side (as a colleague would); it arrives in ${shellQuote(path.join(rel(paths.local), folder.name))} at the next poll (10 s):`,
      `     curl -s -X POST ${control}/documents -H 'content-type: application/json' -d ${shellQuote(body)}`,
    );
  }
  lines.push(
    `${step++}. Look around the service through the emulator's control API (JSON, also in a browser):`,
    `     ${control}/binders/${binderId}/documents`,
    `     ${control}/binders/${binderId}/folders`,
    `Config ${rel(paths.config)} · sync state ${rel(paths.stateDir)} · service data ${rel(paths.emulatorData)}`,
    'Press Ctrl-C to stop (the daemon first, then the emulator).',
    '──────────────────────────────────────────────────────────────────────',
    '',
  );
  return lines.join('\n');
}
