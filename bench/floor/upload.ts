// Floor for the initial upload: token, folder tree, then per local file the three steps of the spec
// (presigned slot, PUT to storage, commit as a new document). No hashing, outbox or state.
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { floorArgs, folderTree, openFloorClient, pool } from './client.js';

const args = floorArgs();
const c = await openFloorClient(args);
const folderIds = new Map((await folderTree(c)).map((f) => [f.path, f.id]));
const files: Array<{ abs: string; folderId: string; fileName: string; size: number }> = [];
const walk = (abs: string, rel: string) => {
  for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
    const a = path.join(abs, e.name);
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walk(a, r);
    else if (e.isFile() && folderIds.has(rel)) files.push({ abs: a, folderId: folderIds.get(rel) as string, fileName: e.name, size: fs.statSync(a).size });
  }
};
walk(args.dir, '');
let bytes = 0;
const b = encodeURIComponent(args.binderId);
await pool(files, args.workers, async (f) => {
  const slot = await c.api<{ presignedUrl: string; uploadId: string }>('GET', '/documents/uploads/personalstorage/presignedupload');
  await c.transfers.add(async () => {
    const res = await request(slot.presignedUrl, {
      dispatcher: c.agent,
      method: 'PUT',
      headers: { 'content-length': String(f.size), 'x-ms-blob-type': 'BlockBlob' },
      body: fs.createReadStream(f.abs),
    });
    await res.body.dump();
    if (res.statusCode >= 300) throw new Error(`storage PUT: HTTP ${res.statusCode}`);
  });
  bytes += f.size;
  await c.api('POST', `/documents/drives/binders/${b}/${encodeURIComponent(f.folderId)}/upload`, { fileName: f.fileName, version: '1', uploadId: slot.uploadId, additionalMetadata: [] });
});
await c.close();
process.stdout.write(`${JSON.stringify({ files: files.length, bytes })}\n`);
