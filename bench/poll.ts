// Benchmark 4: requests per poll (one full remote listing) for growing binders and two page sizes, counted
// by the emulator per route. Measured with `sync --dry-run` on fresh state: it lists everything and changes nothing.
import path from 'node:path';
import type { BenchEnv } from './lib/env.js';
import { secs, table } from './lib/stats.js';
import { deepSet, folderCount, seedRemote } from './lib/trees.js';
import { benchEmulator, limitsAt, rmrf, runSync, tempDir, totalRequests, writeConfig } from './lib/workspace.js';

export async function benchPoll(env: BenchEnv, log: (s: string) => void): Promise<string> {
  const rows: string[][] = [];
  for (const docs of env.pollDocs) {
    const files = deepSet('poll', docs, 16);
    const emu = await benchEmulator();
    const work = tempDir('poll');
    try {
      const binderId = emu.control.createBinder({ name: 'bench-poll' }).id;
      seedRemote(emu, binderId, files);
      const folders = folderCount(files);
      for (const pageSize of env.pollPageSizes) {
        const dir = path.join(work, String(pageSize));
        const cfg = writeConfig(work, { emu, binderId, localPath: path.join(dir, 'local'), stateDir: path.join(dir, 'state'), limits: limitsAt(1000), pageSize });
        emu.control.resetCounters();
        const r = await runSync(cfg, emu, { args: ['--dry-run'], allowUnconverged: true });
        const c = emu.control.counters();
        const total = totalRequests(c);
        rows.push([
          String(docs),
          String(folders),
          String(pageSize),
          String(c.search),
          String(c.folders + c.subfolders),
          String(c.token + c.metadataelements + c.binders),
          String(total),
          // At the default 100 req/s the listing cannot take less than this.
          secs((total / 100) * 1000),
          secs(r.ms),
        ]);
        log(`poll ${docs} docs, pageSize ${pageSize}: ${total} requests, ${secs(r.ms)} s`);
      }
    } finally {
      await emu.close();
      rmrf(work);
    }
  }
  return [
    '### 4. Requests per poll (full remote listing)',
    '',
    table(['documents', 'folders', 'pageSize', 'search pages', 'folder-tree requests', 'token + metadata', 'total', 'min s at 100 req/s', 'dry-run s at 1000 req/s'], rows),
  ].join('\n');
}
