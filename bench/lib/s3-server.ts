// The smallest S3 server that `rclone copy SRC :s3:bench` can upload a tree into: ListObjects (one level, with
// the "/" delimiter), PUT and HEAD of objects in one path-style bucket over a directory. rclone's S3 backend
// is its fastest remote (no pacing between successful calls, unlike its WebDAV backend, which spaces calls
// 10 ms apart), so it is the fair reference for benchmark 2. Objects are stored as the emulator's storage does
// in the bench (stream to a temp file, rename into place, no fsync). The ETag is taken from the request's
// Content-MD5 when rclone sends one (it does for every single-part upload), so the server does not hash what
// the emulator would not hash either; signatures are not checked.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { StaticServer } from './static-server.js';

export const BENCH_BUCKET = 'bench';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

interface ObjectMeta {
  etag: string;
  headers: Record<string, string>;
}

export interface S3Server extends StaticServer {
  /** Requests served so far (for the table's request column). */
  requests(): number;
}

export async function serveS3(root: string): Promise<S3Server> {
  const tmpDir = fs.mkdtempSync(path.join(path.dirname(root), '.s3-tmp-'));
  const meta = new Map<string, ObjectMeta>();
  let seq = 0;
  let requests = 0;

  function list(url: URL, res: ServerResponse): void {
    const prefix = url.searchParams.get('prefix') ?? '';
    const dir = path.join(root, prefix);
    const contents: string[] = [];
    const prefixes: string[] = [];
    if ((prefix === '' || prefix.endsWith('/')) && fs.existsSync(dir)) {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const key = prefix + e.name;
        if (e.isDirectory()) {
          prefixes.push(`<CommonPrefixes><Prefix>${esc(key)}/</Prefix></CommonPrefixes>`);
          continue;
        }
        const st = fs.statSync(path.join(dir, e.name));
        contents.push(
          `<Contents><Key>${esc(key)}</Key><LastModified>${st.mtime.toISOString()}</LastModified>` +
            `<ETag>&quot;${meta.get(key)?.etag ?? ''}&quot;</ETag><Size>${st.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
        );
      }
    }
    const body =
      '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      `<Name>${BENCH_BUCKET}</Name><Prefix>${esc(prefix)}</Prefix><KeyCount>${contents.length + prefixes.length}</KeyCount>` +
      '<MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>false</IsTruncated>' +
      `${contents.join('')}${prefixes.join('')}</ListBucketResult>\n`;
    res.writeHead(200, { 'content-type': 'application/xml' }).end(body);
  }

  function put(req: IncomingMessage, res: ServerResponse, key: string, abs: string): void {
    const tmp = path.join(tmpDir, String(++seq));
    const sentMd5 = req.headers['content-md5'];
    const hash = typeof sentMd5 === 'string' ? null : createHash('md5');
    if (hash) req.on('data', (chunk: Buffer) => hash.update(chunk));
    pipeline(req, fs.createWriteStream(tmp))
      .then(() => {
        fs.mkdirSync(path.dirname(abs), { recursive: true });
        fs.renameSync(tmp, abs);
        const etag = hash ? hash.digest('hex') : Buffer.from(sentMd5 as string, 'base64').toString('hex');
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-amz-meta-') && typeof v === 'string') headers[k] = v;
        meta.set(key, { etag, headers });
        res.writeHead(200, { etag: `"${etag}"` }).end();
      })
      .catch(() => res.destroy());
  }

  function head(res: ServerResponse, key: string, abs: string): void {
    let st: fs.Stats;
    try {
      st = fs.statSync(abs);
    } catch {
      res.writeHead(404).end();
      return;
    }
    const m = meta.get(key);
    res
      .writeHead(200, { 'content-length': st.size, 'last-modified': st.mtime.toUTCString(), etag: `"${m?.etag ?? ''}"`, 'content-type': 'application/octet-stream', ...m?.headers })
      .end();
  }

  const server: Server = createServer((req, res) => {
    requests++;
    const url = new URL(req.url ?? '/', 'http://localhost');
    const parts = decodeURIComponent(url.pathname).split('/').slice(1);
    const key = parts.slice(1).join('/');
    const abs = path.join(root, path.normalize(key));
    if (parts[0] !== BENCH_BUCKET || (abs !== root && !abs.startsWith(root + path.sep))) {
      req.resume();
      res.writeHead(403).end();
      return;
    }
    if (req.method === 'GET' && key === '') return void (req.resume(), list(url, res));
    if (req.method === 'PUT' && key !== '') return put(req, res, key, abs);
    if (req.method === 'HEAD' && key !== '') return void (req.resume(), head(res, key, abs));
    req.resume();
    res.writeHead(501).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          fs.rmSync(tmpDir, { recursive: true, force: true });
          resolve();
        });
        server.closeAllConnections();
      }),
  };
}
