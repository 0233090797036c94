// Places the remote folder tree and its documents at local relative paths: names encoded to valid segments,
// sibling collisions (case, NFC/NFD, folder vs file) resolved deterministically, and anything that cannot be
// placed (broken tree, ignored path, invalid name) reported as unmappable instead of silently dropped.
import type { RemoteDoc, RemoteFolder, RemoteObservation } from '../sync/model.js';
import { joinRel, pathKey } from '../sync/path-key.js';
import { localNameFor, shownRemoteName, withDupSuffix } from './names.js';
import { utf8Length } from '../local/name-limits.js';

export interface RemoteTreeInput {
  /** parentId null = top-level tab of the drive. */
  folders: ReadonlyArray<{ id: string; name: string; parentId: string | null }>;
  docs: ReadonlyArray<{ documentId: string; fileName: string; folderId: string; versionId: string }>;
  caseInsensitive: boolean;
  /** The base relPath of a document: on a collision it keeps the plain name, so mappings stay stable. */
  preferredPath?: (documentId: string) => string | undefined;
  /**
   * Local ignore rules: the rule that ignores a path ("'*.tmp' (built-in rule)"), or undefined. A remote item
   * mapped to an ignored path is unmappable, marked `ignored` (the scanner would never see it).
   */
  ignoredBy?: (relPath: string, isDir: boolean) => string | undefined;
  /** Longest relPath (UTF-8 bytes) the local file system can take under the sync root (maxRelPathBytes). */
  maxPathBytes?: number;
  /**
   * Where a folder was last placed locally (from the synced documents it held), if known: a document in a folder
   * the listing lacks is reported there, not by the folder's id alone.
   */
  lastKnownFolderPath?: (folderId: string) => string | undefined;
}

export interface RemoteTreeMapping {
  folders: Map<string, RemoteFolder>;
  docs: Map<string, RemoteDoc>;
  unmappable: RemoteObservation['unmappable'];
}

/**
 * Whether an unmappable reason is about the shape of the listed tree (a folder not listed, listed twice, a cycle),
 * not about a name: most often a move made while the listing was read.
 */
function isTreeInconsistency(reason: string): boolean {
  return reason === UNMAPPABLE.cycle || reason === UNMAPPABLE.listedTwice || /(^|\s)folder .+ is not in the listing$/.test(reason);
}

/** Reasons in `unmappable`; stable strings so that callers and tests can match them. */
export const UNMAPPABLE = {
  ignored: (rule: string) => `matches the ignore rule ${rule}: not downloaded, nothing deleted`,
  cycle: 'folder cycle',
  listedTwice: 'listed twice with different data',
  missingParent: (parentId: string) => `parent folder ${parentId} is not in the listing`,
  missingFolder: (folderId: string, lastPath?: string) =>
    lastPath === undefined ? `folder ${folderId} is not in the listing` : `its folder "${lastPath}" (id ${folderId}) is not in the listing`,
  badName: (error: string) => `name cannot be used locally: ${error}`,
  collision: 'path collides with another item',
  tooLong: (max: number) => `the local path would be longer than the system allows (over ${max} bytes under the sync root)`,
} as const;

type FolderIn = RemoteTreeInput['folders'][number];
type DocIn = RemoteTreeInput['docs'][number];

interface Sibling {
  kind: 'folder' | 'doc';
  id: string;
  name: string;
  /** Comparison key of the plain name among its siblings. */
  key: string;
  preferred: boolean;
  folder?: FolderIn;
  doc?: DocIn;
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Maps the tree. Pure and deterministic: the result does not depend on the order of the input arrays.
 * Guarantees: every mapped relPath is relative, has no empty, '.' or '..' segment, and no two mapped
 * items (folders and documents together) share a key.
 */
export function mapRemoteTree(input: RemoteTreeInput): RemoteTreeMapping {
  const ci = input.caseInsensitive;
  const unmappable: RemoteObservation['unmappable'] = [];
  const folders = new Map<string, RemoteFolder>();
  const docs = new Map<string, RemoteDoc>();

  const folderIn = dedupe(input.folders, (f) => f.id, (a, b) => a.name === b.name && a.parentId === b.parentId);
  const docIn = dedupe(
    input.docs,
    (d) => d.documentId,
    (a, b) => a.fileName === b.fileName && a.folderId === b.folderId && a.versionId === b.versionId,
  );

  const childFolders = new Map<string | null, FolderIn[]>();
  for (const f of folderIn.unique.values()) push(childFolders, f.parentId, f);
  const childDocs = new Map<string, DocIn[]>();
  for (const d of docIn.unique.values()) push(childDocs, d.folderId, d);

  // Each unique folder ends up placed or rejected; rejecting a folder rejects its subtree with the same reason.
  const settled = new Set<string>();
  // `at`: where the item would be, for people (the parent's local path, then remote names below a rejected folder).
  // `ignored`: the reason is a local ignore rule, not a problem with the item (reconcile reports it apart).
  const rejectSubtree = (folder: FolderIn, reason: string, at?: string, ignored = false): void => {
    if (settled.has(folder.id)) return;
    settled.add(folder.id);
    const path = at === undefined ? undefined : joinRel(at, shownRemoteName(folder.name));
    unmappable.push({ folderId: folder.id, name: folder.name, reason, ...(path !== undefined ? { path } : {}), ...(ignored ? { ignored } : {}) });
    for (const d of childDocs.get(folder.id) ?? []) rejectDoc(d, reason, path, ignored);
    for (const f of childFolders.get(folder.id) ?? []) rejectSubtree(f, reason, path, ignored);
  };
  const rejectDoc = (d: DocIn, reason: string, at?: string, ignored = false) =>
    unmappable.push({
      documentId: d.documentId,
      name: d.fileName,
      reason,
      ...(at !== undefined ? { path: joinRel(at, shownRemoteName(d.fileName)) } : {}),
      ...(ignored ? { ignored } : {}),
    });

  // Ids listed twice with different data: which version is right is unknown, so neither is placed.
  for (const id of folderIn.conflicting) {
    const name = input.folders.filter((f) => f.id === id).map((f) => f.name).sort()[0] ?? '';
    unmappable.push({ folderId: id, name, reason: UNMAPPABLE.listedTwice });
  }
  for (const id of docIn.conflicting) {
    const name = input.docs.filter((d) => d.documentId === id).map((d) => d.fileName).sort()[0] ?? '';
    unmappable.push({ documentId: id, name, reason: UNMAPPABLE.listedTwice });
  }

  const usedKeys = new Set<string>();
  // Breadth-first from the drive root; each folder's children are placed knowing only the parent's path.
  const queue: Array<{ id: string | null; relPath: string }> = [{ id: null, relPath: '' }];
  for (let head = 0; head < queue.length; head++) {
    const parent = queue[head]!;
    const siblings: Sibling[] = [];
    const subFolders = [...(childFolders.get(parent.id) ?? [])].sort(byId);
    for (const f of subFolders) {
      const local = localNameFor(f.name);
      const rule = 'error' in local ? undefined : input.ignoredBy?.(joinRel(parent.relPath, local.name), true);
      if ('error' in local) rejectSubtree(f, UNMAPPABLE.badName(local.error), parent.relPath);
      else if (rule !== undefined) rejectSubtree(f, UNMAPPABLE.ignored(rule), parent.relPath, true);
      else siblings.push({ kind: 'folder', id: f.id, name: local.name, key: pathKey(local.name, ci), preferred: false, folder: f });
    }
    if (parent.id !== null) {
      const parentId = parent.id;
      const docsHere = [...(childDocs.get(parentId) ?? [])].sort((a, b) => byId({ id: a.documentId }, { id: b.documentId }));
      for (const d of docsHere) {
        const local = localNameFor(d.fileName);
        if ('error' in local) {
          rejectDoc(d, UNMAPPABLE.badName(local.error), parent.relPath);
          continue;
        }
        const plain = joinRel(parent.relPath, local.name);
        const rule = input.ignoredBy?.(plain, false);
        if (rule !== undefined) {
          rejectDoc(d, UNMAPPABLE.ignored(rule), parent.relPath, true);
          continue;
        }
        const preferredPath = input.preferredPath?.(d.documentId);
        const preferred = preferredPath !== undefined && pathKey(preferredPath, ci) === pathKey(plain, ci);
        siblings.push({ kind: 'doc', id: d.documentId, name: local.name, key: pathKey(local.name, ci), preferred, doc: d });
      }
    }

    for (const { sibling, name } of resolveCollisions(siblings, ci)) {
      const relPath = joinRel(parent.relPath, name);
      const key = pathKey(relPath, ci);
      const isDir = sibling.kind === 'folder';
      // A dup-suffixed name is a new path: it must pass the ignore rules too.
      const rule = name === sibling.name ? undefined : input.ignoredBy?.(relPath, isDir);
      if (rule !== undefined) {
        if (sibling.folder) rejectSubtree(sibling.folder, UNMAPPABLE.ignored(rule), parent.relPath, true);
        else if (sibling.doc) rejectDoc(sibling.doc, UNMAPPABLE.ignored(rule), parent.relPath, true);
        continue;
      }
      // A path the system cannot take (ENAMETOOLONG): reported, never attempted on every pass.
      if (input.maxPathBytes !== undefined && utf8Length(relPath) > input.maxPathBytes) {
        if (sibling.folder) rejectSubtree(sibling.folder, UNMAPPABLE.tooLong(input.maxPathBytes), parent.relPath);
        else if (sibling.doc) rejectDoc(sibling.doc, UNMAPPABLE.tooLong(input.maxPathBytes), parent.relPath);
        continue;
      }
      // Safety net: sibling keys are unique and parents are unique, so this should never trigger.
      if (usedKeys.has(key)) {
        if (sibling.folder) rejectSubtree(sibling.folder, UNMAPPABLE.collision, parent.relPath);
        else if (sibling.doc) rejectDoc(sibling.doc, UNMAPPABLE.collision, parent.relPath);
        continue;
      }
      usedKeys.add(key);
      if (sibling.folder) {
        const f = sibling.folder;
        settled.add(f.id);
        folders.set(f.id, { folderId: f.id, name: f.name, parentId: f.parentId, relPath, key });
        queue.push({ id: f.id, relPath });
      } else if (sibling.doc) {
        const d = sibling.doc;
        docs.set(d.documentId, { documentId: d.documentId, fileName: d.fileName, folderId: d.folderId, versionId: d.versionId, relPath, key });
      }
    }
  }

  // Folders never reached from the root: a missing or twice-listed ancestor, or a cycle. Each gets the
  // reason found at the top of its chain; its documents share it.
  for (const f of [...folderIn.unique.values()].sort(byId)) {
    if (settled.has(f.id)) continue;
    const reason = unreachableReason(f, folderIn.unique, folderIn.conflicting);
    unmappable.push({ folderId: f.id, name: f.name, reason });
    for (const d of childDocs.get(f.id) ?? []) rejectDoc(d, reason);
  }
  for (const d of docIn.unique.values()) {
    if (folderIn.unique.has(d.folderId)) continue;
    if (folderIn.conflicting.has(d.folderId)) {
      rejectDoc(d, UNMAPPABLE.listedTwice);
      continue;
    }
    // Said where the folder was last seen, so a file not yet synced is named by its path (black-box round 28b, F9).
    const lastPath = input.lastKnownFolderPath?.(d.folderId);
    rejectDoc(d, UNMAPPABLE.missingFolder(d.folderId, lastPath), lastPath);
  }

  const flagged = unmappable.map((u) => (isTreeInconsistency(u.reason) ? { ...u, inconsistent: true } : u));
  return { folders: sortMap(folders), docs: sortMap(docs), unmappable: sortUnmappable(flagged) };
}

/**
 * Gives every sibling a name whose key no other sibling has. In each group of equal keys one keeps the
 * plain name: a folder (lowest id), else the document whose base path is this path, else the lowest
 * documentId. The others get ' (dup-<first 8 chars of id>)' before the extension.
 */
function resolveCollisions(siblings: readonly Sibling[], ci: boolean): Array<{ sibling: Sibling; name: string }> {
  const groups = new Map<string, Sibling[]>();
  for (const s of siblings) push(groups, s.key, s);
  const taken = new Set<string>();
  const out: Array<{ sibling: Sibling; name: string }> = [];
  const losers: Sibling[] = [];
  for (const group of groups.values()) {
    const ranked = [...group].sort(rankForPlainName);
    const winner = ranked[0]!;
    taken.add(winner.key);
    out.push({ sibling: winner, name: winner.name });
    losers.push(...ranked.slice(1));
  }
  losers.sort((a, b) => (a.kind !== b.kind ? (a.kind === 'folder' ? -1 : 1) : byId(a, b)));
  for (const s of losers) {
    const tag = safeTag(s.id);
    const isDir = s.kind === 'folder';
    const candidates = [withDupSuffix(s.name, tag.slice(0, 8), isDir), withDupSuffix(s.name, tag, isDir)];
    let name: string | undefined;
    for (let n = 0; name === undefined; n++) {
      const candidate = candidates[n] ?? withDupSuffix(s.name, `${tag.slice(0, 8)}-${n}`, isDir);
      if (!taken.has(pathKey(candidate, ci))) name = candidate;
    }
    taken.add(pathKey(name, ci));
    out.push({ sibling: s, name });
  }
  return out;
}

function rankForPlainName(a: Sibling, b: Sibling): number {
  if (a.kind !== b.kind) return a.kind === 'folder' ? -1 : 1;
  if (a.preferred !== b.preferred) return a.preferred ? -1 : 1;
  return byId(a, b);
}

/** An id made safe for use inside a file name (ids are GUIDs in practice, but nothing guarantees it). */
function safeTag(id: string): string {
  const tag = id.replace(/[^A-Za-z0-9_-]/g, '_');
  return tag === '' ? '_' : tag;
}

function unreachableReason(f: FolderIn, all: ReadonlyMap<string, FolderIn>, conflicting: ReadonlySet<string>): string {
  const seen = new Set<string>();
  let cur: FolderIn | undefined = f;
  while (cur) {
    if (seen.has(cur.id)) return UNMAPPABLE.cycle;
    seen.add(cur.id);
    if (cur.parentId === null) return UNMAPPABLE.cycle; // not reached: a top-level tab is always placed or rejected
    if (conflicting.has(cur.parentId)) return UNMAPPABLE.listedTwice;
    const next = all.get(cur.parentId);
    if (!next) return UNMAPPABLE.missingParent(cur.parentId);
    cur = next;
  }
  return UNMAPPABLE.cycle;
}

/** Identical repeats collapse to one; ids listed with different data are set aside as conflicting. */
function dedupe<T>(items: readonly T[], id: (t: T) => string, same: (a: T, b: T) => boolean) {
  const unique = new Map<string, T>();
  const conflicting = new Set<string>();
  for (const item of items) {
    const k = id(item);
    const prev = unique.get(k);
    if (prev === undefined) {
      if (!conflicting.has(k)) unique.set(k, item);
    } else if (!same(prev, item)) {
      unique.delete(k);
      conflicting.add(k);
    }
  }
  return { unique, conflicting };
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function sortMap<V>(map: Map<string, V>): Map<string, V> {
  return new Map([...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function sortUnmappable(list: RemoteObservation['unmappable']): RemoteObservation['unmappable'] {
  const k = (u: RemoteObservation['unmappable'][number]) => `${u.folderId ?? ''}\u0000${u.documentId ?? ''}\u0000${u.reason}\u0000${u.name}`;
  return [...list].sort((a, b) => (k(a) < k(b) ? -1 : k(a) > k(b) ? 1 : 0));
}
