// Child of idle-lab's "poll" rounds: N full remote listings (fetchRemote, as a quiet daemon poll makes them)
// against the config's service, printing the process CPU and heap per listing. Run with --cpu-prof to profile.
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { fetchRemote, type RawListing } from '../../src/remote/listing.js';
import { serviceClientFor } from '../../src/service/from-config.js';

const [configFile, nArg] = process.argv.slice(2);
const { config } = loadConfig(configFile as string);
const pair = config.pairs[0]!;
const client = serviceClientFor(config, createLogger({ level: 'warn' }));
let previous: RawListing | null = null;
// POLL_BALLAST=N keeps N small records alive, like the daemon's caches (its live heap is ~90 MB at 100k files).
(globalThis as { ballast?: unknown }).ballast = Array.from({ length: Number(process.env.POLL_BALLAST ?? 0) }, (_, i) => ({ relPath: `dir-${i % 1000}/file-${i}.txt`, key: `k${i}`, size: i, mtimeMs: i * 1.5, sha256: `${i}`.padStart(64, '0') }));
for (let i = 0; i < Number(nArg ?? 5); i++) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const raw = await fetchRemote(client, { binderId: pair.binderId, pageSize: pair.pageSize, previous, reuseFolders: true });
  const cpu = process.cpuUsage(cpu0);
  previous = raw;
  const mem = process.memoryUsage();
  console.log(`poll ${i + 1}: ${raw.docs.size} docs, unchanged ${raw.unchanged}, ${raw.requests} requests, ${(performance.now() - t0).toFixed(0)} ms wall, cpu ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms, heapUsed ${(mem.heapUsed / 2 ** 20).toFixed(0)} MiB, rss ${(mem.rss / 2 ** 20).toFixed(0)} MiB`);
}
await client.close();
process.exit(0);
