// Terminal progress of sync passes: one line on stderr with files and bytes done, rate and ETA, redrawn at most
// 5 times a second and cleared when the pass ends. Only on a terminal: nothing under systemd, in pipes or files.
import type { Action, Plan } from '../sync/model.js';
import type { PassObserver, PassOptions } from '../sync/pass.js';

/*
 * Why not a library (cli-progress & co.): the log lines (pino, pretty on a terminal) are written to stdout at
 * any moment, and a bar library redraws without knowing about them, so each log line would land in the middle
 * of the bar. This renderer owns the one line and clears it before any other write to stdout/stderr goes out
 * (see `intercept`); the next tick draws it again below the log line.
 */

/** Where the line is drawn: a terminal stream (process.stderr), or a fake in tests. */
export interface ProgressStream {
  write(chunk: string): unknown;
  /** Terminal width; 80 when unknown (undefined or 0). */
  columns?: number | undefined;
}

/** A stream whose writes must not tear the line (stdout carrying the logs, stderr carrying warnings). */
export interface InterceptableStream {
  write: (...args: never[]) => boolean;
}

export interface ProgressDisplayOptions {
  stream: ProgressStream;
  /** Milliseconds clock; Date.now by default (tests pass a fake one). */
  now?: () => number;
  /** Least time between two draws (default 200 ms: at most 5 per second). */
  intervalMs?: number;
  /** A pass that ends sooner than this after its plan shows nothing (default 500 ms): quick passes stay quiet. */
  showAfterMs?: number;
  /** Streams whose writes clear the line first (they are patched until close()). */
  intercept?: InterceptableStream[];
  /** Draw from a timer every intervalMs (default true); tests call tick() themselves. */
  autoTick?: boolean;
}

/** What the line shows for one running pass. */
export interface PassProgress {
  pair: string;
  /** When the plan was known (execution started). */
  startedAt: number;
  /** Transfers planned: downloads, uploads and conflicts (each moves content). */
  filesTotal: number;
  filesDone: number;
  filesFailed: number;
  bytesDone: number;
  /** Known only when every transfer is an upload (the local size is known; remote listings carry no size). */
  bytesTotal: number | null;
}

const CLEAR = '\r\x1b[K';
const BAR_WIDTH = 20;

/** True when a progress line belongs on this stream: a terminal, not TERM=dumb, not BINDER_SYNC_PROGRESS=0. */
export function wantProgress(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && env.TERM !== 'dumb' && env.BINDER_SYNC_PROGRESS !== '0';
}

/** The PassOptions callbacks of an observer (onPassEnd is the caller's to call). */
export function passHooks(obs: PassObserver | undefined): Pick<PassOptions, 'onPlan' | 'onActionDone' | 'onBytes'> {
  if (!obs) return {};
  return {
    ...(obs.onPlan ? { onPlan: obs.onPlan } : {}),
    ...(obs.onActionDone ? { onActionDone: obs.onActionDone } : {}),
    ...(obs.onBytes ? { onBytes: obs.onBytes } : {}),
  };
}

/** Actions that move content and count as "files" on the line. */
function isTransfer(a: Action): boolean {
  return a.kind === 'download' || a.kind === 'upload' || a.kind === 'conflict';
}

/** Counts the plan's transfers; the byte total only when all of them are uploads (sizes known up front). */
export function progressOfPlan(pair: string, plan: Plan, startedAt: number): PassProgress {
  let filesTotal = 0;
  let uploadBytes = 0;
  let allUploads = true;
  for (const group of plan.groups) {
    for (const a of group) {
      if (!isTransfer(a)) continue;
      filesTotal++;
      if (a.kind === 'upload') uploadBytes += a.local.size;
      else allUploads = false;
    }
  }
  return { pair, startedAt, filesTotal, filesDone: 0, filesFailed: 0, bytesDone: 0, bytesTotal: allUploads ? uploadBytes : null };
}

/** "512 B", "1.5 KiB", "12.3 MiB", "123 MiB", "2.0 GiB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${Math.max(0, Math.round(n))} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

/** Bytes per second as "3.4 MiB/s". */
export function formatRate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`;
}

/** "7s", "3m05s", "1h02m"; rounded up so that the ETA never says 0s while work is left. */
export function formatEta(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  const m = Math.floor(s / 60);
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/**
 * Time left: from bytes when the total is known (all uploads), else from files at the average time per file so
 * far (downloads: remote listings carry no size). Null while nothing has finished (no basis for a guess).
 */
export function etaMs(p: PassProgress, now: number): number | null {
  const elapsed = Math.max(1, now - p.startedAt);
  const finished = p.filesDone + p.filesFailed;
  if (p.bytesTotal !== null && p.bytesTotal > 0 && p.bytesDone > 0) {
    return ((p.bytesTotal - Math.min(p.bytesDone, p.bytesTotal)) * elapsed) / p.bytesDone;
  }
  if (finished > 0) return (elapsed * Math.max(0, p.filesTotal - finished)) / finished;
  return null;
}

/**
 * One pass as text: "[pair] ███████░░░ 120/300 files · 45.2 MiB · 3.4 MiB/s · ETA 52s". The rate is the
 * average since the plan started (steady, unlike an instantaneous rate with many small files).
 */
export function describeProgress(p: PassProgress, now: number, withBar: boolean): string {
  const finished = p.filesDone + p.filesFailed;
  const elapsed = Math.max(1, now - p.startedAt);
  const parts: string[] = [];
  let files = `${finished}/${p.filesTotal} files`;
  if (p.filesFailed > 0) files += ` (${p.filesFailed} failed)`;
  parts.push(files);
  parts.push(p.bytesTotal !== null ? `${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)}` : formatBytes(p.bytesDone));
  parts.push(formatRate((p.bytesDone * 1000) / elapsed));
  const eta = finished >= p.filesTotal ? null : etaMs(p, now);
  parts.push(finished >= p.filesTotal ? 'finishing' : `ETA ${eta === null ? '--' : formatEta(eta)}`);
  const fraction = p.bytesTotal !== null && p.bytesTotal > 0 ? p.bytesDone / p.bytesTotal : p.filesTotal > 0 ? finished / p.filesTotal : 1;
  const head = withBar ? `[${p.pair}] ${bar(fraction)} ` : `[${p.pair}] `;
  return head + parts.join(' · ');
}

function bar(fraction: number): string {
  const full = Math.round(Math.min(1, Math.max(0, fraction)) * BAR_WIDTH);
  return '█'.repeat(full) + '░'.repeat(BAR_WIDTH - full);
}

/** Cuts the line to the terminal width (minus one column, so it never wraps: a wrapped line cannot be cleared). */
export function fitToWidth(line: string, columns: number): string {
  const max = Math.max(10, columns - 1);
  const chars = [...line];
  return chars.length <= max ? line : `${chars.slice(0, max - 1).join('')}…`;
}

/**
 * The progress line for every pass running in this process (one pair in `sync`, several in the daemon; their
 * parts are joined on the one line). Create it only when wantProgress() says so; close() when done.
 */
export class ProgressDisplay {
  private readonly now: () => number;
  private readonly intervalMs: number;
  private readonly showAfterMs: number;
  private readonly active = new Map<string, PassProgress>();
  private readonly restores: Array<() => void> = [];
  private readonly writeOwn: (s: string) => void;
  private timer: NodeJS.Timeout | null = null;
  private drawn = false;
  private lastDraw = -Infinity;
  private closed = false;

  constructor(private readonly o: ProgressDisplayOptions) {
    this.now = o.now ?? Date.now;
    this.intervalMs = o.intervalMs ?? 200;
    this.showAfterMs = o.showAfterMs ?? 500;
    let own: (s: string) => void = (s) => void o.stream.write(s);
    for (const s of o.intercept ?? []) {
      const target = s as unknown as { write: (...args: unknown[]) => boolean };
      const original = target.write;
      if ((s as unknown) === o.stream) own = (text) => void original.call(target, text);
      target.write = (...args: unknown[]) => {
        this.clear();
        return original.apply(target, args);
      };
      this.restores.push(() => {
        target.write = original;
      });
    }
    this.writeOwn = own;
  }

  /** Callbacks for the passes of one pair. */
  observer(pair: string): PassObserver {
    return {
      onPlan: (plan) => {
        if (this.closed) return;
        const p = progressOfPlan(pair, plan, this.now());
        if (p.filesTotal === 0) return;
        this.active.set(pair, p);
        this.startTimer();
      },
      onActionDone: (action, ok) => {
        const p = this.active.get(pair);
        if (!p || !isTransfer(action)) return;
        if (ok) p.filesDone++;
        else p.filesFailed++;
      },
      onBytes: (n) => {
        const p = this.active.get(pair);
        if (p) p.bytesDone += n;
      },
      onPassEnd: () => {
        if (!this.active.delete(pair)) return;
        if (this.active.size === 0) {
          this.clear();
          this.stopTimer();
        }
      },
    };
  }

  /** Draws the line when a pass has run long enough and the last draw is at least intervalMs ago. */
  tick(): void {
    if (this.closed) return;
    const now = this.now();
    // 10% slack: a timer firing a hair early must not skip every other draw.
    if (now - this.lastDraw < this.intervalMs * 0.9) return;
    const visible = [...this.active.values()].filter((p) => now - p.startedAt >= this.showAfterMs);
    if (visible.length === 0) return;
    // 0 or undefined: a terminal that does not say its width (e.g. under `script`).
    const columns = this.o.stream.columns || 80;
    const withBar = visible.length === 1 && columns >= 90;
    const line = fitToWidth(visible.map((p) => describeProgress(p, now, withBar)).join('  |  '), columns);
    this.lastDraw = now;
    this.writeOwn(`${CLEAR}${line}`);
    this.drawn = true;
  }

  /** Removes the line (if drawn) and restores the intercepted streams. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.stopTimer();
    this.clear();
    this.closed = true;
    this.active.clear();
    for (const restore of this.restores.splice(0)) restore();
  }

  private clear(): void {
    if (!this.drawn) return;
    // The next tick draws it again, below whatever was written (the draw rate stays bounded by the timer).
    this.drawn = false;
    this.writeOwn(CLEAR);
  }

  private startTimer(): void {
    if (this.timer || this.o.autoTick === false) return;
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  private stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
