import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathKey, parentOf, baseNameOf, joinRel } from '../../src/sync/path-key.js';

describe('pathKey', () => {
  it('folds NFD to NFC so the same visible name compares equal', () => {
    const nfd = 'Cafe\u0301/Re\u0301sume\u0301.txt';
    const nfc = 'Café/Résumé.txt';
    expect(nfd).not.toBe(nfc);
    expect(pathKey(nfd, false)).toBe(pathKey(nfc, false));
  });
  it('is NFC (and lower case where case is folded) for any name: ASCII skips the normalization, nothing else does', () => {
    // U+212A KELVIN SIGN is its own NFC as 'K': a non-ASCII name whose key is ASCII.
    expect(pathKey('\u212A.txt', false)).toBe('K.txt');
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-composite' }), fc.string({ unit: 'binary' }), fc.boolean(), (a, b, ci) => {
        for (const s of [a, b, a + b]) {
          const nfc = s.normalize('NFC');
          expect(pathKey(s, ci)).toBe(ci ? nfc.toLowerCase() : nfc);
        }
      }),
      { numRuns: 200 },
    );
  });
  it('folds case only on case-insensitive filesystems', () => {
    expect(pathKey('A/B.txt', true)).toBe(pathKey('a/b.TXT', true));
    expect(pathKey('A/B.txt', false)).not.toBe(pathKey('a/b.TXT', false));
  });
});

describe('relative path helpers', () => {
  it('split and join', () => {
    expect(parentOf('a/b/c.txt')).toBe('a/b');
    expect(parentOf('c.txt')).toBe('');
    expect(baseNameOf('a/b/c.txt')).toBe('c.txt');
    expect(joinRel('', 'x')).toBe('x');
    expect(joinRel('a', 'x')).toBe('a/x');
  });
});
