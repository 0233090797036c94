// Metrics registry: text exposition format 0.0.4 (HELP/TYPE, labels, escaping, values) and the /metrics
// endpoint over real HTTP on 127.0.0.1.
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BinderSyncError } from '../../src/errors.js';
import {
  createSyncMetrics,
  escapeLabelValue,
  formatValue,
  MetricsRegistry,
  serveMetrics,
  type MetricsServer,
} from '../../src/daemon/metrics.js';

describe('rendering', () => {
  it('renders HELP, TYPE and one sample per label combination, sorted', () => {
    const r = new MetricsRegistry();
    const c = r.counter('jobs_total', 'Jobs done.', ['pair', 'direction']);
    c.inc({ pair: 'b', direction: 'upload' }, 2);
    c.inc({ direction: 'download', pair: 'a' });
    c.inc({ pair: 'a', direction: 'download' }, 4);
    expect(r.render()).toBe(
      [
        '# HELP jobs_total Jobs done.',
        '# TYPE jobs_total counter',
        'jobs_total{pair="a",direction="download"} 5',
        'jobs_total{pair="b",direction="upload"} 2',
        '',
      ].join('\n'),
    );
  });

  it('renders families in registration order, gauges that go up and down, and unlabelled samples', () => {
    const r = new MetricsRegistry();
    const g = r.gauge('depth', 'Queue depth.', ['pair']);
    const up = r.gauge('up', 'Alive.');
    g.set({ pair: 'x' }, 10);
    g.dec({ pair: 'x' }, 3);
    g.inc({ pair: 'x' });
    up.set({}, 1);
    const text = r.render();
    expect(text.indexOf('# HELP depth')).toBeLessThan(text.indexOf('# HELP up'));
    expect(text).toContain('# TYPE depth gauge\ndepth{pair="x"} 8\n');
    expect(text).toContain('\nup 1\n');
    expect(g.get({ pair: 'x' })).toBe(8);
  });

  it('escapes label values (backslash, quote, newline) and help text (backslash, newline)', () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const r = new MetricsRegistry();
    const c = r.counter('odd_total', 'Line one\nback\\slash "quoted"', ['pair']);
    c.inc({ pair: 'we"ird\\pair\nname' });
    const text = r.render();
    expect(text).toContain('# HELP odd_total Line one\\nback\\\\slash "quoted"\n');
    expect(text).toContain('odd_total{pair="we\\"ird\\\\pair\\nname"} 1\n');
    // Every sample stays on one line.
    expect(text.trimEnd().split('\n')).toHaveLength(3);
  });

  it('formats special and fractional values', () => {
    expect(formatValue(NaN)).toBe('NaN');
    expect(formatValue(Infinity)).toBe('+Inf');
    expect(formatValue(-Infinity)).toBe('-Inf');
    expect(formatValue(0.25)).toBe('0.25');
    expect(formatValue(1_700_000_000)).toBe('1700000000');
  });

  it('refuses wrong labels, negative counter increments, bad names and duplicates', () => {
    const r = new MetricsRegistry();
    const c = r.counter('a_total', 'A.', ['pair']);
    expect(() => c.inc({})).toThrow(/takes the labels \{pair\}/);
    expect(() => c.inc({ pair: 'p', extra: 'x' })).toThrow(/takes the labels/);
    expect(() => c.inc({ pair: 'p' }, -1)).toThrow(/cannot be increased/);
    expect(() => r.counter('a_total', 'again')).toThrow(/already registered/);
    expect(() => r.gauge('bad-name', 'x')).toThrow(/invalid metric name/);
    expect(() => r.gauge('ok', 'x', ['__reserved'])).toThrow(/invalid label name/);
  });

  it('removes the samples of one pair', () => {
    const r = new MetricsRegistry();
    const c = r.counter('t_total', 'T.', ['pair', 'direction']);
    c.inc({ pair: 'a', direction: 'upload' });
    c.inc({ pair: 'a', direction: 'download' });
    c.inc({ pair: 'b', direction: 'upload' });
    c.remove({ pair: 'a' });
    expect(r.render()).not.toContain('pair="a"');
    expect(r.render()).toContain('t_total{pair="b",direction="upload"} 1');
  });

  it('declares the daemon metric set with its types', () => {
    const m = createSyncMetrics();
    m.filesTransferred.inc({ pair: 'p', direction: 'download' }, 3);
    m.bytesTransferred.inc({ pair: 'p', direction: 'upload' }, 1024);
    m.queueDepth.set({ pair: 'p' }, 7);
    m.errors.inc({ pair: 'p' });
    m.lastPollTimestamp.set({ pair: 'p' }, 1_750_000_000.5);
    m.conflicts.inc({ pair: 'p' });
    m.passDuration.set({ pair: 'p' }, 0.125);
    const text = m.registry.render();
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((x) => `${x[1]} ${x[2]}`);
    expect(types).toEqual([
      'binder_sync_files_transferred_total counter',
      'binder_sync_bytes_transferred_total counter',
      'binder_sync_queue_depth gauge',
      'binder_sync_errors_total counter',
      'binder_sync_last_poll_timestamp_seconds gauge',
      'binder_sync_conflicts_total counter',
      'binder_sync_pass_duration_seconds gauge',
      'process_cpu_seconds_total counter',
      'process_resident_memory_bytes gauge',
      'nodejs_heap_size_used_bytes gauge',
      'nodejs_heap_size_total_bytes gauge',
      'nodejs_external_memory_bytes gauge',
    ]);
    expect(text).toContain('binder_sync_files_transferred_total{pair="p",direction="download"} 3\n');
    expect(text).toContain('binder_sync_bytes_transferred_total{pair="p",direction="upload"} 1024\n');
    expect(text).toContain('binder_sync_queue_depth{pair="p"} 7\n');
    expect(text).toContain('binder_sync_last_poll_timestamp_seconds{pair="p"} 1750000000.5\n');
    expect(text).toContain('binder_sync_pass_duration_seconds{pair="p"} 0.125\n');
  });

  it("reads the process's CPU time and memory at each render", () => {
    const m = createSyncMetrics();
    const sample = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(m.registry.render())?.[1]);
    const cpu0 = sample('process_cpu_seconds_total');
    const until = performance.now() + 30;
    while (performance.now() < until); // burn a little CPU
    expect(sample('process_cpu_seconds_total')).toBeGreaterThan(cpu0);
    expect(cpu0).toBeGreaterThan(0);
    const rss = sample('process_resident_memory_bytes');
    expect(rss).toBeGreaterThan(10 * 2 ** 20);
    expect(Math.abs(rss - process.memoryUsage().rss)).toBeLessThan(64 * 2 ** 20);
    expect(sample('nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(sample('nodejs_heap_size_used_bytes')).toBeLessThanOrEqual(sample('nodejs_heap_size_total_bytes'));
    expect(sample('nodejs_external_memory_bytes')).toBeGreaterThan(0);
  });

  it('refuses a running total that goes down', () => {
    const r = new MetricsRegistry();
    const c = r.counter('t_total', 'h');
    c.setTotal({}, 5);
    expect(() => c.setTotal({}, 4)).toThrow(/cannot go down/);
    expect(c.get()).toBe(5);
  });
});

describe('serveMetrics over HTTP', () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answers GET /metrics with the current registry and 404 elsewhere', async () => {
    const m = createSyncMetrics();
    server = await serveMetrics(0, '127.0.0.1', m.registry);
    expect(server.port).toBeGreaterThan(0);
    m.errors.inc({ pair: 'main' });
    const url = `http://127.0.0.1:${server.port}`;
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(await res.text()).toContain('binder_sync_errors_total{pair="main"} 1\n');

    // Scrapes see later changes.
    m.errors.inc({ pair: 'main' }, 2);
    expect(await (await fetch(`${url}/metrics?x=1`)).text()).toContain('binder_sync_errors_total{pair="main"} 3\n');

    expect((await fetch(`${url}/`)).status).toBe(404);
    expect((await fetch(`${url}/metrics/extra`)).status).toBe(404);
    expect((await fetch(`${url}/metrics`, { method: 'POST', body: 'x' })).status).toBe(404);
  });

  it('rejects with METRICS_LISTEN when the port is taken, and close() frees its port', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const taken = (blocker.address() as { port: number }).port;
    try {
      const err = await serveMetrics(taken, '127.0.0.1', new MetricsRegistry()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BinderSyncError);
      expect((err as BinderSyncError).code).toBe('METRICS_LISTEN');
    } finally {
      await new Promise<void>((r) => blocker.close(() => r()));
    }
    server = await serveMetrics(0, '127.0.0.1', new MetricsRegistry());
    const port = server.port;
    await fetch(`http://127.0.0.1:${port}/metrics`); // leaves a keep-alive connection open
    await server.close();
    server = undefined;
    const again = await serveMetrics(port, '127.0.0.1', new MetricsRegistry());
    await again.close();
  });
});
