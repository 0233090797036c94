// Safety gates: stop a pass whose inputs or plan look like an accident (unmounted disk, suddenly empty
// listing, mass deletion) rather than the user's intent. Skipped with ctx.force (CLI --force).
import type { Action, BaseEntry, LocalObservation, Plan, ReconcileContext, RemoteObservation } from './model.js';

/**
 * How many planned steps may remove local content: trash-local, and conflicts resolved remote-wins. A trashed
 * path whose inode another local path still holds removes nothing (e.g. a move torn between link and unlink
 * by a crash leaves the file at both paths), so it does not count. Nor does the unchanged old copy of a
 * document moved remotely onto a path a local file holds ('replaced-by-remote-move'): its content is the
 * document's, which the same pass writes at the new path (or sets beside the local file as a conflict), so
 * nothing leaves the pair; counted, files renamed on the service onto names used locally stopped the pass.
 */
export function countDeletes(groups: Action[][], local?: LocalObservation): number {
  let linksByInode: Map<number, number> | null = null;
  const linkedElsewhere = (a: Extract<Action, { kind: 'trash-local' }>): boolean => {
    if (!local) return false;
    if (linksByInode === null) {
      linksByInode = new Map();
      for (const f of local.files.values()) linksByInode.set(f.inode, (linksByInode.get(f.inode) ?? 0) + 1);
    }
    return (linksByInode.get(a.expectLocal.inode) ?? 0) > 1;
  };
  let n = 0;
  for (const g of groups)
    for (const a of g) {
      if (a.kind === 'trash-local' && a.reason === 'remote-deleted' && !linkedElsewhere(a)) n++;
      else if (a.kind === 'conflict' && a.policy === 'remote-wins') n++;
    }
  return n;
}

/**
 * How to let a blocked pass through, said so that it works from where the message is read: a daemon has no
 * --force, and `sync` exits 5 while the daemon holds the state directory.
 */
const FORCE_ONCE = 'run `binder-sync sync --force` once (stop the daemon first, if one runs)';

/**
 * Rule for max-delete: blocked when deletes > max(1, floor(maxDeleteShare * baseCount)). One delete is always
 * allowed (a single trashed file is never a mass event, even with a tiny base). Conflicts with no base are
 * always keep-both (conflictPolicyFor), so they never count.
 */
export function maxDeleteAllowed(share: number, baseCount: number): number {
  return Math.max(1, Math.floor(share * baseCount));
}

export function checkGates(
  base: ReadonlyMap<string, BaseEntry>,
  local: LocalObservation,
  remote: RemoteObservation,
  groups: Action[][],
  ctx: ReconcileContext,
): Plan['blocked'] {
  if (ctx.force) return null;
  const baseCount = base.size;
  // One synced file gone is no mass event (as max-delete allows one delete): an editor saving the only synced
  // file by renaming it away and the new one in must not stop the pair.
  // Synced files that an ignore rule now hides are not expected in the scan (their documents are listed as
  // ignored): a rule that hides every synced file is the user's choice, not an empty disk.
  if (baseCount > 1 && local.files.size === 0 && local.problems.length === 0 && syncedAndVisible(base, remote, ctx) > 1) {
    return {
      code: 'local-root-empty',
      message:
        `The local folder is empty but ${baseCount} file(s) were synced before; an unmounted or replaced disk ` +
        `looks like this, so nothing was changed. ${emptiedRootForced(ctx)}`,
    };
  }
  // A listing whose documents all exist but cannot be placed locally (ignored, bad names) is not empty.
  if (baseCount > 0 && remote.docs.size === 0 && !remote.unmappable.some((u) => u.documentId !== undefined)) {
    return {
      code: 'remote-empty',
      message:
        `The binder listing is empty but ${baseCount} document(s) were synced before; nothing was changed. ` +
        `If the binder really is empty now, ${FORCE_ONCE}.`,
    };
  }
  const deletes = countDeletes(groups, local);
  const allowed = maxDeleteAllowed(ctx.maxDeleteShare, baseCount);
  if (deletes > allowed) {
    const pct = Math.round(ctx.maxDeleteShare * 100);
    return {
      code: 'max-delete',
      message:
        `This pass would move ${deletes} local file(s) to the trash, more than the ${allowed} allowed ` +
        `(${pct}% of ${baseCount} synced file(s)); nothing was changed. Check the binder, then raise ` +
        `maxDeleteShare (a running daemon takes it on reload) or ${FORCE_ONCE}.`,
    };
  }
  return null;
}

/**
 * What `sync --force` does with an emptied local folder under the pair's settings: the service cannot delete, so
 * it never empties the binder. Said as "if you really deleted everything, run --force", the user who did got
 * every file back (black-box round 40c, F3).
 */
function emptiedRootForced(ctx: ReconcileContext): string {
  const restores = ctx.direction !== 'upload' && ctx.localDeletePolicy === 'restore';
  const what = restores
    ? 'downloads every file again (localDeletePolicy: restore), as after a mistaken delete'
    : 'leaves them deleted here and stops syncing their documents, which stay on the service';
  return `Nothing on the service is deleted either way. To go on, ${FORCE_ONCE}: it ${what}.`;
}

/**
 * Base entries that no ignore rule hides this pass (what the local scan should still see): neither their local
 * path (ReconcileContext.ignoredLocally) nor their document (listed as ignored) is left out.
 */
function syncedAndVisible(base: ReadonlyMap<string, BaseEntry>, remote: RemoteObservation, ctx: ReconcileContext): number {
  const ignored = new Set<string>();
  for (const u of remote.unmappable) if (u.ignored === true && u.documentId !== undefined) ignored.add(u.documentId);
  if (ignored.size === 0 && ctx.ignoredLocally === undefined) return base.size;
  let n = 0;
  for (const b of base.values()) if (!ignored.has(b.documentId) && ctx.ignoredLocally?.(b.relPath) !== true) n++;
  return n;
}
