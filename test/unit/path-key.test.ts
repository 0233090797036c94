import { describe, expect, it } from 'vitest';
import { pathKey, parentOf, baseNameOf, joinRel } from '../../src/sync/path-key.js';

describe('pathKey', () => {
  it('folds NFD to NFC so the same visible name compares equal', () => {
    const nfd = 'Cafe\u0301/Re\u0301sume\u0301.txt';
    const nfc = 'Café/Résumé.txt';
    expect(nfd).not.toBe(nfc);
    expect(pathKey(nfd, false)).toBe(pathKey(nfc, false));
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
