// How long a PUT's answer is awaited beyond requestTimeout (src/service/transfers.ts putAnswerAllowanceMs): the
// bytes that may still be on their way (at most 4 MiB) at the rate the end of the body went out, never slower
// than 64 KiB/s (black-box rounds 37b F3, 37c F3).
import { describe, expect, it } from 'vitest';
import { putAnswerAllowanceMs } from '../../src/service/transfers.js';

const MiB = 1024 * 1024;

describe('putAnswerAllowanceMs', () => {
  it('without a measured rate: the body (at most 4 MiB) at 64 KiB/s', () => {
    expect(putAnswerAllowanceMs(64 * 1024)).toBe(1000);
    expect(putAnswerAllowanceMs(2 * MiB)).toBe(32_000);
    expect(putAnswerAllowanceMs(200 * MiB)).toBe(64_000);
  });
  it('with a rate: 4 MiB at that rate (a slow uplink waits longer than requestTimeout, a fast path barely at all)', () => {
    expect(putAnswerAllowanceMs(20 * MiB, 50_000)).toBe(64_000); // slower than the floor: the floor
    expect(putAnswerAllowanceMs(20 * MiB, 128 * 1024)).toBe(32_000);
    expect(putAnswerAllowanceMs(20 * MiB, 100 * MiB)).toBe(40);
  });
});
