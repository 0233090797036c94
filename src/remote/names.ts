// Remote name -> one local path segment. Remote names may hold anything; a local segment cannot hold '/',
// NUL, be '.', '..' or '', or exceed 255 bytes. Encoding is deterministic; the remote name is kept elsewhere.
import { createHash } from 'node:crypto';
import { MAX_NAME_BYTES, truncateToBytes, utf8Length } from '../local/name-limits.js';

export { MAX_NAME_BYTES, truncateToBytes, utf8Length };

/** Prefix of the daemon's own temp files; a remote name must never look like one. */
export const TEMP_PREFIX = '.binder-sync-';
/** Extensions longer than this are not kept when a long name is shortened. */
const MAX_KEPT_EXTENSION_BYTES = 32;

/**
 * The local name for a remote name. `encoded` tells whether it differs from the remote name.
 * Returns an error only for names that are not valid Unicode (unpaired surrogates), which no file system
 * path can carry faithfully.
 */
export function localNameFor(remoteName: string): { name: string; encoded: boolean } | { error: string } {
  // The name is shown with each unpaired surrogate escaped (shownRemoteName): said so, since a valid name spelled
  // with a backslash reads the same, and that file is another item (black-box round 37c, F4).
  if (/\p{Cs}/u.test(remoteName)) {
    const escapes = [...new Set(remoteName.match(/\p{Cs}/gu))].map(shownRemoteName).join(', ');
    return { error: `name is not valid Unicode (unpaired surrogate, shown escaped as ${escapes}: a local file spelled so is another item)` };
  }
  let name: string;
  if (remoteName === '') name = '_';
  else if (remoteName === '.') name = '\uFF0E';
  else if (remoteName === '..') name = '\uFF0E\uFF0E';
  else {
    // '/' -> FULLWIDTH SOLIDUS; C0 controls -> their Control Pictures (NUL -> U+2400 ... U+001F -> U+241F).
    name = remoteName.replace(/[\u0000-\u001f/]/g, (c) => (c === '/' ? '\uFF0F' : String.fromCharCode(0x2400 + c.charCodeAt(0))));
  }
  if (name.startsWith(TEMP_PREFIX)) name = `_${name}`;
  if (utf8Length(name) > MAX_NAME_BYTES) name = shorten(name);
  return { name, encoded: name !== remoteName };
}

/**
 * A remote name as people are shown it where it cannot be a local name: each unpaired surrogate as its escape
 * (`sur\ud800.txt`). Written out as UTF-8 (a terminal, the state DB), it became U+FFFD, one or three of them,
 * and read as the name of a valid file that reads the same (black-box round 37a, F4).
 */
export function shownRemoteName(remoteName: string): string {
  return remoteName.replace(/\p{Cs}/gu, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

/** Splits 'report.final.pdf' into 'report.final' + '.pdf'; a leading dot ('.bashrc') is not an extension. */
export function splitExtension(name: string): { stem: string; ext: string } {
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || dot === name.length - 1) return { stem: name, ext: '' };
  return { stem: name.slice(0, dot), ext: name.slice(dot) };
}

/**
 * `name` with ' (dup-<tag>)' inserted before the extension (at the end for folders), shortening the stem
 * when needed so the result stays within MAX_NAME_BYTES.
 */
export function withDupSuffix(name: string, tag: string, isDir: boolean): string {
  const { stem, ext } = isDir ? { stem: name, ext: '' } : splitExtension(name);
  const tail = ` (dup-${tag})${ext}`;
  return truncateToBytes(stem, MAX_NAME_BYTES - utf8Length(tail)) + tail;
}

/** Long name -> truncated stem + '~' + 8 hex of sha256(name) + extension, within MAX_NAME_BYTES. */
function shorten(name: string): string {
  const hash = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 8);
  const { ext: rawExt } = splitExtension(name);
  const ext = utf8Length(rawExt) <= MAX_KEPT_EXTENSION_BYTES ? rawExt : '';
  const tail = `~${hash}${ext}`;
  const cut = ext === '' ? name : name.slice(0, name.length - ext.length);
  return truncateToBytes(cut, MAX_NAME_BYTES - utf8Length(tail)) + tail;
}

