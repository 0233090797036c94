// Unit tables for the config helpers: durations, ${ENV} string expansion, key suggestions, key-path
// formatting and path containment.
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../src/config/duration.js';
import { expandString } from '../../src/config/env.js';
import { editDistance, suggestKey } from '../../src/config/issues.js';
import { formatPath } from '../../src/config/key-path.js';
import { isSameOrInside, resolveConfigPath } from '../../src/config/paths.js';

describe('parseDuration', () => {
  it.each<[number | string, number | null]>([
    [90, 90_000],
    [0.25, 250],
    ['90', 90_000],
    ['250ms', 250],
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    [' 2 m ', 120_000],
    ['1.5h', 5_400_000],
    ['', null],
    ['5 minutes', 300_000],
    ['5min', 300_000],
    ['2 hrs', 7_200_000],
    ['30 sec', 30_000],
    ['1 day 2 hours', 93_600_000],
    ['100 msec', 100],
    ['10 parsecs', null],
    ['5 mins s', null],
    ['1h30', null],
    ['-5s', null],
    [-1, null],
    [Number.POSITIVE_INFINITY, null],
  ])('%j -> %j', (input, ms) => {
    expect(parseDuration(input)).toBe(ms);
  });

  it.each([
    [250, '250ms'],
    [5000, '5s'],
    [90_000, '90s'],
    [60_000, '1m'],
    [3_600_000, '1h'],
    [172_800_000, '2d'],
  ])('formatDuration(%j) = %j', (ms, text) => expect(formatDuration(ms)).toBe(text));
});

describe('expandString', () => {
  const env = { A: 'alpha', EMPTY: '' };
  it.each<[string, string, string[]]>([
    ['plain', 'plain', []],
    ['${A}', 'alpha', []],
    ['x-${A}-${A}', 'x-alpha-alpha', []],
    ['${B:-dflt}', 'dflt', []],
    ['${EMPTY:-dflt}', 'dflt', []],
    ['${EMPTY}', '', []],
    ['${A:-dflt}', 'alpha', []],
    ['$${A}', '${A}', []],
    // Scanned left to right: the first '$${' found is the literal.
    ['$$${A}', '$${A}', []],
    ['cost: $5', 'cost: $5', []],
    ['${B}', '', ['environment variable B is not set']],
    ['${1X}', '', ['invalid environment variable reference ${1X}']],
    ['${A', '${A', ['unterminated ${ (write $${ for a literal ${)']],
  ])('%j', (text, value, problems) => {
    expect(expandString(text, env)).toEqual({ value, problems });
  });
});

describe('key suggestions', () => {
  const keys = ['localPath', 'binderId', 'direction', 'pollInterval', 'name'];
  it.each<[string, string | undefined]>([
    ['localpath', 'localPath'],
    ['LOCALPATH', 'localPath'],
    ['binderID', 'binderId'],
    ['binder', 'binderId'],
    ['xyz', undefined],
    ['dirction', 'direction'],
    ['pollIntervall', 'pollInterval'],
    ['nmae', 'name'],
    ['completelyDifferent', undefined],
  ])('%s -> %s', (key, suggestion) => expect(suggestKey(key, keys)).toBe(suggestion));

  it('edit distance', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });
});

describe('formatPath', () => {
  it.each<[PropertyKey[], string]>([
    [[], '(root)'],
    [['service', 'baseUrl'], 'service.baseUrl'],
    [['pairs', 0, 'localPath'], 'pairs[0].localPath'],
    [['pairs', 1, 'metadata', 0, 'values', 'Doc Type'], 'pairs[1].metadata[0].values["Doc Type"]'],
    [['pairs', 1, 'metadata', 0, 'values', 'GLOBAL_Category'], 'pairs[1].metadata[0].values.GLOBAL_Category'],
  ])('%j', (p, text) => expect(formatPath(p)).toBe(text));
});

describe('paths', () => {
  it.each<[string, string, boolean]>([
    ['/a/b', '/a', true],
    ['/a', '/a', true],
    ['/a', '/a/b', false],
    ['/ab', '/a', false],
    ['/a/..b', '/a', true],
    ['/x', '/a', false],
  ])('isSameOrInside(%j, %j) = %j', (inner, outer, yes) => expect(isSameOrInside(inner, outer)).toBe(yes));

  it('resolveConfigPath', () => {
    expect(resolveConfigPath('./x', '/etc/bs', { HOME: '/h' })).toBe('/etc/bs/x');
    expect(resolveConfigPath('/abs/x', '/etc/bs', { HOME: '/h' })).toBe('/abs/x');
    expect(resolveConfigPath('~', '/etc/bs', { HOME: '/h' })).toBe('/h');
    expect(resolveConfigPath('~/d', '/etc/bs', { HOME: '/h' })).toBe('/h/d');
    expect(resolveConfigPath('~user/d', '/etc/bs', { HOME: '/h' })).toBe('/etc/bs/~user/d');
  });
});
