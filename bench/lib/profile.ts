// Reads a V8 .cpuprofile (node --cpu-prof) and lists the top frames by self time, and self time per module.
import fs from 'node:fs';
import path from 'node:path';
import { table } from './stats.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
}

/** Shortens a frame's URL: repo-relative for our code, "pkg:<name>" for dependencies, "node:" kept. */
function where(url: string, root: string): string {
  if (url === '') return '(native)';
  const p = url.startsWith('file://') ? decodeURIComponent(url.slice(7)) : url;
  const nm = p.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = p.slice(nm + 14).split('/');
    return `pkg:${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  return p.startsWith(root) ? path.relative(root, p) : p;
}

export function summarizeProfile(file: string, root: string, top = 15): string {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const total = prof.nodes.reduce((a, n) => a + (n.hitCount ?? 0), 0);
  const wallMs = (prof.endTime - prof.startTime) / 1000;
  const byFrame = new Map<string, number>();
  const byModule = new Map<string, number>();
  for (const n of prof.nodes) {
    const hits = n.hitCount ?? 0;
    if (hits === 0) continue;
    const w = where(n.callFrame.url, root);
    const frame = `${n.callFrame.functionName || '(anonymous)'} ${w === '(native)' ? '' : `${w}:${n.callFrame.lineNumber + 1}`}`.trim();
    byFrame.set(frame, (byFrame.get(frame) ?? 0) + hits);
    byModule.set(w, (byModule.get(w) ?? 0) + hits);
  }
  const pct = (h: number) => `${((100 * h) / total).toFixed(1)}%`;
  const ms = (h: number) => ((wallMs * h) / total).toFixed(0);
  const frames = [...byFrame.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
  const modules = [...byModule.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10);
  // Idle samples mean the process waited; what it cost is the rest (a daemon is idle most of the time).
  const idle = byFrame.get('(idle)') ?? 0;
  return [
    `Profile ${path.basename(file)}: ${wallMs.toFixed(0)} ms sampled, ${ms(total - idle)} ms of them busy (not \`(idle)\`).`,
    '',
    table(['self %', 'self ms', 'frame'], frames.map(([f, h]) => [pct(h), ms(h), `\`${f}\``])),
    '',
    table(['self %', 'module'], modules.map(([m, h]) => [pct(h), `\`${m}\``])),
  ].join('\n');
}

/** The newest .cpuprofile in `dir`. */
export function newestProfile(dir: string): string {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => path.join(dir, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (!files[0]) throw new Error(`no .cpuprofile in ${dir}`);
  return files[0];
}
