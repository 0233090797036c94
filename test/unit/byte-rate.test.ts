// Transfer rate limits: how the config reads a rate, how the shared byte budget schedules bytes, and that the
// throttle stage passes every byte, in order, no faster than its rate.
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { formatByteRate, parseByteRate } from '../../src/config/byte-rate.js';
import { ByteBudget, ThrottleStream } from '../../src/service/byte-throttle.js';

describe('parseByteRate', () => {
  it.each([
    [65536, 65536],
    ['65536', 65536],
    ['500K', 500 * 1024],
    ['500KiB/s', 500 * 1024],
    ['500KB/s', 500_000],
    ['10M', 10 * 1024 ** 2],
    ['2.5 MiB/s', 2.5 * 1024 ** 2],
    ['2MB', 2_000_000],
    ['1G/s', 1024 ** 3],
    ['1GB', 1e9],
    ['1k', 1024],
    ['2mb/s', 2_000_000],
    ['3mib', 3 * 1024 ** 2],
  ] as const)('%s = %d bytes/s', (input, expected) => {
    expect(parseByteRate(input)).toBe(expected);
  });

  it.each(['fast', '10 mbit', '-5K', '1T', '', 'K'])('refuses %j', (input) => {
    expect(parseByteRate(input)).toBeNull();
  });

  it('formats rates for messages', () => {
    expect(formatByteRate(16 * 1024)).toBe('16 KiB/s');
    expect(formatByteRate(2.5 * 1024 ** 2)).toBe('2.5 MiB/s');
    expect(formatByteRate(100)).toBe('100 B/s');
  });
});

describe('ByteBudget', () => {
  it('lets a tenth of a second of rate through at once, then schedules the rest at the rate, in the order asked', () => {
    let t = 0;
    const b = new ByteBudget(1000, () => t);
    expect(b.reserve(100)).toBe(0); // the burst
    expect(b.reserve(500)).toBe(500); // 500 bytes of debt: half a second
    expect(b.reserve(500)).toBe(1000); // behind the first: a second
    t = 1000; // the debt is paid
    expect(b.reserve(0)).toBe(0);
    t = 60_000; // idle: no more than the burst builds up
    expect(b.reserve(100)).toBe(0);
    expect(b.reserve(100)).toBe(100);
  });

  it('takes a new rate at once (a reload), and lets everything through once lifted', () => {
    let t = 0;
    const b = new ByteBudget(1000, () => t);
    expect(b.reserve(600)).toBe(500);
    b.setRate(10_000); // the debt is forgiven, the burst is a tenth of the new rate
    expect(b.reserve(1000)).toBe(0);
    expect(b.reserve(1000)).toBe(100);
    b.setRate(Number.POSITIVE_INFINITY);
    expect(b.reserve(1e9)).toBe(0);
  });

  it('cuts chunks into pieces of a twentieth of a second, at least 16 KiB', () => {
    expect(new ByteBudget(1024 * 1024).piece).toBe(52428);
    expect(new ByteBudget(20 * 1024).piece).toBe(16 * 1024);
  });
});

describe('ThrottleStream', () => {
  it('passes every byte in order, no faster than the rate', async () => {
    const rate = 512 * 1024;
    const data = Buffer.from(Array.from({ length: 384 * 1024 }, (_, i) => (i * 7) % 251));
    const out: Buffer[] = [];
    const started = performance.now();
    await pipeline(
      Readable.from([data.subarray(0, 300 * 1024), data.subarray(300 * 1024)]),
      new ThrottleStream(new ByteBudget(rate)),
      new Writable({ write: (c: Buffer, _e, cb) => (out.push(c), cb()) }),
    );
    const elapsed = performance.now() - started;
    expect(Buffer.concat(out).equals(data)).toBe(true);
    // 384 KiB at 512 KiB/s, less the 0.1 s burst: at least 0.65 s (a busy machine only makes it slower).
    expect(elapsed).toBeGreaterThanOrEqual(650 - 20);
    expect(Math.max(...out.map((c) => c.length))).toBeLessThanOrEqual(new ByteBudget(rate).piece);
  });

  it('stops its pending timer when destroyed mid-transfer', async () => {
    const t = new ThrottleStream(new ByteBudget(16 * 1024));
    const pushed: Buffer[] = [];
    t.on('data', (c: Buffer) => pushed.push(c));
    t.write(Buffer.alloc(64 * 1024));
    await new Promise((r) => setTimeout(r, 20));
    t.destroy();
    const before = pushed.length;
    await new Promise((r) => setTimeout(r, 1200));
    expect(pushed.length).toBe(before);
    expect(before).toBeLessThan(4);
  });
});
