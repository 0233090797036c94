// Builders for reconcile tests: small worlds of base rows, local files and remote docs, plus a one-line
// summary of each action so tables can assert exact kinds, targets, reasons and expectations.
import type {
  Action,
  BaseEntry,
  FileStat,
  LocalFile,
  LocalObservation,
  LocalProblem,
  ReconcileContext,
  RemoteDoc,
  RemoteFolder,
  RemoteObservation,
} from '../../src/sync/model.js';
import { baseNameOf, parentOf, pathKey } from '../../src/sync/path-key.js';

export function ctxOf(over: Partial<ReconcileContext> = {}): ReconcileContext {
  return {
    direction: 'both',
    conflictPolicy: 'keep-both',
    localDeletePolicy: 'restore',
    caseInsensitive: false,
    conflictTag: 'T',
    maxDeleteShare: 1,
    force: false,
    ...over,
  };
}

/** A mutable world that tests fill in, then hand to reconcile via inputs(). */
export class World {
  readonly base = new Map<string, BaseEntry>();
  readonly local: LocalObservation = { files: new Map(), dirs: new Map(), dirInodes: new Map(), problems: [] };
  readonly remote: RemoteObservation = { docs: new Map(), folders: new Map(), gone: new Set(), unmappable: [] };

  constructor(readonly ci = false) {}

  key(relPath: string): string {
    return pathKey(relPath, this.ci);
  }

  folder(folderId: string, relPath: string, parentId: string | null = null): this {
    const f: RemoteFolder = { folderId, name: baseNameOf(relPath), parentId, relPath, key: this.key(relPath) };
    this.remote.folders.set(folderId, f);
    return this;
  }

  /** A local directory, with an inode derived from its path (as the scan gives: a directory move checks it). */
  dir(relPath: string): this {
    if (this.local.dirs.has(this.key(relPath))) return this; // already there (a test may have dropped its inode)
    this.local.dirs.set(this.key(relPath), relPath);
    this.local.dirInodes?.set(this.key(relPath), dirInodeFor(relPath));
    return this;
  }

  /** Local file; its stat is derived from the hash so "same content, same stat" unless overridden. */
  file(relPath: string, sha256: string, stat: Partial<FileStat> = {}): LocalFile {
    const f: LocalFile = { relPath, key: this.key(relPath), sha256, ...statFor(sha256), ...stat };
    this.local.files.set(f.key, f);
    for (let d = parentOf(relPath); d !== ''; d = parentOf(d)) this.dir(d);
    return f;
  }

  problem(relPath: string, reason: LocalProblem['reason'] = 'unreadable'): this {
    this.local.problems.push({ relPath, key: this.key(relPath), reason, detail: `test ${reason}` });
    return this;
  }

  doc(documentId: string, relPath: string, versionId: string, folderId: string): RemoteDoc {
    const d: RemoteDoc = { documentId, fileName: baseNameOf(relPath), folderId, versionId, relPath, key: this.key(relPath) };
    this.remote.docs.set(documentId, d);
    return d;
  }

  baseRow(documentId: string, relPath: string, versionId: string, folderId: string, sha256: string, stat: Partial<FileStat> = {}): BaseEntry {
    const b: BaseEntry = {
      documentId, versionId, versionLabel: null, folderId, fileName: baseNameOf(relPath), relPath,
      key: this.key(relPath), sha256, ...statFor(sha256), ...stat,
    };
    this.base.set(documentId, b);
    return b;
  }

  gone(documentId: string): this {
    this.remote.gone.add(documentId);
    return this;
  }

  /** A document synced and unchanged on both sides. */
  synced(documentId: string, relPath: string, folderId: string, sha = `h-${documentId}`): this {
    this.baseRow(documentId, relPath, 'v1', folderId, sha);
    this.file(relPath, sha);
    this.doc(documentId, relPath, 'v1', folderId);
    return this;
  }
}

/** The inode World gives a directory: distinct from files' (statFor's are below 100,010). */
export function dirInodeFor(relPath: string): number {
  let h = 7;
  for (const c of relPath) h = (h * 31 + c.charCodeAt(0)) % 100_000;
  return 500_000 + h;
}

export function statFor(sha256: string): FileStat {
  let h = 7;
  for (const c of sha256) h = (h * 31 + c.charCodeAt(0)) % 100_000;
  return { size: sha256.length, mtimeMs: 1_000_000 + h, inode: 10 + h, ctimeMs: 2_000_000 + h };
}

function stat(s: FileStat | null): string {
  return s === null ? 'none' : `${s.size}:${s.mtimeMs}:${s.inode}:${s.ctimeMs}`;
}

/** One line per action with every field a test should pin down. */
export function summarize(a: Action): string {
  switch (a.kind) {
    case 'download':
      return `download ${a.relPath} ${a.doc.documentId}@${a.doc.versionId} expect=${stat(a.expectLocal)} ${a.reason}`;
    case 'upload':
      return `upload ${a.relPath} -> ${a.target.documentId ?? 'new'}:${a.target.folderId}/${a.target.fileName} ${a.reason} replaces=${a.replacesBase ?? 'none'}${a.thenMoveTo ? ` then-move=${a.thenMoveTo.relPath}` : ''}`;
    case 'move-local':
      return `move ${a.from} -> ${a.to} expect=${stat(a.expectLocal)}`;
    case 'move-dir-local':
      return `move-dir ${a.from} -> ${a.to} inode=${a.inode} folder=${a.folderId} files=${a.files.map((f) => `${f.documentId}:${f.to}`).join(',')}`;
    case 'trash-local':
      return `trash ${a.relPath} ${a.documentId} expect=${stat(a.expectLocal)} ${a.reason}`;
    case 'conflict':
      return `conflict ${a.relPath} ${a.doc.documentId}@${a.doc.versionId} base=${a.base?.documentId ?? 'none'} ${a.policy} copy=${a.conflictPath} upload-copy=${a.uploadConflictCopy}${a.keepLocal ? ' keep-local' : ''}`;
    case 'adopt':
      return `adopt ${[a.base, ...(a.alongside ?? [])].map((row) => row.documentId).join(',')} ${a.reason}`;
    case 'forget':
      return `forget ${a.documentId} ${a.reason}`;
    case 'mkdir-local':
      return `mkdir ${a.relPath} ${a.folderId}${a.reason === 'restore-local-delete' ? ' restore-local-delete' : ''}`;
  }
}

export function summarizeGroups(groups: Action[][]): string[][] {
  return groups.map((g) => g.map(summarize));
}

/** Recursively freezes a value, including Map/Set contents, so any mutation by reconcile throws. */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return value;
  if (value instanceof Map) {
    for (const [k, v] of value) { deepFreeze(k); deepFreeze(v); }
    const m = value as Map<unknown, unknown>;
    m.set = m.delete = m.clear = () => { throw new TypeError('frozen Map'); };
  } else if (value instanceof Set) {
    for (const v of value) deepFreeze(v);
    const s = value as Set<unknown>;
    s.add = s.delete = s.clear = () => { throw new TypeError('frozen Set'); };
  }
  Object.freeze(value);
  for (const v of Object.values(value as object)) deepFreeze(v);
  return value;
}
