// Routing and dispatch: maps a request to its RouteName and handler, counts it, applies the rate limit
// and injected faults, runs the handler and sends its Reply. One node:http server serves the API, the
// token endpoint, storage and the control interface on distinct path prefixes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Handler, Params } from './api-handlers.js';
import { CONTROL_PREFIX } from './control-http.js';
import type { RequestLog } from './control.js';
import { invalidBodyFor, type FaultInjector, type RateLimiter } from './faults.js';
import { HttpProblem, json, problemReply, sendReply, type Reply } from './http-util.js';
import type { RequestRecord, RouteName } from './types.js';

export const API_PREFIX = '/api/v1';
export const AUTH_PREFIX = '/auth';

interface RouteDef {
  route: RouteName;
  method: string;
  /** Full path segments; ':name' captures, ':name(a|b)' captures one of the listed values. */
  pattern: string[];
  handler: Handler;
  /** API and token routes are rate limited; storage is a different service and is not. */
  limited: boolean;
}

export interface Router {
  add(route: RouteName, method: string, path: string, handler: Handler): void;
  match(method: string, segments: string[]): { def: RouteDef; params: Params } | { allow: string[] } | undefined;
}

export function createRouter(): Router {
  const defs: RouteDef[] = [];
  const capture = (pattern: string[], segments: string[]): Params | undefined => {
    if (pattern.length !== segments.length) return undefined;
    const params: Params = {};
    for (let i = 0; i < pattern.length; i++) {
      const p = pattern[i]!;
      const s = segments[i]!;
      const m = /^:(\w+)(?:\(([^)]*)\))?$/.exec(p);
      if (!m) {
        if (p !== s) return undefined;
      } else {
        if (m[2] !== undefined && !m[2].split('|').includes(s)) return undefined;
        params[m[1]!] = s;
      }
    }
    return params;
  };
  return {
    add(route, method, path, handler) {
      const pattern = path.split('/').filter(Boolean);
      defs.push({ route, method, pattern, handler, limited: !path.startsWith('/storage') });
    },
    match(method, segments) {
      // The first pattern that fits decides (literal routes are added before catch-alls); a wrong method on
      // it is a 405 listing what is allowed.
      const first = defs.find((d) => capture(d.pattern, segments) !== undefined);
      if (!first) return undefined;
      const key = first.pattern.join('/');
      const same = defs.filter((d) => d.pattern.join('/') === key);
      const def = same.find((d) => d.method === method);
      if (!def) return { allow: same.map((d) => d.method) };
      return { def, params: capture(def.pattern, segments)! };
    },
  };
}

export interface DispatchDeps {
  router: Router;
  log: RequestLog;
  faults: FaultInjector;
  limiter: RateLimiter;
  /** gzip JSON answers where the request allows it (EmulatorOptions.compressJson). */
  compressJson: boolean;
  control: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
  onRequest: ((r: RequestRecord) => void) | undefined;
  onError: (err: unknown) => void;
}

export function createDispatcher(deps: DispatchDeps) {
  return async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === CONTROL_PREFIX || url.pathname.startsWith(`${CONTROL_PREFIX}/`)) {
      await deps.control(req, res, url);
      return;
    }
    const record: RequestRecord = {
      method: req.method ?? 'GET',
      path: url.pathname,
      route: null,
      status: 0,
      authorization: req.headers.authorization !== undefined,
      tenantHeader: req.headers['x-service-tenantid'] !== undefined,
      at: new Date().toISOString(),
    };
    res.on('close', () => {
      record.status = res.headersSent ? res.statusCode : 0;
      deps.log.record(record);
      deps.onRequest?.(record);
    });

    let segments: string[];
    try {
      segments = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    } catch {
      sendReply(res, problemReply(new HttpProblem(400, 'the path is not valid percent-encoding')));
      return;
    }
    const found = deps.router.match(req.method ?? 'GET', segments);
    if (!found) {
      sendReply(res, problemReply(new HttpProblem(404, `no route for ${url.pathname}`)));
      return;
    }
    if ('allow' in found) {
      sendReply(res, problemReply(new HttpProblem(405, `${req.method} is not allowed here`, { headers: { allow: found.allow.join(', ') } })));
      return;
    }
    const { def, params } = found;
    record.route = def.route;
    deps.log.count(def.route);

    if (def.limited) {
      const wait = deps.limiter.take();
      if (wait !== undefined) {
        sendReply(res, problemReply(new HttpProblem(429, 'rate limit exceeded', { headers: { 'retry-after': String(wait) } })));
        return;
      }
    }

    const fx = deps.faults.effectsFor(def.route);
    if (fx && fx.latencyMs > 0) await sleep(fx.latencyMs);
    if (fx?.drop) {
      req.socket.destroy();
      return;
    }
    if (fx?.status !== undefined) {
      const headers: Record<string, string> = fx.retryAfterSeconds !== undefined ? { 'retry-after': String(fx.retryAfterSeconds) } : {};
      sendReply(res, problemReply(new HttpProblem(fx.status, 'injected fault', { headers })));
      return;
    }

    let reply: Reply;
    try {
      reply = await def.handler(req, params, url);
    } catch (err) {
      if (!(err instanceof HttpProblem)) deps.onError(err);
      reply = problemReply(err instanceof HttpProblem ? err : new HttpProblem(500, 'internal error'));
    }
    if (res.destroyed) return;
    if (fx?.emptyList && reply.kind !== 'file') reply = json(200, []);
    if (fx?.invalidBody && reply.kind !== 'file') reply = json(200, invalidBodyFor(def.route));
    sendReply(res, reply, { truncate: fx?.truncate === true, corrupt: fx?.invalidBody === true, gzip: deps.compressJson && acceptsGzip(req) });
  };
}

/**
 * RFC 9110 12.5.3: no Accept-Encoding accepts any coding; otherwise gzip (or `*`) must be listed without q=0.
 */
export function acceptsGzip(req: IncomingMessage): boolean {
  const header = req.headers['accept-encoding'];
  if (header === undefined) return true;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.split(';').map((x) => x.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
