// The "in sync" mark: what lets a new process (a daemon restart, the next `binder-sync sync`) skip mapping and
// reconciling a large tree that is exactly as it was when a full pass last found nothing to do.
//
// Reconcile is a pure function of (base, local observation, remote observation, context). A full pass P0 that
// planned nothing, left nothing and reported no issue but informational ones (INFORMATIONAL_ISSUES: a remote
// document an ignore rule leaves out), while every local file and every remote document was exactly its base
// entry (or, for a remote document, one that cannot be placed locally and so has none), proves that reconcile
// is empty for those inputs, with those issues: P0 keeps them in the state DB for P1 to report again. The mark records that proof with what
// is not implied by the base itself (the config, the local directories). A later pass P1 may reuse the proof when:
// - the base has not changed since (the mark is deleted before any plan is executed and whenever an interrupted
//   one is recovered: see runPass; the base and the forgotten table are written only by those steps);
// - the config and the filesystem's case rule are the same (digest below);
// - its fresh remote listing equals the base's documents and the saved folder tree field by field
//   (RawListing.unchanged against the listing resumed from the state DB);
// - its full local scan found every file with its base stat (nothing hashed, nothing else), the same
//   directories, and no problem.
// Then P1's inputs equal P0's, so P1's plan is empty too; anything else takes the normal path.
//
// A mark written by a pass that scanned the whole tree and listed by search also keeps the digest of that scan
// (every directory, and every file's name, size, mtime and inode) and the digest of each search page's body.
// A new process may then check both sides without loading the base or parsing a page (see fastInSyncCheck in
// pass.ts): the same local digest means a full scan would see exactly P0's files with P0's stats, which were
// the base's; every search page answered byte for byte as for P0 means P0's documents, which were the base's.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { PairConfig } from '../config/schema.js';
import { searchDigestsOf, type RawListing } from '../remote/listing.js';
import type { BaseEntry, LocalObservation, PathKey, RemoteFolder } from './model.js';

/** Meta key holding the mark (JSON). */
export const IN_SYNC_MARK = 'inSyncMark';

/** Bumped when what the mark means changes, so a mark written by another format is never trusted. */
const FORMAT = 3;

/** The mark as stored; anything else (another format, a damaged value) is no mark at all. */
const MarkSchema = z.object({
  format: z.literal(FORMAT),
  /** Digest of the pair's config and the case rule (see configDigest). */
  config: z.string(),
  /** Digest of the local directories seen by P0 (see dirsDigest). */
  dirs: z.string(),
  /** P0's full scan (LocalObservation.digest), when it had one. */
  tree: z.string().optional(),
  /** How many files P0's scan found (the base's size): how large a tree the digest check will walk. */
  files: z.number().int().nonnegative().optional(),
  /** P0's search pages (remote/listing.ts SearchDigests), when it listed by search. */
  search: z.object({ step: z.number().int().positive(), digests: z.array(z.string()) }).optional(),
});
export type Mark = z.infer<typeof MarkSchema>;

export function configDigest(pair: PairConfig, caseInsensitive: boolean): string {
  return createHash('sha256').update(JSON.stringify({ pair, caseInsensitive })).digest('base64');
}

/** The local directories (keys and spellings), in a stable order. */
export function dirsDigest(local: LocalObservation): string {
  const h = createHash('sha256');
  for (const [key, relPath] of [...local.dirs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) h.update(`${key}\0${relPath}\0`);
  return h.digest('base64');
}

export function encodeMark(pair: PairConfig, caseInsensitive: boolean, local: LocalObservation, raw: RawListing): string {
  const search = searchDigestsOf(raw, pair.pageSize);
  const mark: Mark = {
    format: FORMAT,
    config: configDigest(pair, caseInsensitive),
    dirs: dirsDigest(local),
    ...(local.digest !== undefined ? { tree: local.digest, files: local.files.size } : {}),
    ...(search !== null ? { search } : {}),
  };
  return JSON.stringify(mark);
}

/** The saved mark as stored, when it is one of this format; else null (none, another format, damaged). */
function parseMark(saved: string | undefined): Mark | null {
  if (saved === undefined) return null;
  let json: unknown;
  try {
    json = JSON.parse(saved);
  } catch {
    return null;
  }
  const mark = MarkSchema.safeParse(json);
  return mark.success ? mark.data : null;
}

/** The saved mark, when it was written in this format for this pair's config and case rule; else null. */
export function readMark(saved: string | undefined, pair: PairConfig, caseInsensitive: boolean): Mark | null {
  const mark = parseMark(saved);
  return mark !== null && mark.config === configDigest(pair, caseInsensitive) ? mark : null;
}

/**
 * How many files the digest check of this saved mark will walk (0 when it has no tree digest), read before the
 * config digest can be checked: only a hint (prewarmDigestWorker), never a proof.
 */
export function markedTreeFiles(saved: string | undefined): number {
  const mark = parseMark(saved);
  return mark?.tree !== undefined ? (mark.files ?? 0) : 0;
}

/** Does the saved mark still describe this pair and these directories? */
export function markHolds(saved: string | undefined, pair: PairConfig, caseInsensitive: boolean, local: LocalObservation): boolean {
  return readMark(saved, pair, caseInsensitive)?.dirs === dirsDigest(local);
}

/**
 * Every local file is a base entry with its base stat (so its base hash; a file not read, sha256 null, is taken
 * by its stat as reconcile does), and every base entry has its file;
 * no path could not be observed. `byKey` is the base by path key.
 */
export function localMatchesBase(local: LocalObservation, base: ReadonlyMap<string, BaseEntry>, byKey: ReadonlyMap<PathKey, BaseEntry>): boolean {
  if (local.problems.length > 0 || local.files.size !== base.size || byKey.size !== base.size) return false;
  for (const [key, f] of local.files) {
    const b = byKey.get(key);
    if (b === undefined || b.relPath !== f.relPath || b.size !== f.size || b.mtimeMs !== f.mtimeMs || b.inode !== f.inode || b.ctimeMs !== f.ctimeMs || (f.sha256 !== null && b.sha256 !== f.sha256)) return false;
  }
  return true;
}

/**
 * The listing's documents are exactly the base's (id, name, folder, version) plus `unmapped` (documents the pass
 * could not place locally, such as those an ignore rule leaves out: never in the base), and its folders exactly
 * those the pass saves (all of them mapped, same names and parents): what a later listing is compared with.
 */
export function listingMatchesBase(
  raw: RawListing,
  base: ReadonlyMap<string, BaseEntry>,
  saved: ReadonlyMap<string, RemoteFolder>,
  unmapped: ReadonlySet<string> = new Set(),
): boolean {
  if (raw.docs.size !== base.size + unmapped.size || raw.folders.length !== saved.size) return false;
  for (const id of unmapped) if (!raw.docs.has(id) || base.has(id)) return false;
  for (const b of base.values()) {
    const d = raw.docs.get(b.documentId);
    if (d === undefined || d.fileName !== b.fileName || d.folderId !== b.folderId || d.versionId !== b.versionId) return false;
  }
  for (const f of raw.folders) {
    const s = saved.get(f.id);
    if (s === undefined || s.name !== f.name || s.parentId !== f.parentId) return false;
  }
  return true;
}
