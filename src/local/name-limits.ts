// How long a local file name may be: Linux file systems take at most 255 bytes of UTF-8 per name. Shared by
// the names binder-sync makes (remote names mapped to local ones, conflict copies, trash entries).

/** Longest file name (in UTF-8 bytes) that Linux file systems accept. */
export const MAX_NAME_BYTES = 255;

/** Longest path (UTF-8 bytes, without the final NUL) that Linux system calls accept: PATH_MAX is 4096. */
export const MAX_PATH_BYTES = 4095;

/**
 * Room kept below MAX_PATH_BYTES for the names binder-sync puts beside a file: its temp file
 * (`.binder-sync-tmp-<tag><counter>`) and a conflict copy (`name (conflict <date> <time>).ext`).
 */
const SIDE_NAME_ROOM = 64;

/** The longest relative path a remote item may map to under `root` (the sync root, absolute). */
export function maxRelPathBytes(root: string): number {
  return MAX_PATH_BYTES - utf8Length(root) - 1 - SIDE_NAME_ROOM;
}

export function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8'); // counts without encoding a copy
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * The longest prefix of `s` within `maxBytes`, cut between grapheme clusters (so an accent is not split
 * from its letter); a single cluster larger than the budget is cut between code points instead.
 */
export function truncateToBytes(s: string, maxBytes: number): string {
  if (utf8Length(s) <= maxBytes) return s;
  let out = '';
  let used = 0;
  for (const { segment } of graphemes.segment(s)) {
    const size = utf8Length(segment);
    if (used + size <= maxBytes) {
      out += segment;
      used += size;
      continue;
    }
    if (out === '') {
      for (const cp of segment) {
        const n = utf8Length(cp);
        if (used + n > maxBytes) break;
        out += cp;
        used += n;
      }
    }
    break;
  }
  return out;
}

/**
 * `stem + suffix + ext` within MAX_NAME_BYTES, the stem shortened to fit: the suffix is what makes the name
 * unique (' (conflict ...)', '~2'), the extension what opens it. An extension too long to fit beside the
 * suffix is dropped.
 */
export function fitName(stem: string, suffix: string, ext: string): string {
  const tail = utf8Length(suffix) + utf8Length(ext) < MAX_NAME_BYTES ? suffix + ext : suffix;
  return truncateToBytes(stem, MAX_NAME_BYTES - utf8Length(tail)) + tail;
}
