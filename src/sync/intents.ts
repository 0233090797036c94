// Intents: local steps recorded in the state DB before they touch the file system (a downloaded file being
// put in place, a move following a remote rename), and finished or dropped at the next start. Without them a
// crash between the file operation and its base row would leave a file the next pass cannot explain: a
// finished download would look like a local edit (and become a conflict copy, i.e. a second document), a
// move torn between link and unlink would leave the file at two paths.
import fs from 'node:fs';
import { z } from 'zod';
import { hashFile } from '../local/hash.js';
import { resolveInside, toFileStat } from '../local/fs-ops.js';
import type { StateStore } from '../state/store.js';
import { sameStat, type BaseEntry } from './model.js';
import type { Logger } from 'pino';

const BaseSchema = z.object({
  documentId: z.string(),
  versionId: z.string(),
  versionLabel: z.string().nullable(),
  folderId: z.string(),
  fileName: z.string(),
  relPath: z.string(),
  key: z.string(),
  size: z.number(),
  mtimeMs: z.number(),
  inode: z.number(),
  // Intents written before ctimes were kept have none: 0, "not known" (see sameStat).
  ctimeMs: z.number().default(0),
  sha256: z.string(),
});

/** A downloaded version about to be put at base.relPath; base.sha256 is its content, stat fields unknown. */
const DownloadIntentSchema = z.object({ base: BaseSchema });
/** A file about to move from `from` to base.relPath (inode = the file's inode; base keeps its old stat). */
const MoveIntentSchema = z.object({ from: z.string(), inode: z.number(), base: BaseSchema });
/**
 * A file about to move from `from` to `to` with no base row to write (a local edit set aside as a conflict
 * copy). Stored as a 'move' too (the intents table takes only the two kinds); told apart by having no base.
 */
const PlainMoveIntentSchema = z.object({ from: z.string(), to: z.string(), inode: z.number() });
/**
 * A directory about to be renamed from `fromDir` to `toDir` (a move-dir-local; inode = the directory's), with the
 * documents whose base rows under `fromKey` then go under `toKey` (the same sub-path: a folder's rename changes
 * neither its documents' folders nor their names). Stored as a 'move' too.
 */
const DirMoveIntentSchema = z.object({
  fromDir: z.string(),
  fromKey: z.string(),
  toDir: z.string(),
  toKey: z.string(),
  inode: z.number(),
  documentIds: z.array(z.string()),
});
const AnyMoveIntentSchema = z.union([DirMoveIntentSchema, MoveIntentSchema, PlainMoveIntentSchema]);

/**
 * Records a download intent; resolves once it is committed, so the caller may then touch the file. Group
 * committed (transactionSoon) with the other downloads finishing at the same moment.
 */
export function recordDownloadIntent(store: StateStore, base: BaseEntry): Promise<number> {
  return store.transactionSoon(() => store.addIntent('download', { base } satisfies z.infer<typeof DownloadIntentSchema>));
}

export function recordMoveIntent(store: StateStore, from: string, inode: number, base: BaseEntry): number {
  return store.addIntent('move', { from, inode, base } satisfies z.infer<typeof MoveIntentSchema>);
}

/** See PlainMoveIntentSchema. Without it, a crash between link and unlink left the edit at both paths, and the
 * next pass set it aside as a conflict copy a second time: two documents of one content. */
export function recordPlainMoveIntent(store: StateStore, from: string, to: string, inode: number): number {
  return store.addIntent('move', { from, to, inode } satisfies z.infer<typeof PlainMoveIntentSchema>);
}

/** See DirMoveIntentSchema: recorded before the rename, dropped in the transaction that moves the rows. */
export function recordDirMoveIntent(store: StateStore, move: z.infer<typeof DirMoveIntentSchema>): number {
  return store.addIntent('move', move);
}

/**
 * Finishes what a crash interrupted. A download counts as done when the file at its path holds exactly the
 * downloaded content (hashed: only after a crash, only these files); then its base row is written with the
 * file's current stat. A move counts as done when the file (same inode) is at the new path; if it is at
 * both paths (crash between link and unlink) the old link is removed — the content stays at the new path.
 * Anything else is dropped: the next plan looks at the files as they are, and no content is touched here.
 */
export async function recoverIntents(store: StateStore, root: string, log: Logger): Promise<number> {
  let finished = 0;
  for (const intent of store.listIntents()) {
    try {
      if (intent.kind === 'download') finished += (await recoverDownload(store, root, DownloadIntentSchema.parse(intent.payload).base)) ? 1 : 0;
      else {
        const move = AnyMoveIntentSchema.parse(intent.payload);
        finished += ('documentIds' in move ? recoverDirMove(store, root, move) : 'base' in move ? recoverMove(store, root, move) : recoverPlainMove(root, move)) ? 1 : 0;
      }
    } catch (err) {
      log.warn({ err, kind: intent.kind }, 'could not finish an interrupted step; the next pass looks at the files as they are');
    }
    store.deleteIntent(intent.id);
  }
  return finished;
}

async function recoverDownload(store: StateStore, root: string, base: BaseEntry): Promise<boolean> {
  const abs = resolveInside(root, base.relPath);
  const st = lstatOrNull(abs);
  if (st === null || !st.isFile()) return false;
  const { sha256 } = await hashFile(abs);
  const after = lstatOrNull(abs);
  // Compared with a stat taken before hashing: a file that changed meanwhile is left to the next scan.
  if (sha256 !== base.sha256 || after === null || !sameStat(toFileStat(after), toFileStat(st))) return false;
  store.putBase({ ...base, ...toFileStat(st) });
  return true;
}

function recoverMove(store: StateStore, root: string, m: z.infer<typeof MoveIntentSchema>): boolean {
  const to = lstatOrNull(resolveInside(root, m.base.relPath));
  if (to === null || to.ino !== m.inode) return false;
  const fromAbs = resolveInside(root, m.from);
  const from = lstatOrNull(fromAbs);
  // Torn between link and unlink: the same inode at both paths. Removing the old name loses nothing.
  if (from !== null && from.ino === m.inode) fs.unlinkSync(fromAbs);
  store.transaction(() => {
    const current = store.getBaseByKey(m.base.key);
    if (current && current.documentId !== m.base.documentId) return; // the path was claimed since: leave it
    store.putBase(m.base);
  });
  return true;
}

/**
 * A directory move is done when the directory (same inode) is at its new path and no longer at the old one: the
 * rows of its documents then go to the same sub-paths under the new path, in one transaction, each keeping its
 * stat (a file whose row had another stat is hashed again by the next scan, as any). A row no longer under the old
 * path, or whose new key another document holds now, is left as it is. Not moved: nothing to do, the next pass
 * plans again.
 */
function recoverDirMove(store: StateStore, root: string, m: z.infer<typeof DirMoveIntentSchema>): boolean {
  const to = lstatOrNull(resolveInside(root, m.toDir));
  const from = lstatOrNull(resolveInside(root, m.fromDir));
  if (to === null || !to.isDirectory() || to.ino !== m.inode || (from !== null && from.ino === m.inode)) return false;
  const under = (key: string, dir: string) => key.startsWith(`${dir}/`);
  store.transaction(() => {
    for (const id of m.documentIds) {
      const row = store.getBase(id);
      if (row === undefined || !under(row.key, m.fromKey) || !row.relPath.startsWith(`${m.fromDir}/`)) continue;
      const next = { ...row, relPath: m.toDir + row.relPath.slice(m.fromDir.length), key: m.toKey + row.key.slice(m.fromKey.length) };
      const holder = store.getBaseByKey(next.key);
      if (holder !== undefined && holder.documentId !== id) continue; // the path was claimed since: leave it
      store.putBase(next);
    }
  });
  return true;
}

function recoverPlainMove(root: string, m: z.infer<typeof PlainMoveIntentSchema>): boolean {
  const to = lstatOrNull(resolveInside(root, m.to));
  if (to === null || to.ino !== m.inode) return false;
  const fromAbs = resolveInside(root, m.from);
  const from = lstatOrNull(fromAbs);
  if (from !== null && from.ino === m.inode) fs.unlinkSync(fromAbs);
  return true;
}

function lstatOrNull(abs: string): fs.Stats | null {
  return fs.lstatSync(abs, { throwIfNoEntry: false }) ?? null;
}
