// Command-line entry: parses arguments with commander and dispatches to one module per command.
// Returns the process exit code (see cli/exit-codes.ts); never calls process.exit itself so that
// commands can close what they opened.
import { Command, CommanderError } from 'commander';
import { ExitCode } from './cli/exit-codes.js';
import { registerEmulatorCommand } from './cli/emulator-command.js';
import { registerRunCommand } from './cli/run-command.js';
import { registerSyncCommand } from './cli/sync-command.js';
import { registerStatusCommand } from './cli/status-command.js';
import { registerCheckCommand } from './cli/check-command.js';
import { describeError } from './errors.js';

export async function main(argv: string[]): Promise<number> {
  const program = new Command();
  let exitCode: number = ExitCode.ok;
  program
    .name('binder-sync')
    .description('Keep a local directory and a binder of the Document and Binder Service in two-way sync.')
    .version(await packageVersion(), '-V, --version')
    .showHelpAfterError('(run binder-sync --help for usage)')
    .exitOverride();
  const setExit = (code: number) => {
    exitCode = code;
  };
  registerSyncCommand(program, setExit);
  registerRunCommand(program, setExit);
  registerEmulatorCommand(program, setExit);
  registerStatusCommand(program, setExit);
  registerCheckCommand(program, setExit);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit through here with code 0; usage errors were already printed.
      return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    }
    process.stderr.write(`binder-sync: ${describeError(err)}\n`);
    return ExitCode.incomplete;
  }
  return exitCode;
}

async function packageVersion(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}
