// A tiny in-memory model of both sides (local files, remote docs with version history, folders) plus a base
// table, with a model executor that applies plans per model.ts. Exported so a soak run can reuse it.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { expectingMovedFile, type SettledMove } from '../../src/sync/after-move.js';
import { sameStat, type Action, type BaseEntry, type FileStat, type LocalObservation, type Plan, type ReconcileContext, type RemoteObservation } from '../../src/sync/model.js';
import { baseNameOf, joinRel, parentOf, pathKey } from '../../src/sync/path-key.js';
import { withheldForAmbiguousNames } from '../../src/sync/plan-filters.js';
import { reconcile } from '../../src/sync/reconcile.js';

/** A write sets mtime and ctime; a link, unlink or rename of the file sets its ctime alone (relinked). */
export interface SimFile { content: string; mtimeMs: number; inode: number; ctimeMs: number }
interface SimDoc { id: string; folderId: string; fileName: string; versions: Array<{ id: string; content: string }> }
interface SimFolder { id: string; name: string; parentId: string | null }

/** A simulated file's stat, as the scan reports it. */
export const simStat = (f: SimFile): FileStat => ({ size: f.content.length, mtimeMs: f.mtimeMs, inode: f.inode, ctimeMs: f.ctimeMs });
const sha = (c: string) => createHash('sha256').update(c).digest('hex');
const DIRS = ['A', 'B', 'A/S', 'C', ''];
const NAMES = ['a.txt', 'b.txt', 'c'];
/** Names a remote folder rename picks from: the folders' own names, so renames can swap and reuse them. */
const FOLDER_NAMES = ['A', 'B', 'S', 'R'];
const FOLDERS: Record<string, SimFolder> = {
  fA: { id: 'fA', name: 'A', parentId: null },
  fB: { id: 'fB', name: 'B', parentId: null },
  fS: { id: 'fS', name: 'S', parentId: 'fA' },
};

export type SimOp =
  | { t: 'local-write'; dir: number; name: number; content: number }
  | { t: 'local-modify'; pick: number; content: number }
  | { t: 'local-delete'; pick: number }
  | { t: 'local-rename'; pick: number; dir: number; name: number }
  | { t: 'remote-add'; folder: number; name: number; content: number }
  | { t: 'remote-modify'; pick: number; content: number }
  | { t: 'remote-rename'; pick: number; name: number }
  | { t: 'remote-move'; pick: number; folder: number }
  | { t: 'remote-delete'; pick: number }
  | { t: 'remote-add-folder-C' }
  /** Two documents of one folder swap names on the service, and their files the same names locally (mv a t; mv b a; mv t b). */
  | { t: 'swap-alike'; pick: number; other: number }
  | { t: 'remote-rename-folder'; folder: number; name: number }
  /** A folder renamed on the service, and its directory the same way locally (`mv A R`), before a pass. */
  | { t: 'rename-folder-alike'; folder: number; name: number }
  | { t: 'sync' };

export class SimWorld {
  readonly local = new Map<string, SimFile>();
  /** Local directories, with their inodes (a directory move checks the one it moves). */
  readonly dirs = new Map<string, number>();
  readonly docs = new Map<string, SimDoc>();
  readonly folders = new Map<string, SimFolder>(Object.entries(FOLDERS).map(([k, v]) => [k, { ...v }]));
  readonly base = new Map<string, BaseEntry>();
  readonly trash: string[] = [];
  /**
   * Contents a user renamed locally. The service cannot rename, so a local rename is uploaded as a new document
   * and the old name handled as a delete (restored): two documents of one content, by the user's own doing.
   */
  readonly renamedLocally = new Set<string>();
  private n = 0;
  passes = 0;
  /**
   * The row a crashed pass left to be written at the next start (the crash simulation's outbox: an upload
   * committed, its row not yet recorded), for the model's own bookkeeping (noteRenamedOnBothSides).
   */
  pendingBase?: (documentId: string) => { relPath: string; inode: number } | undefined;
  /** Untracked files a swap alike put beside the document whose bytes they hold, by document, until a pass. */
  private readonly untrackedAlike = new Map<string, string>();
  /** Directory moves run (tests check the generator reaches them). */
  dirMoves = 0;

  /**
   * Like the scan with lazyHashFromBytes: a file of this many characters or more with no base row at its path
   * is observed unread (sha256 null). Undefined: every file is hashed.
   */
  constructor(readonly lazyFrom?: number) {}

  /** Directory inodes: their own counter, so that the ids the histories below were found with stay the same. */
  private dirInodes = 1_000_000;
  addDir(relPath: string): void {
    if (!this.dirs.has(relPath)) this.dirs.set(relPath, ++this.dirInodes);
  }
  addDirsAbove(relPath: string): void {
    for (let d = parentOf(relPath); d !== ''; d = parentOf(d)) this.addDir(d);
  }
  /**
   * The service renames or moves d while d's file has a local rename not synced yet (a swap-alike whose names the
   * service then changes again): the two renames differ, and the local one, which cannot be sent, makes a new
   * document as any local rename does (renamedLocally). A file under its old name in another directory (moved
   * with its folder) is not renamed: it is followed (reconcile-view.ts ownFileMovedWithFolder).
   */
  /** The document whose base row (or one a crash left pending) records this file at this path, if any. */
  private trackedBy(relPath: string, f: SimFile): string | undefined {
    const row = [...this.base.values()].find((b) => b.relPath === relPath && b.inode === f.inode);
    if (row !== undefined) return row.documentId;
    return [...this.docs.keys()].find((id) => { const b = this.pendingBase?.(id); return b !== undefined && b.relPath === relPath && b.inode === f.inode; });
  }

  private noteRenamedOnBothSides(d: SimDoc): void {
    const untracked = this.untrackedAlike.get(d.id);
    if (untracked !== undefined) this.renamedLocally.add(untracked);
    const b = this.base.get(d.id) ?? this.pendingBase?.(d.id);
    if (b === undefined || this.local.get(b.relPath)?.inode === b.inode) return;
    for (const [p, f] of this.local) if (f.inode === b.inode && baseNameOf(p) !== baseNameOf(b.relPath)) this.renamedLocally.add(f.content);
  }

  /** rename(2) of a directory: everything under it (files, directories) under the new path, same inodes and stats. */
  renameDir(from: string, to: string): void {
    const under = (p: string) => p === from || p.startsWith(`${from}/`);
    for (const [p, f] of [...this.local]) if (under(p)) {
      this.local.delete(p);
      this.local.set(to + p.slice(from.length), f);
    }
    for (const [d, ino] of [...this.dirs]) if (under(d)) {
      this.dirs.delete(d);
      this.dirs.set(to + d.slice(from.length), ino);
    }
  }
  /** What the executor's moveDir checks before it renames: the directory the plan saw, nothing at the new place. */
  canMoveDir(a: Extract<Action, { kind: 'move-dir-local' }>): boolean {
    const at = (p: string) => p === a.to || p.startsWith(`${a.to}/`);
    return this.dirs.get(a.from) === a.inode && ![...this.local.keys(), ...this.dirs.keys()].some(at) && (parentOf(a.to) === '' || this.dirs.has(parentOf(a.to)));
  }

  next(prefix: string): string {
    return `${prefix}${++this.n}`;
  }
  /** 0 = a shared content (so equal content on both sides happens), otherwise a fresh unique content. */
  content(c: number): string {
    return c === 0 ? 'same' : this.next('content-');
  }
  writeLocal(relPath: string, content: string): void {
    const at = ++this.n;
    this.local.set(relPath, { content, mtimeMs: at, inode: ++this.n, ctimeMs: at });
    this.addDirsAbove(relPath);
  }
  /** The file after a link, unlink or rename: same inode, content and mtime, a new ctime. */
  relinked(f: SimFile): SimFile {
    return { ...f, ctimeMs: ++this.n };
  }
  folderPath(id: string): string {
    const f = this.folders.get(id);
    if (!f) throw new Error(`no folder ${id}`);
    return f.parentId === null ? f.name : joinRel(this.folderPath(f.parentId), f.name);
  }
  folderAt(relDir: string): SimFolder | undefined {
    return [...this.folders.values()].find((f) => this.folderPath(f.id) === relDir);
  }
  docPath(d: SimDoc): string {
    return joinRel(this.folderPath(d.folderId), d.fileName);
  }
  latest(d: SimDoc): { id: string; content: string } {
    const v = d.versions[d.versions.length - 1];
    if (!v) throw new Error('doc without versions');
    return v;
  }
  nameTaken(folderId: string, fileName: string): boolean {
    return [...this.docs.values()].some((d) => d.folderId === folderId && d.fileName === fileName);
  }
  sortedDocs(): SimDoc[] {
    return [...this.docs.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  observe(): { local: LocalObservation; remote: RemoteObservation } {
    const local: LocalObservation = { files: new Map(), dirs: new Map(), dirInodes: new Map(), problems: [] };
    const based = new Set([...this.base.values()].map((b) => b.key));
    for (const [relPath, f] of this.local) {
      const unread = this.lazyFrom !== undefined && f.content.length >= this.lazyFrom && !based.has(relPath);
      local.files.set(relPath, { relPath, key: relPath, sha256: unread ? null : sha(f.content), size: f.content.length, mtimeMs: f.mtimeMs, inode: f.inode, ctimeMs: f.ctimeMs });
    }
    for (const [d, ino] of this.dirs) {
      local.dirs.set(d, d);
      local.dirInodes!.set(d, ino);
    }
    const remote: RemoteObservation = { docs: new Map(), folders: new Map(), gone: new Set(), unmappable: [] };
    for (const f of this.folders.values()) {
      const relPath = this.folderPath(f.id);
      remote.folders.set(f.id, { folderId: f.id, name: f.name, parentId: f.parentId, relPath, key: relPath });
    }
    for (const d of this.docs.values()) {
      const relPath = this.docPath(d);
      remote.docs.set(d.id, { documentId: d.id, fileName: d.fileName, folderId: d.folderId, versionId: this.latest(d).id, relPath, key: relPath });
    }
    for (const id of this.base.keys()) if (!this.docs.has(id)) remote.gone.add(id);
    return { local, remote };
  }

  /** Every content a user could still want: local files, trash, every version of every live document. */
  reachable(): Set<string> {
    const all = new Set<string>(this.trash);
    for (const f of this.local.values()) all.add(f.content);
    for (const d of this.docs.values()) for (const v of d.versions) all.add(v.content);
    return all;
  }
  /** What each side shows right now. */
  current(): Set<string> {
    const all = new Set<string>();
    for (const f of this.local.values()) all.add(f.content);
    for (const d of this.docs.values()) all.add(this.latest(d).content);
    return all;
  }

  apply(op: SimOp): void {
    const files = [...this.local.keys()].sort();
    const docs = this.sortedDocs();
    const folderIds = [...this.folders.keys()].sort();
    switch (op.t) {
      case 'local-write': return this.writeLocal(joinRel(DIRS[op.dir] ?? '', NAMES[op.name] ?? 'x'), this.content(op.content));
      case 'local-modify': { const p = files[op.pick % Math.max(1, files.length)]; if (p) this.writeLocal(p, this.content(op.content)); return; }
      case 'local-delete': { const p = files[op.pick % Math.max(1, files.length)]; if (p) this.local.delete(p); return; }
      case 'local-rename': {
        // mv onto a free path: the same inode, content and mtime under another name (often the name a remote
        // rename gave the document too).
        const p = files[op.pick % Math.max(1, files.length)];
        const to = joinRel(DIRS[op.dir] ?? '', NAMES[op.name] ?? 'x');
        const f = p === undefined ? undefined : this.local.get(p);
        if (!f || this.local.has(to) || this.dirs.has(to)) return;
        this.local.delete(p!);
        this.local.set(to, this.relinked(f));
        this.renamedLocally.add(f.content);
        this.addDirsAbove(to);
        return;
      }
      case 'remote-add': {
        const folderId = folderIds[op.folder % folderIds.length] ?? 'fA';
        const fileName = NAMES[op.name] ?? 'x';
        if (this.nameTaken(folderId, fileName)) return;
        const id = this.next('doc-');
        this.docs.set(id, { id, folderId, fileName, versions: [{ id: this.next('ver-'), content: this.content(op.content) }] });
        return;
      }
      case 'remote-modify': { const d = docs[op.pick % Math.max(1, docs.length)]; d?.versions.push({ id: this.next('ver-'), content: this.content(op.content) }); return; }
      case 'remote-rename': {
        const d = docs[op.pick % Math.max(1, docs.length)];
        const name = NAMES[op.name] ?? 'x';
        if (d && !this.nameTaken(d.folderId, name)) {
          this.noteRenamedOnBothSides(d);
          d.fileName = name;
        }
        return;
      }
      case 'remote-move': {
        const d = docs[op.pick % Math.max(1, docs.length)];
        const folderId = folderIds[op.folder % folderIds.length] ?? 'fA';
        if (d && !this.nameTaken(folderId, d.fileName)) {
          this.noteRenamedOnBothSides(d);
          d.folderId = folderId;
        }
        return;
      }
      case 'remote-delete': { const d = docs[op.pick % Math.max(1, docs.length)]; if (d) this.docs.delete(d.id); return; }
      case 'swap-alike': {
        const d1 = docs[op.pick % Math.max(1, docs.length)];
        const d2 = docs[(op.pick + 1 + op.other) % Math.max(1, docs.length)];
        if (!d1 || !d2 || d1 === d2 || d1.folderId !== d2.folderId) return;
        const p1 = this.docPath(d1);
        const p2 = this.docPath(d2);
        const f1 = this.local.get(p1);
        const f2 = this.local.get(p2);
        if (!f1 || !f2) return;
        // A file no row records (a download a crash tore before its row, its intent then void) is renamed as an
        // untracked file: with no record, its content is compared with the document it lands beside (f1 with d1,
        // f2 with d2) and kept both ways if it is none of that document's versions, by design (seed 515930810).
        // One that holds a version of it is no copy to keep (a stale copy: seed 738816297), so not exempted.
        for (const [p, f, d] of [[p1, f1, d1], [p2, f2, d2]] as const) {
          if (this.trackedBy(p, f) !== undefined) continue;
          if (!d.versions.some((v) => v.content === f.content)) this.renamedLocally.add(f.content);
          // Holding its document's bytes it is that document's, as the next pass finds by comparing; until then a
          // rename of the document on the service is one the local rename does not match (seed -1453885755).
          else this.untrackedAlike.set(d.id, f.content);
        }
        const rows = [this.trackedBy(p1, f1), this.trackedBy(p2, f2)];
        [d1.fileName, d2.fileName] = [d2.fileName, d1.fileName];
        // A synced file moved where its own document is not now (the document's renames on the service since the
        // last pass brought it elsewhere, back to its old name say): not alike, a local rename (seed 515930810).
        const movedTo = [p2, p1];
        rows.forEach((id, i) => {
          const doc = id === undefined ? undefined : this.docs.get(id);
          if (doc !== undefined && this.docPath(doc) !== movedTo[i]) this.renamedLocally.add([f1, f2][i]!.content);
        });
        this.local.set(p1, this.relinked(f2));
        this.local.set(p2, this.relinked(f1));
        return;
      }
      case 'remote-add-folder-C': if (!this.folders.has('fC')) this.folders.set('fC', { id: 'fC', name: 'C', parentId: null }); return;
      case 'remote-rename-folder': {
        const f = this.folders.get(folderIds[op.folder % folderIds.length] ?? 'fA');
        const name = FOLDER_NAMES[op.name] ?? 'R';
        // Sibling folders have distinct names on the service.
        if (f && ![...this.folders.values()].some((o) => o.parentId === f.parentId && o.name === name)) f.name = name;
        return;
      }
      case 'rename-folder-alike': {
        const f = this.folders.get(folderIds[op.folder % folderIds.length] ?? 'fA');
        const name = FOLDER_NAMES[op.name] ?? 'R';
        if (!f || [...this.folders.values()].some((o) => o.parentId === f.parentId && o.name === name)) return;
        const from = this.folderPath(f.id);
        const to = joinRel(parentOf(from), name);
        const taken = (p: string) => p === to || p.startsWith(`${to}/`);
        if (!this.dirs.has(from) || [...this.local.keys(), ...this.dirs.keys()].some(taken)) return;
        // A file no row records (a download a crash tore before its row, its intent then void) moves with the
        // directory as an untracked file: a new local file where it lands, a copy of a document's bytes by design
        // when that document is elsewhere then (seed -592517535), as for any local rename.
        for (const [p, file] of this.local) if ((p === from || p.startsWith(`${from}/`)) && this.trackedBy(p, file) === undefined) this.renamedLocally.add(file.content);
        f.name = name;
        this.renameDir(from, to);
        return;
      }
      case 'sync': this.syncPass(); return;
    }
  }

  /** One pass: observe, reconcile (re-run with force when a gate stops it, as an operator would), execute. */
  syncPass(ctxOver: Partial<ReconcileContext> = {}): Plan {
    const before = this.current();
    const { local, remote } = this.observe();
    const ctx: ReconcileContext = {
      direction: 'both', conflictPolicy: 'keep-both', localDeletePolicy: 'restore', caseInsensitive: false,
      conflictTag: `p${++this.passes}`, maxDeleteShare: 0.5, force: false, ...ctxOver,
    };
    // As a pass does (pass.ts): uploads that a commit by name could put on another document wait.
    const plan0 = withheldForAmbiguousNames(reconcile(this.base, local, remote, ctx), remote);
    const plan = plan0.blocked ? withheldForAmbiguousNames(reconcile(this.base, local, remote, { ...ctx, force: true }), remote) : plan0;
    for (const group of plan.groups) this.runGroup(group);
    this.untrackedAlike.clear(); // compared and recorded by this pass
    const kept = this.reachable();
    for (const c of before) if (!kept.has(c)) throw new Error(`content lost in pass ${this.passes}: ${c}`);
    return plan;
  }

  /**
   * Runs the first `count` steps of a group as the executor does: a move's settled stat is carried to the steps
   * after it (src/sync/after-move.ts). Returns the group's steps as they stand after those carries.
   */
  runGroup(group: readonly Action[], count = group.length): Action[] {
    const steps = [...group];
    for (let i = 0; i < Math.min(count, steps.length); i++) {
      const moved = this.execute(steps[i]!);
      if (moved !== undefined) for (let j = i + 1; j < steps.length; j++) steps[j] = expectingMovedFile(steps[j]!, moved);
    }
    return steps;
  }

  private expectLocal(relPath: string, stat: FileStat | null, sha256?: string): SimFile | undefined {
    const f = this.local.get(relPath);
    const ok = stat === null ? !f : !!f && sameStat(simStat(f), stat) && (sha256 === undefined || sha(f.content) === sha256);
    if (!ok) throw new Error(`plan expectation broken at ${relPath}`);
    return f;
  }
  private setBase(docId: string, relPath: string): void {
    const d = this.docs.get(docId);
    const f = this.local.get(relPath);
    if (!d || !f) throw new Error(`cannot record base for ${docId} at ${relPath}`);
    this.base.set(docId, {
      documentId: docId, versionId: this.latest(d).id, versionLabel: null, folderId: d.folderId, fileName: d.fileName,
      relPath, key: pathKey(relPath, false), sha256: sha(f.content), size: f.content.length, mtimeMs: f.mtimeMs, inode: f.inode, ctimeMs: f.ctimeMs,
    });
  }
  private newDoc(folderId: string, fileName: string, content: string): string {
    if (!this.folders.has(folderId)) throw new Error(`upload into missing folder ${folderId}`);
    if (this.nameTaken(folderId, fileName)) throw new Error(`upload of a second ${fileName} into ${folderId}`);
    const id = this.next('doc-');
    this.docs.set(id, { id, folderId, fileName, versions: [{ id: this.next('ver-'), content }] });
    return id;
  }
  private versionContent(docId: string, versionId: string): string {
    const v = this.docs.get(docId)?.versions.find((x) => x.id === versionId);
    if (!v) throw new Error(`no version ${versionId} of ${docId}`);
    return v.content;
  }

  /**
   * The model executor: the semantics described in model.ts, with every expectation checked. A move returns
   * where it left the file, as the executor's runAction does.
   */
  private execute(a: Action): SettledMove | undefined {
    switch (a.kind) {
      case 'download': {
        const at = this.expectLocal(a.relPath, a.expectLocal);
        if (a.reason === 'earlier-version-put-back') {
          // The executor's look (checkPutBack): the latest replaces the file only when it holds an earlier version.
          const versions = this.docs.get(a.doc.documentId)?.versions ?? [];
          if (at === undefined || !versions.slice(0, -1).some((v) => v.content === at.content)) return;
        }
        this.writeLocal(a.relPath, this.versionContent(a.doc.documentId, a.doc.versionId));
        this.setBase(a.doc.documentId, a.relPath);
        return;
      }
      case 'upload': {
        const f = this.expectLocal(a.relPath, a.local, a.local.sha256 ?? undefined) as SimFile;
        let id = a.target.documentId;
        if (id === null) id = this.newDoc(a.target.folderId, a.target.fileName, f.content);
        else {
          const d = this.docs.get(id);
          if (!d || d.folderId !== a.target.folderId || d.fileName !== a.target.fileName) throw new Error(`upload target ${id} moved or gone`);
          d.versions.push({ id: this.next('ver-'), content: f.content });
        }
        if (a.replacesBase !== null && a.replacesBase !== id) this.base.delete(a.replacesBase);
        this.setBase(id, a.relPath);
        if (a.thenMoveTo === undefined) return;
        // Into a folder renamed remotely: the executor moves the file where the new document is listed next (a
        // move-local of it; here in the same step).
        const b = this.base.get(id)!;
        const doc = { documentId: id, fileName: b.fileName, folderId: b.folderId, versionId: b.versionId, ...a.thenMoveTo };
        return this.execute({ kind: 'move-local', from: a.relPath, to: a.thenMoveTo.relPath, toKey: a.thenMoveTo.key, doc, expectLocal: simStat(f), sha256: b.sha256 });
      }
      case 'move-local': {
        const f = this.relinked(this.expectLocal(a.from, a.expectLocal) as SimFile);
        this.expectLocal(a.to, null);
        this.local.delete(a.from);
        this.local.set(a.to, f);
        this.addDirsAbove(a.to);
        const b = this.base.get(a.doc.documentId);
        if (!b) throw new Error('move-local without base');
        // The base follows the file to its new path and remote name, keeping its stat and hash (as the executor
        // does): a file edited locally before the move still differs from the base, so the edit is not lost
        // if the upload planned after the move does not happen. An unchanged file's base takes the moved ctime.
        const stat = b.sha256 === a.sha256 ? simStat(f) : {};
        this.base.set(a.doc.documentId, { ...b, ...stat, relPath: a.to, key: a.toKey, folderId: a.doc.folderId, fileName: a.doc.fileName });
        return { to: a.to, before: a.expectLocal, after: simStat(f) };
      }
      case 'trash-local': {
        const f = this.expectLocal(a.relPath, a.expectLocal) as SimFile;
        this.trash.push(f.content);
        this.local.delete(a.relPath);
        if (a.reason === 'remote-deleted') this.base.delete(a.documentId);
        return;
      }
      case 'conflict': this.resolveConflict(a); return;
      case 'adopt': for (const row of [a.base, ...(a.alongside ?? [])]) this.base.set(row.documentId, row); return;
      case 'forget': this.base.delete(a.documentId); return;
      case 'mkdir-local': this.addDir(a.relPath); this.addDirsAbove(a.relPath); return;
      case 'move-dir-local': {
        // The executor's moveDir, then one transaction for the rows (executor.ts moveDirLocal): each synced file must
        // be as planned, and everything under the directory moves, new files included.
        if (!this.canMoveDir(a)) throw new Error(`move-dir ${a.from} -> ${a.to}: not the directory planned, or its new place is taken`);
        for (const f of a.files) this.expectLocal(f.from, f.expectLocal);
        this.renameDir(a.from, a.to);
        this.moveDirRows(a);
        this.dirMoves++;
        return;
      }
    }
  }

  /** The rows of a directory moved: path, key and remote place; an unchanged file's row takes its scanned stat. */
  moveDirRows(a: Extract<Action, { kind: 'move-dir-local' }>): void {
    for (const f of a.files) {
      const b = this.base.get(f.documentId);
      if (!b) throw new Error('move-dir-local without base');
      const stat = b.sha256 === f.sha256 ? f.expectLocal : {};
      this.base.set(f.documentId, { ...b, ...stat, relPath: f.to, key: f.toKey, folderId: f.folderId, fileName: f.fileName });
    }
  }

  /**
   * The executor's look before it settles a conflict (executor.ts earlierVersionHeld): the version of the document,
   * other than `versionId` (the latest listed), whose content the local file holds. Read newest first, at most
   * three: those after the base's (none held: an edit, a revert included), or with no base row, or a file whose
   * time is older than the synced file's (put back from a backup), those before the latest (ten of these).
   */
  earlierVersionHeld(docId: string, versionId: string, local: SimFile): string | null {
    const versions = this.docs.get(docId)?.versions ?? [];
    const base = this.base.get(docId);
    const restored = base !== undefined && local.mtimeMs < base.mtimeMs;
    const latest = versions.findIndex((v) => v.id === versionId);
    const from = base !== undefined && !restored ? versions.findIndex((v) => v.id === base.versionId) : -1;
    if (latest < 0 || (base !== undefined && !restored && from < 0)) return null;
    const candidates = versions.slice(from + 1, latest).reverse().slice(0, restored ? 10 : 3);
    return candidates.find((v) => v.content === local.content)?.id ?? null;
  }

  private resolveConflict(a: Extract<Action, { kind: 'conflict' }>): void {
    const f = this.expectLocal(a.relPath, a.local, a.local.sha256 ?? undefined) as SimFile;
    const remoteContent = this.versionContent(a.doc.documentId, a.doc.versionId);
    if (remoteContent === f.content) return this.setBase(a.doc.documentId, a.relPath); // equal: adopt
    // A stale copy (an earlier version, e.g. a download whose base row a crash lost, whose intent found the file
    // moved) is no edit: the latest replaces it, its content kept in the trash, whatever the policy. A conflict
    // copy would upload a version the service has as a second document.
    if (!a.keepLocal && this.earlierVersionHeld(a.doc.documentId, a.doc.versionId, f) !== null) {
      this.trash.push(f.content);
      this.writeLocal(a.relPath, remoteContent);
      return this.setBase(a.doc.documentId, a.relPath);
    }
    switch (a.policy) {
      case 'keep-both': {
        this.expectLocal(a.conflictPath, null);
        this.local.set(a.conflictPath, this.relinked(f));
        this.writeLocal(a.relPath, remoteContent);
        this.setBase(a.doc.documentId, a.relPath);
        if (a.uploadConflictCopy) {
          const folder = this.folderAt(parentOf(a.conflictPath));
          if (!folder) throw new Error('conflict copy without a folder');
          this.setBase(this.newDoc(folder.id, baseNameOf(a.conflictPath), f.content), a.conflictPath);
        }
        return;
      }
      case 'remote-wins':
        this.trash.push(f.content);
        this.writeLocal(a.relPath, remoteContent);
        return this.setBase(a.doc.documentId, a.relPath);
      case 'local-wins': {
        const d = this.docs.get(a.doc.documentId);
        if (!d) throw new Error('conflict doc gone');
        d.versions.push({ id: this.next('ver-'), content: f.content });
        return this.setBase(d.id, a.relPath);
      }
    }
  }
}

export const simOpArb: fc.Arbitrary<SimOp> = fc.oneof(
  { arbitrary: fc.record({ t: fc.constant('local-write' as const), dir: fc.nat(DIRS.length - 1), name: fc.nat(NAMES.length - 1), content: fc.nat(3) }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('local-modify' as const), pick: fc.nat(20), content: fc.nat(3) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('local-delete' as const), pick: fc.nat(20) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('local-rename' as const), pick: fc.nat(20), dir: fc.nat(DIRS.length - 1), name: fc.nat(NAMES.length - 1) }), weight: 2 },
  { arbitrary: fc.record({ t: fc.constant('remote-add' as const), folder: fc.nat(3), name: fc.nat(NAMES.length - 1), content: fc.nat(3) }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('remote-modify' as const), pick: fc.nat(20), content: fc.nat(3) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('remote-rename' as const), pick: fc.nat(20), name: fc.nat(NAMES.length - 1) }), weight: 4 },
  { arbitrary: fc.record({ t: fc.constant('remote-move' as const), pick: fc.nat(20), folder: fc.nat(3) }), weight: 3 },
  { arbitrary: fc.record({ t: fc.constant('remote-delete' as const), pick: fc.nat(20) }), weight: 2 },
  { arbitrary: fc.constant({ t: 'remote-add-folder-C' as const }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('swap-alike' as const), pick: fc.nat(20), other: fc.nat(20) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('remote-rename-folder' as const), folder: fc.nat(3), name: fc.nat(FOLDER_NAMES.length - 1) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('rename-folder-alike' as const), folder: fc.nat(3), name: fc.nat(FOLDER_NAMES.length - 1) }), weight: 1 },
  { arbitrary: fc.constant({ t: 'sync' as const }), weight: 4 },
);

/** Runs ops, then settles and checks convergence. Throws (with a reason) on any violated property. */
export function runSimulation(ops: SimOp[], conflictPolicy: ReconcileContext['conflictPolicy'], lazyFrom?: number): SimWorld {
  const w = new SimWorld(lazyFrom);
  for (const op of ops) if (op.t === 'sync') w.syncPass({ conflictPolicy }); else w.apply(op);
  let last = w.syncPass({ conflictPolicy });
  // By design a rename cycle whose files are all modified locally takes two passes (upload first, then the
  // now-unchanged copy can be trashed and re-downloaded); it is reported as a path-collision meanwhile. So does
  // a new file whose place in its folder's new location (a remote rename took the folder) a file still held when
  // the pass planned (a path-collision first, then both). One that could go is moved there by the same pass.
  for (let i = 0; i < 2 && last.issues.some((x) => x.code === 'path-collision'); i++) last = w.syncPass({ conflictPolicy });
  const again = w.syncPass({ conflictPolicy });
  if (again.groups.length > 0) throw new Error(`second pass planned ${JSON.stringify(again.groups.flat().map((a) => a.kind))}`);
  // Files that cannot be uploaded must be reported; everything else must be equal on both sides.
  const waiting = new Set<string>();
  for (const i of again.issues) {
    if (i.code !== 'waiting-for-remote-folder' && i.code !== 'root-files-unsupported') throw new Error(`unexpected issue ${i.code} ${i.relPath}`);
    waiting.add(i.relPath);
  }
  const localSide = new Map([...w.local].filter(([p]) => !waiting.has(p)).map(([p, f]) => [p, f.content]));
  const remoteSide = new Map([...w.docs.values()].map((d) => [w.docPath(d), w.latest(d).content]));
  const diff = [...new Set([...localSide.keys(), ...remoteSide.keys()])].filter((p) => localSide.get(p) !== remoteSide.get(p));
  if (diff.length > 0) throw new Error(`sides differ at ${diff.join(', ')}`);
  for (const p of waiting) {
    const dir = parentOf(p);
    if (dir !== '' && w.folderAt(dir)) throw new Error(`${p} waits although its folder exists`);
  }
  return w;
}
