// `npm run bench`: runs the benchmarks (sizes and selection from BENCH_* env, see docs/BENCHMARKS.md),
// prints each result table and writes them into the generated section of docs/BENCHMARKS.md.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { benchDownload } from './download.js';
import { benchIdle } from './idle.js';
import { benchLatency } from './latency.js';
import { benchEnv, wants } from './lib/env.js';
import { machineLines } from './lib/machine.js';
import { ROOT } from './lib/workspace.js';
import { benchNoop } from './noop.js';
import { benchPoll } from './poll.js';
import { benchUpload } from './upload.js';

const START = '<!-- bench:generated:start -->';
const END = '<!-- bench:generated:end -->';

const env = benchEnv();
const started = Date.now();
const log = (s: string) => process.stderr.write(`[bench +${((Date.now() - started) / 1000).toFixed(0)}s] ${s}\n`);
/** name -> generated markdown of this run. */
const sections = new Map<string, string>();
const steps: Array<[string, () => Promise<string>]> = [
  ['download', () => benchDownload(env, log)],
  ['upload', () => benchUpload(env, log)],
  ['noop', () => benchNoop(env, log)],
  ['poll', () => benchPoll(env, log)],
  ['latency', () => benchLatency(env, log)],
  ['idle', () => benchIdle(env, log)],
];
const ORDER = steps.map(([n]) => n);
const command = `${Object.entries(process.env)
  .filter(([k]) => k.startsWith('BENCH_'))
  .map(([k, v]) => `${k}=${v}`)
  .join(' ')} npm run bench`.trim();
for (const [name, fn] of steps) {
  if (!wants(env, name)) continue;
  log(`--- ${name}`);
  const load0 = os.loadavg();
  const t0 = Date.now();
  const section = await fn();
  const load1 = os.loadavg();
  const stamp = `_\`${command}\`, ${new Date().toISOString()}, ${((Date.now() - t0) / 60000).toFixed(1)} min; load average (1/5 min) ${load0[0]?.toFixed(1)}/${load0[1]?.toFixed(1)} before, ${load1[0]?.toFixed(1)}/${load1[1]?.toFixed(1)} after._`;
  const [title, ...rest] = section.split('\n');
  const full = [title, '', stamp, ...rest].join('\n');
  process.stdout.write(`\n${full}\n`);
  sections.set(name, full);
  // Written after every benchmark, so a long run that fails later keeps what it measured.
  writeDoc();
}

/** The per-benchmark blocks of the generated section already in the file (kept when not re-run). */
function existingSections(block: string): Map<string, string> {
  const out = new Map<string, string>();
  const re = /<!-- bench:section:([a-z]+) -->\n([\s\S]*?)(?=\n<!-- bench:section:|\n<!-- bench:generated:end -->)/g;
  for (const m of block.matchAll(re)) out.set(m[1] as string, (m[2] as string).trimEnd());
  return out;
}

function writeDoc(): void {
  if (env.docFile === '') return;
  const file = path.resolve(ROOT, env.docFile);
  const old = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : `# Benchmarks\n\n${START}\n${END}\n`;
  const a = old.indexOf(START);
  const b = old.indexOf(END);
  const merged = a >= 0 && b > a ? existingSections(old.slice(a, b + END.length)) : new Map<string, string>();
  for (const [k, v] of sections) merged.set(k, v);
  const names = [...merged.keys()].sort((x, y) => ORDER.indexOf(x) - ORDER.indexOf(y));
  const generated = [
    START,
    '_Each benchmark below says the command that produced it, when, and the machine load around it; a run of a subset (BENCH_ONLY) replaces only its own sections. Times are wall clock; tables give medians of interleaved runs._',
    '',
    ...machineLines(),
    '',
    ...names.flatMap((n) => [`<!-- bench:section:${n} -->`, merged.get(n) as string, '']),
    END,
  ].join('\n');
  const next = a >= 0 && b > a ? old.slice(0, a) + generated + old.slice(b + END.length) : `${old.trimEnd()}\n\n${generated}\n`;
  fs.writeFileSync(file, next);
  log(`wrote ${path.relative(ROOT, file)}`);
}
log(`done in ${((Date.now() - started) / 60000).toFixed(1)} min`);
