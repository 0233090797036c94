// systemd readiness and stop notifications through the `systemd-notify` tool. Node has no unix datagram
// sockets, so the daemon cannot write to $NOTIFY_SOCKET itself; the unit therefore needs Type=notify together
// with NotifyAccess=all (the message comes from a child process, which NotifyAccess=main would drop).
import { execFile } from 'node:child_process';
import type { Logger } from '../log.js';

/**
 * Sends one notification (e.g. '--ready', 'STOPPING=1') when NOTIFY_SOCKET is set; a no-op otherwise.
 * Never throws and never blocks. A failure is a warning: under Type=notify, systemd would otherwise time the
 * unit out at start with nothing in the log to say why.
 */
export function notifySystemd(args: string[], log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (!env.NOTIFY_SOCKET) return Promise.resolve();
  return new Promise((resolve) => {
    try {
      execFile('systemd-notify', args, { env, timeout: 5000 }, (err) => {
        if (err) log.warn({ err, args, hint: 'is systemd-notify installed, and the unit NotifyAccess=all? see docs/OPERATIONS.md' }, 'systemd-notify failed');
        resolve();
      });
    } catch (err) {
      log.warn({ err, args, hint: 'is systemd-notify installed? see docs/OPERATIONS.md' }, 'systemd-notify could not be started');
      resolve();
    }
  });
}
