// Floor for the initial download: token, folder tree, search pages, then per document one download-link
// request and one storage GET streamed into a file. No temp files, hashing, fsync or state; with `durable`,
// each file is fsynced before it is closed, and nothing else changes.
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { floorArgs, folderTree, openFloorClient, pool } from './client.js';

interface Doc {
  id: string;
  fileName: string;
  folderId: string;
  latestVersionId: string;
}

const args = floorArgs();
const c = await openFloorClient(args);
const folders = new Map((await folderTree(c)).map((f) => [f.id, f.path]));
const docs: Doc[] = [];
const filters = { MetadataFilters: [{ metadataElementId: 'GLOBAL_BinderId', valueId: args.binderId }], SortBy: [] };
for (let page = 1; ; page++) {
  const res = await c.api<{ items: Doc[]; totalCount: number }>('POST', `/documents?pageSize=${args.pageSize}&pageNumber=${page}`, filters);
  docs.push(...res.items);
  if (page * args.pageSize >= res.totalCount || res.items.length === 0) break;
}
const made = new Set<string>();
let bytes = 0;
await pool(docs, args.workers, async (d) => {
  const link = await c.api<{ url: string }>('GET', `/documents/${encodeURIComponent(d.id)}/versions/${encodeURIComponent(d.latestVersionId)}/raw`);
  const dir = path.join(args.dir, folders.get(d.folderId) ?? '_unknown');
  if (!made.has(dir)) {
    fs.mkdirSync(dir, { recursive: true });
    made.add(dir);
  }
  await c.transfers.add(async () => {
    const res = await request(link.url, { dispatcher: c.agent, method: 'GET' });
    if (res.statusCode !== 200) throw new Error(`storage GET: HTTP ${res.statusCode}`);
    res.body.on('data', (chunk: Buffer) => (bytes += chunk.length));
    await pipeline(res.body, fs.createWriteStream(path.join(dir, d.fileName), { flush: args.durable === true }));
  });
});
await c.close();
process.stdout.write(`${JSON.stringify({ files: docs.length, bytes })}\n`);
