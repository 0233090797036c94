// nextVersionLabel: the integer scheme's next label, and when it falls back to a timestamp.
import { describe, expect, it } from 'vitest';
import { nextVersionLabel } from '../../src/sync/version-label.js';

const NOW = new Date('2026-03-04T05:06:07.890Z');
const STAMP = '2026-03-04T05:06:07Z';

describe('nextVersionLabel, scheme integer', () => {
  // [labels of the document's versions, next label]
  it.each<[string[], string]>([
    [[], '1'],
    [['1'], '2'],
    [['1', '2', '10'], '11'],
    [['10', '9'], '11'], // the highest, not the last
    [['007'], '8'],
    [[' 12 '], '13'],
    [['draft', '3'], '4'],
    [['draft'], STAMP], // no numeric label: a timestamp
    // Black-box round 30b, F10: labels went backwards (each of these gave "2" after a "1").
    [['1', '9007199254740993'], '9007199254740994'], // past 2^53: a float would round it
    [['1', '123456789012345678901234567890'], '123456789012345678901234567891'],
    [['1', '9999999999999999'], '10000000000000000'],
    [['1', '2.9'], '3'], // a decimal: the next integer above it
    [['1.0'], '2'],
    [['2.10', '2.9'], '3'],
    [['1', '1e3'], '2'], // not numeric labels, whatever JavaScript reads in them
    [['1', 'Infinity'], '2'],
    [['1', '0x10'], '2'],
    [['1', '-5'], '2'],
    [['1', '1.2.3'], '2'],
    [['1e3', 'Infinity', 'NaN', '.5', '5.'], STAMP],
  ])('%j -> %s', (labels, next) => {
    expect(nextVersionLabel(labels, 'integer', NOW)).toBe(next);
  });
});

describe('nextVersionLabel, scheme timestamp', () => {
  it('is always the timestamp, to the second', () => {
    expect(nextVersionLabel([], 'timestamp', NOW)).toBe(STAMP);
    expect(nextVersionLabel(['1', '2'], 'timestamp', NOW)).toBe(STAMP);
  });
});
