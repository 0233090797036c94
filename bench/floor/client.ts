// The floor's minimal HTTP client: undici with the same pool and the same limits as binder-sync's defaults
// (API queue: concurrency + strict per-second cap; transfer queue: concurrency), and nothing else: no retries,
// no validation, no state. What binder-sync costs above this is its own overhead.
import PQueue from 'p-queue';
import { Agent, request } from 'undici';
import type { FloorArgs } from '../lib/workspace.js';

export interface FloorClient {
  args: FloorArgs;
  agent: Agent;
  api<T>(method: 'GET' | 'POST', pathAndQuery: string, body?: unknown): Promise<T>;
  transfers: PQueue;
  close(): Promise<void>;
}

export interface FolderInfo {
  id: string;
  /** "a/b" from the binder's root. */
  path: string;
}

export function floorArgs(): FloorArgs {
  const raw = process.env.BENCH_FLOOR;
  if (!raw) throw new Error('BENCH_FLOOR is not set');
  return JSON.parse(raw) as FloorArgs;
}

export async function openFloorClient(args: FloorArgs): Promise<FloorClient> {
  const agent = new Agent({ keepAliveTimeout: 10_000, connections: 16 });
  const apiQueue = new PQueue({ concurrency: args.limits.maxConcurrentRequests, intervalCap: args.limits.requestsPerSecond, interval: 1000, strict: true });
  const transfers = new PQueue({ concurrency: args.limits.maxConcurrentTransfers });
  const tokenRes = await request(`${args.authUrl}/connect/token`, {
    dispatcher: agent,
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: args.clientId, client_secret: process.env.BENCH_CLIENT_SECRET ?? '', scope: 'service_public' }).toString(),
  });
  if (tokenRes.statusCode !== 200) throw new Error(`token: HTTP ${tokenRes.statusCode}`);
  const token = ((await tokenRes.body.json()) as { access_token: string }).access_token;
  const headers = { authorization: `Bearer ${token}`, 'x-service-tenantid': args.tenantId, accept: 'application/json' };
  return {
    args,
    agent,
    transfers,
    api<T>(method: 'GET' | 'POST', pathAndQuery: string, body?: unknown): Promise<T> {
      return apiQueue.add(async () => {
        const res = await request(args.baseUrl + pathAndQuery, {
          dispatcher: agent,
          method,
          headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        if (res.statusCode >= 300) throw new Error(`${method} ${pathAndQuery.split('?')[0]}: HTTP ${res.statusCode} ${await res.body.text()}`);
        return (await res.body.json()) as T;
      }) as Promise<T>;
    },
    close: () => agent.close(),
  };
}

/** Breadth-first folder walk (one request per folder), like binder-sync's remote listing. */
export async function folderTree(c: FloorClient): Promise<FolderInfo[]> {
  const b = encodeURIComponent(c.args.binderId);
  const out: FolderInfo[] = [];
  let level: FolderInfo[] = (await c.api<Array<{ id: string; name: string }>>('GET', `/documents/drives/binders/${b}`)).map((f) => ({ id: f.id, path: f.name }));
  while (level.length > 0) {
    out.push(...level);
    const subs = await Promise.all(
      level.map(async (f) =>
        (await c.api<Array<{ id: string; name: string }>>('GET', `/documents/drives/binders/${b}/${encodeURIComponent(f.id)}`)).map((s) => ({ id: s.id, path: `${f.path}/${s.name}` })),
      ),
    );
    level = subs.flat();
  }
  return out;
}

/** Runs `fn` over `items` with `workers` at a time. */
export async function pool<T>(items: readonly T[], workers: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(workers, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        await fn(item);
      }
    }),
  );
}
