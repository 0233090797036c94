import { describe, expect, it } from 'vitest';
import { chooseHeapTuning, DEFAULT_HEAP_GROWING_PERCENT, HEAP_GROWING_ENV } from '../../src/daemon/heap-tuning.js';

describe('chooseHeapTuning (the daemon heap growing factor)', () => {
  it('applies the default when nothing is set', () => {
    expect(chooseHeapTuning({}, [])).toEqual({ applied: true, percent: DEFAULT_HEAP_GROWING_PERCENT });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '  ' }, ['--enable-source-maps'])).toEqual({ applied: true, percent: DEFAULT_HEAP_GROWING_PERCENT });
  });

  it('takes a whole percentage from the environment, and 0 turns it off', () => {
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '100' }, [])).toEqual({ applied: true, percent: 100 });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '400' }, [])).toEqual({ applied: true, percent: 400 });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '0' }, [])).toEqual({ applied: false, reason: 'disabled' });
  });

  it('rejects anything else without applying it', () => {
    for (const raw of ['-5', '1.5', '401', 'fast', '50%']) {
      expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: raw }, [])).toEqual({ applied: false, reason: 'invalid', raw });
    }
  });

  it("leaves node's own --heap-growing-percent alone", () => {
    expect(chooseHeapTuning({}, ['--heap-growing-percent=20'])).toEqual({ applied: false, reason: 'node flag given' });
    expect(chooseHeapTuning({ [HEAP_GROWING_ENV]: '80' }, ['--heap_growing_percent', '20'])).toEqual({ applied: false, reason: 'node flag given' });
  });
});
