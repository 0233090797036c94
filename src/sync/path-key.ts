// Comparison keys for relative paths. Two names that the local filesystem would treat as the same file
// must get the same key: Unicode is compared in NFC (macOS and restored backups hand out NFD), and case is
// folded when the local filesystem ignores it. The original bytes are always kept for I/O.
import type { PathKey } from './model.js';

const NOT_ASCII = /[^\x00-\x7f]/;

export function pathKey(relPath: string, caseInsensitive: boolean): PathKey {
  // ASCII is its own NFC (and the scan keys every entry: normalize's call into ICU was 5% of a walk's CPU).
  const nfc = NOT_ASCII.test(relPath) ? relPath.normalize('NFC') : relPath;
  return caseInsensitive ? nfc.toLowerCase() : nfc;
}

/** Parent directory of a relative path ('' for the root). */
export function parentOf(relPath: string): string {
  const i = relPath.lastIndexOf('/');
  return i < 0 ? '' : relPath.slice(0, i);
}

export function baseNameOf(relPath: string): string {
  const i = relPath.lastIndexOf('/');
  return i < 0 ? relPath : relPath.slice(i + 1);
}

export function joinRel(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}
