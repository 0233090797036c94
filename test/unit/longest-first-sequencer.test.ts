import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import LongestFirstSequencer, { LONGEST_FILES, startRank } from '../longest-first-sequencer.js';

describe('the test sequencer starts the longest files first', () => {
  it('lists only files that exist', () => {
    for (const file of LONGEST_FILES) expect(fs.existsSync(file), file).toBe(true);
  });

  it('orders listed files by the list, then e2e, integration, soak and unit files, keeping order within a rank', async () => {
    const root = '/repo';
    const files = [
      'test/unit/a.test.ts',
      'test/integration/b.test.ts',
      'test/e2e/zz.test.ts',
      LONGEST_FILES[1]!,
      'test/soak/s.test.ts',
      'test/e2e/aa.test.ts',
      LONGEST_FILES[0]!,
    ];
    const specs = files.map((f) => ({ moduleId: `${root}/${f}`, project: { name: '', config: { sequence: { groupOrder: 0 }, isolate: true } } }));
    const cache = { getFileTestResults: () => undefined, getFileStats: () => undefined };
    const sequencer = new LongestFirstSequencer({ config: { root }, cache } as never);
    const sorted = await sequencer.sort(specs as never);
    expect(sorted.map((s) => (s as { moduleId: string }).moduleId.slice(root.length + 1))).toEqual([
      LONGEST_FILES[0],
      LONGEST_FILES[1],
      'test/e2e/zz.test.ts',
      'test/e2e/aa.test.ts',
      'test/integration/b.test.ts',
      'test/soak/s.test.ts',
      'test/unit/a.test.ts',
    ]);
    expect(startRank('test/unit/a.test.ts')).toBeGreaterThan(startRank('test/e2e/aa.test.ts'));
  });
});
