// A small glob -> RegExp compiler for ignore rules ('*', '**', '?', '[abc]', '[!a-z]', '\' escapes).
// Written here because node's path.matchesGlob is still experimental in Node 20 and warns at runtime.

export interface CompiledGlob {
  /** The glob as written. */
  glob: string;
  /** Regular-expression source (no anchors) matching a basename, or a whole relative path when anchored. */
  source: string;
  /** Written with a trailing '/': matches directories only. */
  dirOnly: boolean;
  /** Contains a '/' (other than a trailing one): matched against the whole relative path from the root. */
  anchored: boolean;
}

// Characters that need a backslash outside a class; in 'u' mode escaping anything else is a syntax error.
const REGEX_SPECIAL = /[.*+?^${}()|[\]\\/]/g;

function classChar(c: string): string {
  return c === ']' || c === '\\' || c === '^' || c === '[' || c === '-' ? `\\${c}` : c;
}

/** A character from U+0300 up: below it every character is NFC already and none composes with the one before. */
const MAY_CHANGE_IN_NFC = /[\u0300-\uffff]/;

/**
 * `s` in Unicode NFC. Rules and names are matched in one form: a rule typed in NFC (a keyboard's `é`) must
 * match a name written in NFD (macOS: `e` + U+0301) and the other way round, as the sync's own path keys fold
 * the two (black-box round 30b, F6). A name without such a character (most: ASCII) is returned as it is,
 * without the call to normalize (a regex test is ~5 times cheaper on a 100k-file scan).
 */
export function toNFC(s: string): string {
  return MAY_CHANGE_IN_NFC.test(s) ? s.normalize('NFC') : s;
}

function escapeRe(s: string): string {
  return s.replace(REGEX_SPECIAL, '\\$&');
}

/**
 * Compiles one glob. A glob without '/' matches a basename at any depth; with '/' it matches from the
 * root (a leading '/' is optional); a trailing '/' restricts it to directories. '**' as a whole segment
 * spans any number of directories ("a/**" matches everything below a, "**\/b" matches b at any depth).
 * The source is in NFC: match it against toNFC(path).
 * Never throws: anything that is not valid glob syntax (e.g. an unclosed '[') is taken literally.
 */
export function compileGlob(glob: string): CompiledGlob {
  let g = glob;
  const dirOnly = g.length > 1 && g.endsWith('/');
  if (dirOnly) g = g.replace(/\/+$/, '');
  const anchored = g.includes('/');
  if (g.startsWith('/')) g = g.replace(/^\/+/, '');
  return { glob, source: translate(toNFC(g)), dirOnly, anchored };
}

/**
 * Why a glob cannot be meant as written, or null: an unclosed '[' (compileGlob would take it literally, so
 * "Docs/[abc" matches only a file named "[abc" and a rule written with it silently never applies). Config
 * loading refuses such globs; a literal bracket is written '\\['.
 */
export function globProblem(glob: string): string | null {
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '[' && parseClass(glob, i) === null) return `has an unclosed '[' at position ${i + 1} (write \\[ for a literal bracket)`;
  }
  return null;
}

function translate(g: string): string {
  let out = '';
  let i = 0;
  while (i < g.length) {
    const c = g[i] as string;
    if (c === '*') {
      if (g[i + 1] === '*') {
        const atSegStart = i === 0 || g[i - 1] === '/';
        const next = g[i + 2];
        if (atSegStart && next === '/') {
          out += '(?:.*/)?'; // "**/": zero or more whole directories
          i += 3;
          continue;
        }
        if (atSegStart && next === undefined) {
          out += '.*'; // trailing "**": everything below
          i += 2;
          continue;
        }
      }
      // A single '*' (or a '**' inside a segment): any run of characters within one segment.
      while (g[i] === '*') i++;
      out += '[^/]*';
      continue;
    }
    if (c === '?') {
      out += '[^/]';
      i++;
      continue;
    }
    if (c === '[') {
      const cls = parseClass(g, i);
      if (cls !== null) {
        out += cls.re;
        i = cls.end;
        continue;
      }
      out += '\\[';
      i++;
      continue;
    }
    if (c === '\\' && i + 1 < g.length) {
      out += escapeRe(g[i + 1] as string);
      i += 2;
      continue;
    }
    out += escapeRe(c);
    i++;
  }
  return out;
}

/** Parses a bracket expression starting at g[start] === '['; null when it is not closed. */
function parseClass(g: string, start: number): { re: string; end: number } | null {
  let i = start + 1;
  let negate = false;
  if (g[i] === '!' || g[i] === '^') {
    negate = true;
    i++;
  }
  let body = '';
  let first = true;
  while (i < g.length) {
    const c = g[i] as string;
    if (c === ']' && !first) {
      // A class never matches the separator, negated or not.
      return { re: negate ? `[^/${body}]` : `(?!/)[${body}]`, end: i + 1 };
    }
    if (c === '\\' && i + 1 < g.length) {
      body += classChar(g[i + 1] as string);
      i += 2;
    } else if (c === '-' && !first && g[i + 1] !== ']') {
      body += '-'; // a range like a-z
      i++;
    } else {
      body += classChar(c);
      i++;
    }
    first = false;
  }
  return null;
}

/** Convenience: does `glob` match `relPath` (isDir tells whether relPath is a directory), in either Unicode form? */
export function globMatches(glob: string, relPath: string, isDir: boolean): boolean {
  const c = compileGlob(glob);
  if (c.dirOnly && !isDir) return false;
  const p = toNFC(relPath);
  const subject = c.anchored ? p : p.slice(p.lastIndexOf('/') + 1);
  return new RegExp(`^(?:${c.source})$`, 'su').test(subject);
}
