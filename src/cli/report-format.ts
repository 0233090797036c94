// Human-readable plan and pass summaries for the terminal.
import { recoveredText, type PassReport } from '../sync/pass.js';
import type { Action } from '../sync/model.js';
import { describeDone } from '../sync/executor.js';
import { oneLine, printable } from '../sync/issue-groups.js';
import { stoppedByShutdown } from '../sync/stopped-steps.js';
import { fmtBytes } from '../format-bytes.js';

export function describeAction(a: Action): string {
  switch (a.kind) {
    case 'download':
      if (a.reason === 'earlier-version-put-back') return `check        ${a.relPath}  (older time than the synced file: replaced by the latest if it is an earlier version)`;
      return `download     ${a.relPath}  (${a.reason})`;
    case 'upload':
      return `upload       ${a.relPath}  (${a.reason}${a.target.documentId ? '' : ', new document'}${a.thenMoveTo ? `, then moved to ${a.thenMoveTo.relPath} with its remote folder` : ''})`;
    case 'move-local':
      return `move         ${a.from} -> ${a.to}  (moved remotely)`;
    case 'move-dir-local':
      return `move folder  ${a.from}/ -> ${a.to}/  (moved remotely, with ${a.files.length} synced ${a.files.length === 1 ? 'file' : 'files'})`;
    case 'trash-local':
      return `trash        ${a.relPath}  (${a.reason})`;
    case 'conflict': {
      const settled = `${a.policy}${a.policy === 'keep-both' ? `, local copy -> ${a.conflictPath}` : ''}`;
      // No record of the last sync (a first sync, a lost state DB): the pass fetches the remote content and
      // compares before it decides, which a dry run cannot. Listed as a conflict, every file of a tree restored
      // after a lost state DB read as one to be copied aside (black-box round 37b, F4).
      if (a.base === null) return `compare      ${a.relPath}  (no record of the last sync: fetched and compared; the same content is only recorded, different content is settled ${settled})`;
      return `conflict     ${a.relPath}  (${settled})`;
    }
    case 'adopt':
      return `record       ${[a.base, ...(a.alongside ?? [])].map((row) => row.relPath).join(', ')}  (${a.reason})`;
    case 'forget':
      return `forget       ${a.relPath}  (${a.reason})`;
    case 'mkdir-local':
      return `mkdir        ${a.relPath}/${a.reason === 'restore-local-delete' ? '  (restore-local-delete)' : ''}`;
  }
}

export function describePlan(r: PassReport): string {
  const lines = [`[${r.pair}] plan:`];
  for (const group of r.plan.groups) for (const a of group) lines.push(`  ${describeAction(a)}`);
  const held = Object.entries(r.plan.blocked?.held ?? {}).map(([kind, n]) => `${n} ${kind}`);
  if (r.plan.blocked) {
    // A gate empties the plan: say what it held, and how to see those steps without running them.
    lines.push(`  held by the safety gate: ${held.length > 0 ? held.join(', ') : 'every step'} (\`sync --dry-run --force\` lists them, changing nothing)`);
  } else if (r.plan.groups.length === 0) lines.push('  nothing to do');
  return `${lines.join('\n')}\n`;
}

export function summarizeReport(r: PassReport, dryRun: boolean): string {
  const lines: string[] = [];
  const ex = r.execution;
  if (r.plan.blocked) {
    lines.push(`[${r.pair}] STOPPED: ${r.plan.blocked.message}`);
  } else if (ex) {
    // Failed and postponed steps count too: "nothing to do" above a FAILED line read as a pass with no work.
    const postponed = ex.failures.filter((f) => f.postponed === true).length;
    // Steps a stop cut short are not failures (as in the daemon's pass line and `status`).
    const stopped = ex.failures.filter(stoppedByShutdown).length;
    const failed = ex.failures.length - postponed - stopped;
    // A pass with nothing to do but items it cannot sync says so: "nothing to do" above "not synced" lines read
    // as if those were fine.
    const idle = r.issues.length > 0 ? `nothing done, ${r.issues.length} item${r.issues.length === 1 ? '' : 's'} not synced (below)` : 'nothing to do';
    const done = [recoveredText(r), describeDone(ex), failed > 0 ? `${failed} failed` : '', postponed > 0 ? `${postponed} postponed` : '', stopped > 0 ? `${stopped} stopped by the shutdown` : ''].filter((x) => x !== '').join(', ') || idle;
    lines.push(`[${r.pair}] ${done}; ${fmtBytes(ex.bytesDownloaded)} down, ${fmtBytes(ex.bytesUploaded)} up in ${(r.durationMs / 1000).toFixed(1)} s`);
    if (ex.restored) {
      const n = ex.restored.count;
      lines.push(`[${r.pair}] restored ${n} file${n === 1 ? '' : 's'} deleted or renamed locally (${printable(ex.restored.first)}${n > 1 ? ', ...' : ''}): the service has no delete or rename; localDeletePolicy: forget stops this`);
    }
    for (const c of ex.conflicts) lines.push(`[${r.pair}] conflict ${c.relPath}: ${c.outcome}${c.conflictPath ? ` (${c.conflictPath})` : ''}`);
    for (const f of ex.failures) {
      if (f.postponed === true) {
        const why = f.heldOpen ?? (f.code === 'REMOTE_CHANGED' ? 'its document changed on the service meanwhile' : 'a program changed it while it was being synced');
        lines.push(`[${r.pair}] postponed ${f.kind} ${f.relPath}: ${why}; the next pass takes it up`);
      } else if (stoppedByShutdown(f)) {
        lines.push(`[${r.pair}] stopped ${f.kind} ${f.relPath}: cut short by the shutdown, nothing half-done left; the next run takes it up`);
      } else lines.push(`[${r.pair}] FAILED ${f.kind} ${f.relPath}: ${f.message}${f.retryable ? ' (will retry)' : ''}`);
    }
  } else if (dryRun) {
    lines.push(`[${r.pair}] dry run: ${r.plan.groups.flat().length} action(s) planned, nothing changed`);
  }
  for (const i of r.issues) lines.push(`[${r.pair}] not synced: ${printable(i.relPath)}: ${i.code}: ${oneLine(i.detail)}`);
  // Said, so that a folder renamed on the service in the meantime (seen only by a walk) is not a mystery.
  if (r.folderTreeFrom !== null && !dryRun) lines.push(`[${r.pair}] folder tree as walked at ${r.folderTreeFrom} (--walk-folders lists every folder again)`);
  lines.push(`[${r.pair}] ${r.converged ? 'in sync' : 'NOT in sync'}`);
  return `${lines.join('\n')}\n`;
}

