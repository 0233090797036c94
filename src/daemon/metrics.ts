// A tiny metrics registry (counters and gauges with labels) rendered in the Prometheus text exposition
// format 0.0.4, the binder-sync metric set the daemon feeds, and an HTTP endpoint serving GET /metrics.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BinderSyncError } from '../errors.js';

export type Labels = Record<string, string>;
export type MetricType = 'counter' | 'gauge';

/** Content-Type of the text exposition format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** One metric family: a name, help text, fixed label names and a value per label combination. */
abstract class Family {
  abstract readonly type: MetricType;
  protected readonly values = new Map<string, { labels: Labels; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    if (!NAME_RE.test(name)) throw new Error(`invalid metric name ${name}`);
    for (const l of labelNames) if (!LABEL_RE.test(l) || l.startsWith('__')) throw new Error(`invalid label name ${l}`);
  }

  /** The sample for these labels (exactly the declared label names), created at 0. */
  protected slot(labels: Labels): { labels: Labels; value: number } {
    const keys = Object.keys(labels);
    if (keys.length !== this.labelNames.length || !this.labelNames.every((l) => typeof labels[l] === 'string')) {
      throw new Error(`${this.name} takes the labels {${this.labelNames.join(', ')}}, got {${keys.join(', ')}}`);
    }
    const ordered: Labels = {};
    for (const l of this.labelNames) ordered[l] = labels[l] as string;
    const id = JSON.stringify(this.labelNames.map((l) => ordered[l]));
    let s = this.values.get(id);
    if (!s) {
      s = { labels: ordered, value: 0 };
      this.values.set(id, s);
    }
    return s;
  }

  get(labels: Labels = {}): number {
    return this.slot(labels).value;
  }

  /** Drops every sample whose labels include these (e.g. a pair removed from the config). */
  remove(match: Labels): void {
    for (const [id, s] of this.values) if (Object.entries(match).every(([k, v]) => s.labels[k] === v)) this.values.delete(id);
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    // Sorted so that the output is stable whatever order the samples were first touched in.
    const samples = [...this.values.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [, s] of samples) lines.push(`${this.name}${renderLabels(s.labels)} ${formatValue(s.value)}`);
    return `${lines.join('\n')}\n`;
  }
}

export class Counter extends Family {
  readonly type = 'counter';

  /** Adds n (>= 0; a counter never goes down). */
  inc(labels: Labels = {}, n = 1): void {
    if (!(n >= 0)) throw new Error(`${this.name}: a counter cannot be increased by ${n}`);
    this.slot(labels).value += n;
  }

  /** Sets the running total read from elsewhere (e.g. the process's CPU time); it may only grow. */
  setTotal(labels: Labels, total: number): void {
    const s = this.slot(labels);
    if (!(total >= s.value)) throw new Error(`${this.name}: a counter cannot go down from ${s.value} to ${total}`);
    s.value = total;
  }
}

export class Gauge extends Family {
  readonly type = 'gauge';

  set(labels: Labels, value: number): void {
    this.slot(labels).value = value;
  }

  inc(labels: Labels = {}, n = 1): void {
    this.slot(labels).value += n;
  }

  dec(labels: Labels = {}, n = 1): void {
    this.slot(labels).value -= n;
  }
}

export class MetricsRegistry {
  private readonly families = new Map<string, Family>();
  private readonly collectors: Array<() => void> = [];

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.register(new Counter(name, help, labelNames));
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.register(new Gauge(name, help, labelNames));
  }

  /** Runs fn before every render: for values read on demand (memory, CPU time) rather than fed by events. */
  onCollect(fn: () => void): void {
    this.collectors.push(fn);
  }

  /** The whole registry in the text exposition format 0.0.4, families in registration order. */
  render(): string {
    for (const collect of this.collectors) collect();
    return [...this.families.values()].map((f) => f.render()).join('');
  }

  private register<F extends Family>(f: F): F {
    if (this.families.has(f.name)) throw new Error(`metric ${f.name} is already registered`);
    this.families.set(f.name, f);
    return f;
  }
}

/** The metrics the daemon feeds, each labelled by pair (transfers also by direction). */
export interface SyncMetrics {
  registry: MetricsRegistry;
  /** {pair, direction: 'upload' | 'download'} */
  filesTransferred: Counter;
  /** {pair, direction: 'upload' | 'download'} */
  bytesTransferred: Counter;
  queueDepth: Gauge;
  errors: Counter;
  lastPollTimestamp: Gauge;
  conflicts: Counter;
  passDuration: Gauge;
}

export function createSyncMetrics(registry = new MetricsRegistry()): SyncMetrics {
  const metrics: SyncMetrics = {
    registry,
    filesTransferred: registry.counter('binder_sync_files_transferred_total', 'Files uploaded or downloaded.', ['pair', 'direction']),
    bytesTransferred: registry.counter('binder_sync_bytes_transferred_total', 'Bytes of content uploaded or downloaded.', ['pair', 'direction']),
    queueDepth: registry.gauge('binder_sync_queue_depth', 'Actions planned but not yet done.', ['pair']),
    errors: registry.counter('binder_sync_errors_total', 'Failed actions and failed passes.', ['pair']),
    lastPollTimestamp: registry.gauge('binder_sync_last_poll_timestamp_seconds', 'Unix time of the last successful remote listing.', ['pair']),
    conflicts: registry.counter('binder_sync_conflicts_total', 'Conflicts resolved by the conflict policy.', ['pair']),
    passDuration: registry.gauge('binder_sync_pass_duration_seconds', 'Duration of the last sync pass.', ['pair']),
  };
  registerProcessMetrics(registry);
  return metrics;
}

/**
 * The daemon's own footprint under the names Prometheus client libraries use (process_*, nodejs_*), so the
 * usual dashboards and alerts work; read at each scrape.
 */
function registerProcessMetrics(registry: MetricsRegistry): void {
  const cpu = registry.counter('process_cpu_seconds_total', 'User and system CPU time spent by the daemon, in seconds.');
  const rss = registry.gauge('process_resident_memory_bytes', 'Resident memory (RSS) of the daemon, in bytes.');
  const heapUsed = registry.gauge('nodejs_heap_size_used_bytes', 'JavaScript heap in use, in bytes.');
  const heapTotal = registry.gauge('nodejs_heap_size_total_bytes', 'JavaScript heap reserved, in bytes.');
  const external = registry.gauge('nodejs_external_memory_bytes', 'Memory of buffers and native objects held by JavaScript, in bytes.');
  registry.onCollect(() => {
    const usage = process.cpuUsage();
    cpu.setTotal({}, (usage.user + usage.system) / 1e6);
    const mem = process.memoryUsage();
    rss.set({}, mem.rss);
    heapUsed.set({}, mem.heapUsed);
    heapTotal.set({}, mem.heapTotal);
    external.set({}, mem.external);
  });
}

/** Label values escape backslash, double quote and line feed (format 0.0.4). */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escapes backslash and line feed only. */
function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function renderLabels(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/** Go-style float text: integers without a fraction, and NaN / +Inf / -Inf spelled as the format wants. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (and HEAD) on host:port (port 0 = any free port); every other request gets 404.
 * Rejects with METRICS_LISTEN when the port cannot be bound.
 */
export function serveMetrics(port: number, host: string, registry: MetricsRegistry): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const pathname = (req.url ?? '').split('?')[0];
    if (pathname === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
      const body = registry.render();
      res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('not found; metrics are at GET /metrics\n');
  });
  // Scrapers keep connections alive; close() must not wait for them.
  server.keepAliveTimeout = 5000;
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      reject(
        new BinderSyncError(`cannot serve metrics on ${host}:${port}: ${err.code ?? err.message}`, {
          code: 'METRICS_LISTEN',
          retryable: false,
          context: { host, port, errno: err.code },
          hint: err.code === 'EADDRINUSE' ? 'another process uses this port: change metrics.port' : 'check metrics.host and metrics.port',
          cause: err,
        }),
      );
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
