// The daemon's systemd notifications: nothing without NOTIFY_SOCKET, and a failure said at warn (under
// Type=notify systemd would otherwise time the unit out at start with nothing in the log to say why).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { notifySystemd } from '../../src/daemon/systemd.js';
import { createLogger } from '../../src/log.js';

function capture() {
  const lines: Array<{ level: number; msg: string; hint?: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as { level: number; msg: string });
      done();
    },
  });
  return { log: createLogger({ destination: sink, level: 'debug', pretty: false }), lines };
}

describe('notifySystemd', () => {
  it('does nothing without NOTIFY_SOCKET', async () => {
    const { log, lines } = capture();
    await notifySystemd(['--ready'], log, { PATH: '/nonexistent' });
    expect(lines).toEqual([]);
  });

  it('warns, with a hint, when systemd-notify cannot be run', async () => {
    const { log, lines } = capture();
    const emptyBin = fs.mkdtempSync(path.join(os.tmpdir(), 'no-systemd-notify-'));
    await notifySystemd(['--ready'], log, { PATH: emptyBin, NOTIFY_SOCKET: '/run/nothing' });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[40, 'systemd-notify failed']]);
    expect(lines[0]?.hint).toContain('NotifyAccess=all');
    fs.rmSync(emptyBin, { recursive: true, force: true });
  });
});
