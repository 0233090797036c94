// Table-driven tests of remote name -> local segment encoding (src/remote/names.ts).
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_NAME_BYTES, localNameFor, splitExtension, truncateToBytes, utf8Length, withDupSuffix } from '../../src/remote/names.js';

const sha8 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex').slice(0, 8);

describe('localNameFor', () => {
  const table: Array<[string, string, string]> = [
    ['plain name', 'report.pdf', 'report.pdf'],
    ['unicode kept', 'Café – ünïcode 日本.txt', 'Café – ünïcode 日本.txt'],
    ['empty', '', '_'],
    ['dot', '.', '\uFF0E'],
    ['dot dot', '..', '\uFF0E\uFF0E'],
    ['three dots are a valid name', '...', '...'],
    ['slash', 'a/b.txt', 'a\uFF0Fb.txt'],
    ['parent escape', '../x', '..\uFF0Fx'],
    ['absolute path', '/etc/passwd', '\uFF0Fetc\uFF0Fpasswd'],
    ['NUL', 'a\u0000b', 'a\u2400b'],
    ['tab', 'a\tb', 'a\u2409b'],
    ['newline', 'line\nbreak', 'line\u240Abreak'],
    ['unit separator', '\u001f', '\u241F'],
    ['temp prefix', '.binder-sync-tmp-123', '_.binder-sync-tmp-123'],
    ['almost temp prefix', '.binder-syncx', '.binder-syncx'],
    ['trailing spaces and dots stay (Linux)', 'name. ', 'name. '],
    ['reserved on Windows, fine on Linux', 'CON', 'CON'],
    ['backslash is a normal character on Linux', 'a\\b', 'a\\b'],
  ];
  it.each(table)('%s', (_label, remote, local) => {
    expect(localNameFor(remote)).toEqual({ name: local, encoded: local !== remote });
  });

  it('shortens a name over 255 bytes: truncated stem + ~ + sha256 prefix + extension', () => {
    const remote = `${'a'.repeat(300)}.pdf`;
    const r = localNameFor(remote);
    if ('error' in r) throw new Error(r.error);
    expect(r.encoded).toBe(true);
    expect(utf8Length(r.name)).toBe(MAX_NAME_BYTES);
    expect(r.name).toBe(`${'a'.repeat(MAX_NAME_BYTES - 13)}~${sha8(remote)}.pdf`);
  });

  it('keeps exactly 255 bytes unchanged', () => {
    const remote = 'b'.repeat(255);
    expect(localNameFor(remote)).toEqual({ name: remote, encoded: false });
  });

  it('cuts multi-byte names on a character boundary', () => {
    const remote = '日'.repeat(100); // 300 bytes
    const r = localNameFor(remote);
    if ('error' in r) throw new Error(r.error);
    expect(utf8Length(r.name)).toBeLessThanOrEqual(MAX_NAME_BYTES);
    expect(Buffer.from(r.name, 'utf8').toString('utf8')).toBe(r.name);
    expect(r.name).toMatch(new RegExp(`^日+~${sha8(remote)}$`));
  });

  it('does not split a letter from its combining accent', () => {
    const remote = 'e\u0301'.repeat(100) + '.txt'; // 3 bytes per letter
    const r = localNameFor(remote);
    if ('error' in r) throw new Error(r.error);
    const stem = r.name.slice(0, r.name.indexOf('~'));
    expect(stem).toMatch(/^(e\u0301)+$/);
    expect(r.name.endsWith(`~${sha8(remote)}.txt`)).toBe(true);
  });

  it('drops an extension too long to keep', () => {
    const remote = `x.${'y'.repeat(300)}`;
    const r = localNameFor(remote);
    if ('error' in r) throw new Error(r.error);
    expect(r.name.endsWith(`~${sha8(remote)}`)).toBe(true);
    expect(utf8Length(r.name)).toBeLessThanOrEqual(MAX_NAME_BYTES);
  });

  it('gives different long names with a common prefix different local names', () => {
    const a = localNameFor(`${'p'.repeat(300)}1`);
    const b = localNameFor(`${'p'.repeat(300)}2`);
    expect(a).not.toEqual(b);
  });

  it('refuses names that are not valid Unicode', () => {
    expect(localNameFor('bad\uD800name')).toEqual({ error: 'name is not valid Unicode (unpaired surrogate, shown escaped as \\ud800: a local file spelled so is another item)' });
    expect(localNameFor('ok \uD83D\uDE00')).toEqual({ name: 'ok \uD83D\uDE00', encoded: false });
  });
});

describe('name helpers', () => {
  it.each([
    ['report.pdf', 'report', '.pdf'],
    ['archive.tar.gz', 'archive.tar', '.gz'],
    ['.bashrc', '.bashrc', ''],
    ['noext', 'noext', ''],
    ['trailing.', 'trailing.', ''],
  ])('splitExtension(%j)', (name, stem, ext) => {
    expect(splitExtension(name)).toEqual({ stem, ext });
  });

  it('withDupSuffix goes before the extension for files and at the end for folders', () => {
    expect(withDupSuffix('a.txt', 'abcdefgh', false)).toBe('a (dup-abcdefgh).txt');
    expect(withDupSuffix('.bashrc', 'abcdefgh', false)).toBe('.bashrc (dup-abcdefgh)');
    expect(withDupSuffix('v1.2', 'abcdefgh', true)).toBe('v1.2 (dup-abcdefgh)');
  });

  it('withDupSuffix keeps long names within 255 bytes', () => {
    const name = `${'ü'.repeat(125)}.txt`; // 254 bytes
    const out = withDupSuffix(name, 'abcdefgh', false);
    expect(utf8Length(out)).toBeLessThanOrEqual(MAX_NAME_BYTES);
    expect(out.endsWith(' (dup-abcdefgh).txt')).toBe(true);
  });

  it('truncateToBytes cuts inside a cluster only when the cluster alone is too big', () => {
    const zalgo = `a${'\u0301'.repeat(200)}`; // one grapheme of 401 bytes
    const out = truncateToBytes(zalgo, 10);
    expect(utf8Length(out)).toBeLessThanOrEqual(10);
    expect(out.startsWith('a')).toBe(true);
  });
});
