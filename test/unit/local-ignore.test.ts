// Table-driven tests of the glob compiler and the ignore matcher (built-in rules + user globs).
import { describe, expect, it } from 'vitest';
import { compileGlob, globMatches, globProblem, toNFC } from '../../src/local/glob.js';
import { createIgnoreMatcher } from '../../src/local/ignore.js';

describe('globMatches', () => {
  // [glob, relPath, isDir, expected]
  const table: Array<[string, string, boolean, boolean]> = [
    ['*.log', 'a.log', false, true],
    ['*.log', 'deep/dir/a.log', false, true], // no '/': basename at any depth
    ['*.log', 'a.log.txt', false, false],
    ['*.log', 'logs/a.txt', false, false],
    ['a?c', 'abc', false, true],
    ['a?c', 'a/c', false, false], // '?' never matches '/'
    ['a?c', 'abbc', false, false],
    ['[abc].txt', 'b.txt', false, true],
    ['[abc].txt', 'd.txt', false, false],
    ['[a-c]x', 'bx', false, true],
    ['[!a-c]x', 'bx', false, false],
    ['[!a-c]x', 'dx', false, true],
    ['[^a-c]x', 'dx', false, true],
    ['[]]x', ']x', false, true],
    ['[x', '[x', false, true], // unclosed class is literal
    ['build/', 'build', true, true], // trailing '/': directories only
    ['build/', 'build', false, false],
    ['build/', 'src/build', true, true],
    ['/build', 'build', false, true], // leading '/': from the root only
    ['/build', 'src/build', false, false],
    ['docs/*.md', 'docs/a.md', false, true],
    ['docs/*.md', 'x/docs/a.md', false, false], // with '/': anchored at the root
    ['docs/**/*.md', 'docs/a.md', false, true], // '**/' may be zero dirs
    ['docs/**/*.md', 'docs/a/b/c.md', false, true],
    ['**/cache', 'cache', true, true],
    ['**/cache', 'a/b/cache', true, true],
    ['out/**', 'out/a/b.bin', false, true],
    ['out/**', 'out', true, false], // "everything below", not the dir itself
    ['a**b', 'axxb', false, true],
    ['a**b', 'a/b', false, false], // '**' inside a segment is a plain '*'
    ['\\*.txt', '*.txt', false, true], // escaped
    ['\\*.txt', 'a.txt', false, false],
    ['file (1).txt', 'file (1).txt', false, true], // regex characters are literal
    ['$RECYCLE.BIN', '$RECYCLE.BIN', true, true],
    ['a.b', 'axb', false, false],
    ['*', 'x/y/anything', false, true],
    ['é*', 'été.txt', false, true],
    ['?.txt', '😀.txt', false, true], // one character, even outside the BMP
  ];
  it.each(table)('%s vs %s (dir=%s) -> %s', (glob, relPath, isDir, expected) => {
    expect(globMatches(glob, relPath, isDir)).toBe(expected);
  });

  it('reports how a glob is anchored', () => {
    expect(compileGlob('a/b/')).toMatchObject({ dirOnly: true, anchored: true });
    expect(compileGlob('b/')).toMatchObject({ dirOnly: true, anchored: false });
    expect(compileGlob('/b')).toMatchObject({ dirOnly: false, anchored: true });
  });
});

describe('globProblem', () => {
  it.each([
    ['Docs/[abc', "has an unclosed '[' at position 6 (write \\[ for a literal bracket)"],
    ['[', "has an unclosed '[' at position 1 (write \\[ for a literal bracket)"],
    ['a[b]c[d', "has an unclosed '[' at position 6 (write \\[ for a literal bracket)"],
  ])('refuses %j', (g, problem) => expect(globProblem(g)).toBe(problem));

  it.each(['Docs/[abc]', 'Docs/\\[abc', '[!a-z]*.txt', '**/*.pdf', '[]]x', 'plain'])('takes %j', (g) => expect(globProblem(g)).toBeNull());
});

describe('createIgnoreMatcher', () => {
  const m = createIgnoreMatcher(['*.bak', 'node_modules/', '/private', 'Reports/drafts/**']);
  // [relPath, isDir, ignored]
  const table: Array<[string, boolean, boolean]> = [
    ['.binder-sync-tmp-abc123', false, true],
    ['sub/.binder-sync-probe-1', false, true],
    ['dir/.notes.txt.swp', false, true],
    ['.notes.txt.swo', false, true],
    ['.x.swx', false, true],
    ['dir/4913', false, true],
    ['report.docx~', false, true],
    ['.#report.docx', false, true],
    ['#autosave#', false, true],
    ['~$report.docx', false, true],
    ['x.tmp', false, true],
    ['.~lock.sheet.ods#', false, true],
    ['movie.mkv.part', false, true],
    ['a/b.crdownload', false, true],
    ['.DS_Store', false, true],
    ['pics/Thumbs.db', false, true],
    ['desktop.ini', false, true],
    ['.Trash-1000', true, true],
    ['$RECYCLE.BIN', true, true],
    ['.fuse_hidden0001', false, true],
    ['.nfs000123', false, true],
    // user globs
    ['old/file.bak', false, true],
    ['node_modules', true, true],
    ['node_modules', false, false],
    ['a/node_modules/x/y.js', false, true], // a parent directory is ignored
    ['private', true, true],
    ['sub/private', true, false],
    ['Reports/drafts/q1.docx', false, true],
    ['Reports/final.docx', false, false],
    // ordinary files stay
    ['report.docx', false, false],
    ['notes.swp', false, false], // not a vim swap name (no leading dot)
    ['sub/4913.txt', false, false],
    ['binder-sync-tmp', false, false],
    ['Reports', true, false],
  ];
  it.each(table)('%s (dir=%s) ignored=%s', (relPath, isDir, ignored) => {
    expect(m.ignores(relPath, isDir)).toBe(ignored);
  });

  it.each(table)('ruleFor(%s, dir=%s) names a rule exactly when it is ignored (%s)', (relPath, isDir, ignored) => {
    expect(m.ruleFor(relPath, isDir) !== undefined).toBe(ignored);
  });

  it("ruleFor names the rule and where it comes from, a parent folder's rule for what lies under it", () => {
    expect(m.ruleFor('x.tmp', false)).toBe("'*.tmp' (built-in rule)");
    expect(m.ruleFor('old/file.bak', false)).toBe("'*.bak' (the pair's ignore list)");
    expect(m.ruleFor('a/node_modules/x/y.js', false)).toBe("'node_modules/' (the pair's ignore list)");
    expect(m.ruleFor('Reports/drafts/q1.docx', false)).toBe("'Reports/drafts/**' (the pair's ignore list)");
    expect(m.ruleFor('private', true)).toBe("'/private' (the pair's ignore list)");
    // A user glob that repeats a built-in rule is named as the built-in one.
    expect(createIgnoreMatcher(['*.tmp']).ruleFor('a/b.tmp', false)).toBe("'*.tmp' (built-in rule)");
  });

  it('ignoresEntry looks at the entry only (walkers prune parents themselves)', () => {
    expect(m.ignoresEntry('a/node_modules/x/y.js', false)).toBe(false);
    expect(m.ignoresEntry('a/node_modules', true)).toBe(true);
  });

  it('without user globs only the built-ins apply, and blank globs are skipped', () => {
    const plain = createIgnoreMatcher(['', '  ']);
    expect(plain.ignores('x.bak', false)).toBe(false);
    expect(plain.ignores('x.tmp', false)).toBe(true);
    expect(plain.ignores('anything.txt', false)).toBe(false);
  });
});

describe('names with a newline (legal on Linux)', () => {
  it('match ** and * like any other character, in rules and in ignore lists', () => {
    expect(globMatches('**', 'Docs/new\nline.txt', false)).toBe(true);
    expect(globMatches('Docs/*.txt', 'Docs/new\nline.txt', false)).toBe(true);
    expect(globMatches('**/*.tmp', 'a\nb/c\nd.tmp', false)).toBe(true);
    const m = createIgnoreMatcher(['**/cache\n/**']);
    expect(m.ignores('x/cache\n/y.txt', false)).toBe(true);
  });
});

// Black-box round 30b, F6: a rule typed in NFC ('é' from a keyboard) did not hide a name written in NFD (macOS:
// 'e' + U+0301), nor the other way round; the sync's own path keys treat the two as one name.
describe('rules and names in either Unicode form', () => {
  const NFC = 'Caf\u00e9';
  const NFD = 'Cafe\u0301';

  it.each([
    ['an NFC rule, an NFD name', [`${NFC}/`, `${NFC}.txt`, `Docs/${NFC}/*.md`], NFD],
    ['an NFD rule, an NFC name', [`${NFD}/`, `${NFD}.txt`, `Docs/${NFD}/*.md`], NFC],
  ])('%s: ignored as the same name (a folder, a file, an anchored path), and ruleFor names the rule', (_what, globs, name) => {
    const m = createIgnoreMatcher(globs);
    expect(m.ignoresEntry(`Docs/${name}`, true)).toBe(true);
    expect(m.ignores(`Docs/${name}/menu.txt`, false)).toBe(true);
    expect(m.ignoresEntry(`Docs/${name}.txt`, false)).toBe(true);
    expect(m.ignores(`Other/${name}.txt`, false)).toBe(true);
    expect(m.ignoresEntry(`Docs/${name}/readme.md`, false)).toBe(true);
    expect(m.ruleFor(`Docs/${name}/menu.txt`, false)).toBe(`'${globs[0]}' (the pair's ignore list)`);
    expect(m.ignores('Docs/Cafe.txt', false)).toBe(false);
  });

  it("'?' and a class take one composed character in either form", () => {
    expect(globMatches('Caf?.txt', `Docs/${NFD}.txt`, false)).toBe(true);
    expect(globMatches('Caf[\u00e9e].txt', `${NFD}.txt`, false)).toBe(true);
    expect(globMatches('Caf[!\u00e9].txt', `${NFD}.txt`, false)).toBe(false);
  });

  it('metadata rules match in either form too (the same glob code)', () => {
    expect(globMatches(`${NFC}/**`, `${NFD}/menu.txt`, false)).toBe(true);
    expect(globMatches(`${NFD}/**`, `${NFC}/menu.txt`, false)).toBe(true);
  });

  it('toNFC leaves a name without a character from U+0300 up as it is, and composes the others', () => {
    const ascii = 'Reports/2026/q1.txt';
    expect(toNFC(ascii)).toBe(ascii);
    expect(toNFC('\u00e9t\u00e9')).toBe('\u00e9t\u00e9'); // Latin-1: already NFC
    expect(toNFC(NFD)).toBe(NFC);
    expect(toNFC('\u1100\u1161')).toBe('\uac00'); // Hangul jamo
  });
});
