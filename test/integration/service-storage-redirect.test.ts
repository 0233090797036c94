// Storage redirects (a CDN or storage front end answering 30x): the client against the emulator over real HTTP,
// with a tiny redirecting server in between. Download links are rewritten to point at the redirector, which
// sends the client on (one or more hops) to the emulator's presigned storage URL.
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.js';
import { ServiceClient, ServiceError } from '../../src/service/index.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Hit {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  bytes: number;
}

/**
 * /go/{n}?to=URL answers `status` with Location /go/{n-1}... and finally URL. Everything else is proxied to the
 * emulator's API, with the `url` of download links turned into /go/{hops}?to=url.
 */
async function setup(o: { status?: number; hops?: number } = {}) {
  const emu = await startEmulator({ quiet: true });
  cleanups.push(() => emu.close());
  const hits: Hit[] = [];
  const status = o.status ?? 307;
  let hops = o.hops ?? 1;
  let origin = '';
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname.startsWith('/go/')) {
      hits.push({ method: req.method ?? '', path: u.pathname, headers: req.headers, bytes: body.length });
      const n = Number(u.pathname.slice(4));
      const to = u.searchParams.get('to')!;
      res.writeHead(status, { location: n > 1 ? `/go/${n - 1}?to=${encodeURIComponent(to)}` : to });
      return res.end();
    }
    const headers: Record<string, string> = {};
    for (const k of ['authorization', 'x-service-tenantid', 'content-type', 'accept']) if (typeof req.headers[k] === 'string') headers[k] = req.headers[k] as string;
    const upstream = await fetch(`${new URL(emu.baseUrl).origin}${req.url}`, { method: req.method ?? 'GET', headers, body: req.method === 'GET' ? null : body });
    let text = await upstream.text();
    if (/\/(raw|downloadlink)$/.test(u.pathname) && upstream.status === 200) {
      const link = JSON.parse(text) as { url: string };
      text = JSON.stringify({ ...link, url: `${origin}/go/${hops}?to=${encodeURIComponent(link.url)}` });
    }
    res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
    res.end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise((r) => server.close(r)).then(() => server.closeAllConnections()));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => void lines.push(l) });
  const client = new ServiceClient(
    {
      baseUrl: `${origin}/api/v1`,
      authUrl: emu.authUrl,
      tenantId: emu.credentials.tenantId,
      clientId: emu.credentials.clientId,
      clientSecret: emu.credentials.clientSecret,
      retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20 },
    },
    { logger },
  );
  cleanups.push(() => client.close());
  const binder = emu.control.createBinder({ name: 'R' });
  const tab = emu.control.createFolder(binder.id, { name: 'T' });
  /** A URL that redirects `n` times to `to`. */
  const via = (to: string, n = hops) => `${origin}/go/${n}?to=${encodeURIComponent(to)}`;
  return { emu, client, binder, tab, hits, lines, via, setHops: (n: number) => void (hops = n) };
}

function collect(): { dest: Writable; data: () => Buffer } {
  const chunks: Buffer[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _e, cb) {
      chunks.push(chunk);
      cb();
    },
  });
  return { dest, data: () => Buffer.concat(chunks) };
}

/** Nothing logged or thrown shows a presigned signature, the redirector's query, or a token. */
function expectNoSecrets(texts: string[]) {
  const all = texts.join('\n');
  expect(all).not.toMatch(/sig=|sig%3D|exp=|to=http/i);
  expect(all).not.toMatch(/Bearer [A-Za-z0-9]/);
}

describe('storage redirects', () => {
  it.each([301, 302, 303, 307, 308])('download follows %i redirects to storage, without Authorization and without logging query strings', async (status) => {
    const { emu, client, binder, tab, hits, lines } = await setup({ status, hops: 2 });
    const content = Buffer.alloc(200_000, 3);
    const a = emu.control.addDocument(binder.id, tab.id, 'a.bin', content);
    const out = collect();
    expect(await client.downloadVersionTo(a.document.id, a.version.id, out.dest)).toEqual({ bytes: content.length, sha256: sha(content) });
    expect(out.data().equals(content)).toBe(true);
    expect(hits.map((h) => [h.method, h.path])).toEqual([
      ['GET', '/go/2'],
      ['GET', '/go/1'],
    ]);
    for (const h of hits) expect(h.headers.authorization).toBeUndefined();
    const storage = emu.control.lastRequests(100).filter((r) => r.route === 'storage-get');
    expect(storage.map((r) => [r.status, r.authorization])).toEqual([[200, false]]);
    expect(lines.filter((l) => l.includes('"redirect":true'))).toHaveLength(2);
    expectNoSecrets(lines);
  });

  it('download: up to 5 redirects are followed, a 6th fails without retrying', async () => {
    const { emu, client, binder, tab, hits, lines, setHops } = await setup({ hops: 5 });
    const a = emu.control.addDocument(binder.id, tab.id, 'a.txt', 'alpha');
    const out = collect();
    expect((await client.downloadVersionTo(a.document.id, a.version.id, out.dest)).bytes).toBe(5);
    expect(hits).toHaveLength(5);
    hits.length = 0;
    setHops(6);
    const err = (await client.downloadVersionTo(a.document.id, a.version.id, collect().dest).catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ request: 'GET storage', retryable: false, status: 307 });
    expect(err.message).toContain('more than 5 times');
    expect(hits).toHaveLength(6);
    expectNoSecrets([...lines, err.message, err.describe(), JSON.stringify(err.context)]);
  });

  it('download: a redirect to an expired link (403) fetches a new link', async () => {
    const { emu, client, binder, tab } = await setup({ hops: 1 });
    const a = emu.control.addDocument(binder.id, tab.id, 'a.txt', 'alpha');
    emu.control.injectFault({ route: 'storage-get', status: 403, times: 1 });
    const out = collect();
    expect((await client.downloadVersionTo(a.document.id, a.version.id, out.dest)).bytes).toBe(5);
    expect(emu.control.counters().downloadlink).toBe(2);
  });

  it.each([307, 308])('upload: a PUT answered %i is repeated at the Location with the content opened again', async (status) => {
    const { emu, client, binder, tab, hits, lines, via } = await setup({ status });
    const content = Buffer.alloc(300_000, 5);
    const slot = await client.getPresignedUpload();
    let opens = 0;
    await client.putContent(
      via(slot.presignedUrl, 2),
      () => {
        opens++;
        return Readable.from([content]);
      },
      content.length,
    );
    expect(opens).toBe(3);
    expect(hits.map((h) => [h.method, h.path, h.headers.authorization])).toEqual([
      ['PUT', '/go/2', undefined],
      ['PUT', '/go/1', undefined],
    ]);
    const v = await client.commitUpload(binder.id, tab.id, { fileName: 'up.bin', versionLabel: '1', uploadId: slot.uploadId, metadata: [] });
    expect(emu.control.readContent(v.documentId).equals(content)).toBe(true);
    expectNoSecrets(lines);
  });

  it.each([301, 302, 303])('upload: a PUT answered %i (which would not repeat the PUT) fails without retrying; nothing is stored', async (status) => {
    const { emu, client, hits, via, lines } = await setup({ status });
    const slot = await client.getPresignedUpload();
    const err = (await client.putContent(via(slot.presignedUrl, 1), () => Readable.from([Buffer.from('abc')]), 3).catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({ request: 'PUT storage', retryable: false, status });
    expect(hits).toHaveLength(1);
    expect(emu.control.counters()['storage-put']).toBe(0);
    expectNoSecrets([...lines, err.message, JSON.stringify(err.context)]);
  });

  it('upload: more than 5 PUT redirects fail', async () => {
    const { client, hits, via } = await setup({ status: 308 });
    const slot = await client.getPresignedUpload();
    const err = (await client.putContent(via(slot.presignedUrl, 6), () => Readable.from([Buffer.from('abc')]), 3).catch((e: unknown) => e)) as ServiceError;
    expect(err).toMatchObject({ request: 'PUT storage', retryable: false, status: 308 });
    expect(err.message).toContain('more than 5 times');
    expect(hits).toHaveLength(6);
  });
});
