// What a pair's trash holds (for `status`): how many files, how many bytes, which days. Read-only, and bounded:
// a trash of more files than the limit is counted up to it (said as "N+"), so status stays quick.
import fs from 'node:fs';
import path from 'node:path';

export interface TrashSummary {
  /** <stateDir>/<pair>/trash */
  dir: string;
  files: number;
  bytes: number;
  /** The oldest and newest day folders (YYYY-MM-DD) holding something; null when empty. */
  oldestDay: string | null;
  newestDay: string | null;
  /** More files than were counted (the walk stopped at its limit). */
  capped: boolean;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** Counts the files under dir's day folders, at most `limit` of them; a missing or unreadable trash is empty. */
export function summarizeTrash(dir: string, limit = 10_000): TrashSummary {
  const out: TrashSummary = { dir, files: 0, bytes: 0, oldestDay: null, newestDay: null, capped: false };
  let days: string[];
  try {
    days = fs.readdirSync(dir).filter((d) => DAY.test(d)).sort();
  } catch {
    return out;
  }
  for (const day of days) {
    const before = out.files;
    const stack = [path.join(dir, day)];
    while (stack.length > 0 && !out.capped) {
      const current = stack.pop()!;
      let entries: fs.Dirent[];
      try {
        entries = fs.readdirSync(current, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries) {
        const abs = path.join(current, e.name);
        if (e.isDirectory()) {
          stack.push(abs);
          continue;
        }
        if (out.files >= limit) {
          out.capped = true;
          break;
        }
        out.files++;
        out.bytes += fs.lstatSync(abs, { throwIfNoEntry: false })?.size ?? 0;
      }
    }
    if (out.files > before) {
      out.oldestDay ??= day;
      out.newestDay = day;
    }
    if (out.capped) {
      out.newestDay = days[days.length - 1] ?? day; // not counted, but there
      break;
    }
  }
  return out;
}
