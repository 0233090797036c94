// A small node:http stub of the service on 127.0.0.1 for the service client's edge cases: each request is
// recorded, then answered by the test's handler (a status + JSON body, 'drop' to cut the connection, or a
// function writing the response itself); /auth/connect/token answers with a fresh token unless the handler does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { ServiceClient, type ServiceSettings } from '../../src/service/index.js';

export interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: Buffer;
  at: number;
}
export type Answer = { status: number; headers?: Record<string, string>; body?: unknown } | 'drop' | ((res: ServerResponse) => void | Promise<void>) | undefined;
export type Handler = (r: Seen) => Answer | Promise<Answer>;

export const STUB_SECRET = 'sup3r-s3cret-value';

const servers: Server[] = [];
const clients: ServiceClient[] = [];

/** Closes the stubs and clients a test made (registered once per test file that imports this module). */
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r)).then(() => s.closeAllConnections())));
});

export async function stub(handler: Handler, opts: { connectionClose?: boolean } = {}) {
  const seen: Seen[] = [];
  let tokens = 0;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // the client went away mid-body (an upload it cut short): nothing to answer
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const r: Seen = { method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
    seen.push(r);
    let answer = await handler(r);
    if (answer === undefined && r.path === '/auth/connect/token') answer = { status: 200, body: { access_token: `tok-${++tokens}`, expires_in: 3600 } };
    if (answer === undefined) answer = { status: 404, body: { title: 'no route' } };
    if (answer === 'drop') return req.socket.destroy();
    if (typeof answer === 'function') return answer(res);
    const body = answer.body === undefined ? '' : typeof answer.body === 'string' || Buffer.isBuffer(answer.body) ? answer.body : JSON.stringify(answer.body);
    res.writeHead(answer.status, { 'content-type': 'application/json', ...(opts.connectionClose ? { connection: 'close' } : {}), ...answer.headers });
    res.end(body);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    seen,
    api: () => seen.filter((s) => s.path.startsWith('/api/')),
    tokenCalls: () => seen.filter((s) => s.path === '/auth/connect/token').length,
  };
}

/** A client of the stub at `origin` with fast retries; closed after the test. */
export function stubClient(origin: string, extra: Partial<ServiceSettings> = {}, opts: ConstructorParameters<typeof ServiceClient>[1] = {}): ServiceClient {
  const c = new ServiceClient(
    {
      baseUrl: `${origin}/api/v1/`,
      authUrl: `${origin}/auth`,
      tenantId: 'tenant-1',
      clientId: 'client-1',
      clientSecret: STUB_SECRET,
      retry: { maxAttempts: 4, baseDelayMs: 1, maxDelayMs: 20 },
      ...extra,
    },
    opts,
  );
  clients.push(c);
  return c;
}
