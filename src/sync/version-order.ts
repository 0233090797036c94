// Which versions of a document came before or between others. GET .../versions lists them by creation date, but
// the spec does not say in which direction (4.11): order is told by position, with two known versions (or the
// latest at one end of the list) to say which way the list runs. Pure.
import type { DocumentVersion } from '../service/index.js';

/**
 * The versions listed strictly between `olderId` and `newerId`, the newest first; null when either is not in
 * the list (nothing can be told).
 */
export function versionsBetween(versions: readonly DocumentVersion[], olderId: string, newerId: string): DocumentVersion[] | null {
  const from = versions.findIndex((v) => v.id === olderId);
  const to = versions.findIndex((v) => v.id === newerId);
  if (from < 0 || to < 0) return null;
  return walk(versions, to, from);
}

/**
 * The versions listed beyond `newerId`, on the side away from `olderId` (what the list says came after it), the
 * nearest first; null when either is not in the list.
 */
export function versionsBeyond(versions: readonly DocumentVersion[], olderId: string, newerId: string): DocumentVersion[] | null {
  const from = versions.findIndex((v) => v.id === olderId);
  const to = versions.findIndex((v) => v.id === newerId);
  if (from < 0 || to < 0) return null;
  return walk(versions, to, from < to ? versions.length : -1);
}

/**
 * The versions before `latestId`, the newest first, when the latest is at one end of the list (which end says
 * the direction); null when it is not in the list or sits in the middle (the direction cannot be told).
 */
export function versionsBefore(versions: readonly DocumentVersion[], latestId: string): DocumentVersion[] | null {
  const to = versions.findIndex((v) => v.id === latestId);
  if (to < 0) return null;
  if (to === versions.length - 1) return walk(versions, to, -1);
  if (to === 0) return walk(versions, to, versions.length);
  return null;
}

/** The entries from next to `start` towards `end`, both excluded. */
function walk(versions: readonly DocumentVersion[], start: number, end: number): DocumentVersion[] {
  const step = end > start ? 1 : -1;
  const out: DocumentVersion[] = [];
  for (let i = start + step; i !== end && i >= 0 && i < versions.length; i += step) out.push(versions[i]!);
  return out;
}
