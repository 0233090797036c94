// Command-line entry: parses arguments with commander and dispatches to one module per command.
// Returns the process exit code (see cli/exit-codes.ts); never calls process.exit itself so that
// commands can close what they opened.
import { Command, CommanderError } from 'commander';
import { dropOutputWhenReaderGone } from './cli/broken-pipe.js';
import { holdEarlySignals, releaseEarlySignals } from './cli/early-signals.js';
import { ExitCode } from './cli/exit-codes.js';
import { describeError } from './errors.js';

type Register = (program: Command, setExit: (code: number) => void) => void;

/**
 * Command modules, loaded lazily: a run of `binder-sync sync` does not pay for importing the emulator, the
 * daemon and every other command (start-up time matters for scripts and cron jobs that call it often).
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  sync: async () => (await import('./cli/sync-command.js')).registerSyncCommand,
  run: async () => (await import('./cli/run-command.js')).registerRunCommand,
  status: async () => (await import('./cli/status-command.js')).registerStatusCommand,
  check: async () => (await import('./cli/check-command.js')).registerCheckCommand,
  trash: async () => (await import('./cli/trash-command.js')).registerTrashCommand,
  emulator: async () => (await import('./cli/emulator-command.js')).registerEmulatorCommand,
  demo: async () => (await import('./cli/demo-command.js')).registerDemoCommand,
};

/** The exit codes (README "Exit codes", cli/exit-codes.ts), shown by `binder-sync --help`. */
const EXIT_CODES_HELP = `
Exit codes:
  0    done; for sync: both sides agree (a conflict is settled by
       conflictPolicy within the pass, so still 0; \`status\` lists it)
  1    the pass ran but something is left: items that cannot be synced
       (see \`status\`), files still being written, failed items
  2    bad command line, config (an unset \${VAR} in it included) or
       BINDER_SYNC_LOG_LEVEL: nothing touched
  3    the service could not be reached, refused the credentials or
       answered invalidly, or has no binder of that binderId for
       this client (wrong id, or no access: the service cannot tell)
  4    a safety gate stopped the pass before it deleted anything
       (see sync --force)
  5    another instance holds the stateDir's lock, or another
       binder-sync process syncs the same local folder
  6    local filesystem failure (sync root missing or not writable,
       disk full, permission denied, a damaged state DB)
  130  stopped by Ctrl-C: sync cancels its pass cleanly (no temp
       file left); a second Ctrl-C, or one to the daemon's
       shutdown, stops at once
  143  sync stopped by SIGTERM (cancelled cleanly, as above)

\`binder-sync help <command>\` shows a command's options. In a checkout
(not installed globally) run it as \`npx binder-sync ...\`.`;

export async function main(args: string[]): Promise<number> {
  dropOutputWhenReaderGone();
  // `help trash restore`: commander's help command takes one command name; a subcommand's is its --help.
  const argv = args[2] === 'help' && args.length > 4 ? [args[0]!, args[1]!, ...args.slice(3), '--help'] : args;
  const program = new Command();
  let exitCode: number = ExitCode.ok;
  program
    .name('binder-sync')
    .description('Keep a local directory and a binder of the Document and Binder Service in two-way sync.')
    .version(await packageVersion(), '-V, --version')
    .showHelpAfterError('(run binder-sync --help for usage)')
    .addHelpText('after', EXIT_CODES_HELP)
    .exitOverride();
  const setExit = (code: number) => {
    exitCode = code;
  };
  // Only the named command's module is loaded; help, unknown commands and `help <cmd>` load them all.
  const name = argv[2];
  // The long-running commands take SIGHUP over once loaded; until then it must not kill the process.
  if (name === 'run' || name === 'demo') holdEarlySignals(['SIGHUP']);
  // `help nosuch`: commander shows the whole help without a word about the name (black-box round 29b, finding 9).
  const helpFor = name === 'help' ? argv[3] : undefined;
  if (helpFor !== undefined && !helpFor.startsWith('-') && !Object.hasOwn(COMMANDS, helpFor)) {
    process.stderr.write(`error: unknown command '${helpFor}' (the commands: ${Object.keys(COMMANDS).join(', ')}; run binder-sync --help for usage)\n`);
    return ExitCode.usage;
  }
  const wanted = name !== undefined && Object.hasOwn(COMMANDS, name) ? [name] : Object.keys(COMMANDS);
  for (const n of wanted) (await COMMANDS[n]!())(program, setExit);
  // A usage error of a command points to that command's help, which lists its options (the program's does not).
  const pointToOwnHelp = (cmd: Command, prefix: string): void => {
    for (const sub of cmd.commands) {
      const full = `${prefix} ${sub.name()}`;
      sub.showHelpAfterError(`(run ${full} --help for usage)`);
      pointToOwnHelp(sub, full);
    }
  };
  pointToOwnHelp(program, 'binder-sync');
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit through here with code 0; usage errors were already printed.
      return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    process.stderr.write(`binder-sync: ${describeError(err)}\n`);
    return ExitCode.incomplete;
  } finally {
    releaseEarlySignals();
  }
  return exitCode;
}

/**
 * The version in package.json: one folder up from dist/cli.js (tsc's output), two from dist/bundle/cli.js (the
 * bundle bin/binder-sync.js runs; see rolldown.config.mjs).
 */
async function packageVersion(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  for (const candidate of ['../package.json', '../../package.json']) {
    const text = await readFile(new URL(candidate, import.meta.url), 'utf8').catch(() => null);
    const pkg = text === null ? null : (JSON.parse(text) as { name?: string; version?: string });
    if (pkg?.name === 'binder-sync' && typeof pkg.version === 'string') return pkg.version;
  }
  return 'unknown';
}
