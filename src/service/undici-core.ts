// The parts of undici the client uses, loaded on their own: the keep-alive Agent and `request`.
//
// Why not `import { Agent, request } from 'undici'`: undici's index loads everything it ships (fetch,
// WebSocket, EventSource, caches, the mock agent, and Node's own copy of undici through its fetch globals):
// ~90 ms of every `binder-sync sync`, `status` or daemon start on this machine, against ~45 ms for these two
// (docs/BENCHMARKS.md, twenty-first session). undici has no "exports" map, so its files are public paths; the
// version is pinned exactly (package.json), and every HTTP test goes through this module, so a layout change in
// an upgrade fails the suite at once.
/// <reference path="../types/undici-internals.d.ts" />
import type { Dispatcher } from 'undici';
import AgentClass from 'undici/lib/dispatcher/agent.js';
import apiRequest from 'undici/lib/api/api-request.js';
import undiciUtil from 'undici/lib/core/util.js';

export const Agent = AgentClass;
export type Agent = InstanceType<typeof AgentClass>;

export type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher: Dispatcher };
export type ResponseData = Dispatcher.ResponseData;

/**
 * undici's `request(url, opts)` (its index wraps api-request the same way) for our one use: an absolute URL
 * and an explicit dispatcher, never the global one.
 */
export function request(url: string | URL, opts: RequestOptions): Promise<ResponseData> {
  // undici's own URL check (index.js does the same): only http: and https:, with its error for anything else.
  const u = undiciUtil.parseURL(url);
  const { dispatcher, ...rest } = opts;
  return apiRequest.call(dispatcher, { ...rest, origin: u.origin, path: u.search ? `${u.pathname}${u.search}` : u.pathname });
}
