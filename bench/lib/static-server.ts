// A plain static HTTP server over a directory with HTML index pages, so `rclone copy --http-url` can copy a
// tree (rclone's http backend lists directories by parsing the links of an index page).
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';

export interface StaticServer {
  url: string;
  close(): Promise<void>;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');

export async function serveDirectory(root: string): Promise<StaticServer> {
  const server: Server = createServer((req, res) => {
    const rel = decodeURIComponent((req.url ?? '/').split('?')[0] ?? '/');
    const abs = path.join(root, path.normalize(rel));
    if (!abs.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    let st: fs.Stats;
    try {
      st = fs.statSync(abs);
    } catch {
      res.writeHead(404).end();
      return;
    }
    if (st.isDirectory()) {
      const links = fs
        .readdirSync(abs, { withFileTypes: true })
        .map((e) => {
          const name = e.isDirectory() ? `${e.name}/` : e.name;
          return `<a href="${esc(encodeURIComponent(e.name))}${e.isDirectory() ? '/' : ''}">${esc(name)}</a>`;
        })
        .join('\n');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<html><body>\n${links}\n</body></html>\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size, 'last-modified': st.mtime.toUTCString() });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    pipeline(fs.createReadStream(abs), res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
