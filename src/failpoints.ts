// Failpoints for crash tests: BINDER_SYNC_FAILPOINT=<name>[,<name>...] makes the process kill itself with
// SIGKILL when it reaches that point (once per process). Unset in production: one cached env lookup.
const armed = new Set((process.env.BINDER_SYNC_FAILPOINT ?? '').split(',').map((s) => s.trim()).filter(Boolean));

export type FailpointName =
  | 'upload-after-slot'
  | 'upload-after-put'
  | 'upload-before-commit'
  | 'upload-after-commit'
  | 'download-after-temp'
  | 'download-after-rename'
  | 'conflict-after-move'
  | 'move-after-rename'
  | 'move-after-link'
  | 'move-dir-after-rename'
  | 'trash-after-move';

export function failpoint(name: FailpointName): void {
  if (armed.size === 0 || !armed.has(name)) return;
  process.kill(process.pid, 'SIGKILL');
}
