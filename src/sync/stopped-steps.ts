// Steps a stop cut short (SIGTERM, SIGINT, a daemon's reload): cancelled cleanly, nothing half-done left, and the
// next run takes them up. Not failures: the pass summary, the pair's lastError and `status` say them apart.
import type { ActionFailure } from './executor.js';

/** Meta key: how many steps the last pass left because a stop cut it short ('' or absent: none). */
export const LAST_PASS_STOPPED = 'lastPassStopped';

/** The step was cut short by a stop (a postponed step is the file's changing, not the stop's). */
export function stoppedByShutdown(f: Pick<ActionFailure, 'code' | 'postponed'>): boolean {
  return f.code === 'ABORTED' && f.postponed !== true;
}
