// `binder-sync emulator`: placeholder until the emulator lands.
import type { Command } from 'commander';

export function registerEmulatorCommand(program: Command, _setExit: (code: number) => void): void {
  program.command('emulator').description('Run the bundled emulator of the service (not yet implemented)');
}
