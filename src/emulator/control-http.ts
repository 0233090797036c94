// The control interface over HTTP under /_control, so a separate process (the CLI emulator) can be driven:
// JSON in, JSON out, problem+json on errors. Not counted, rate limited or faulted.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { fieldErrors } from './schemas.js';
import { HttpProblem, json, problemReply, readBody, sendReply, type Reply } from './http-util.js';
import { ROUTE_NAMES, type EmulatorControl, type EmulatorCredentials } from './types.js';

export const CONTROL_PREFIX = '/_control';

const metadataValue = z.strictObject({ metadataElementId: z.string(), valueId: z.string() });
const content = { content: z.string().optional(), contentBase64: z.string().optional() };
const schemas = {
  binder: z.strictObject({ tenantId: z.string().optional(), name: z.string().min(1), type: z.string().optional(), id: z.string().optional() }),
  element: z.strictObject({
    id: z.string().min(1),
    label: z.string(),
    dataType: z.string(),
    allowedValues: z.array(z.strictObject({ id: z.string(), label: z.string() })).optional(),
    required: z.boolean().optional(),
  }),
  folder: z.strictObject({ binderId: z.string(), name: z.string(), parentId: z.string().nullable().optional(), type: z.string().optional() }),
  name: z.strictObject({ name: z.string() }),
  parent: z.strictObject({ parentId: z.string().nullable() }),
  document: z.strictObject({
    binderId: z.string(),
    folderId: z.string(),
    fileName: z.string(),
    ...content,
    versionLabel: z.string().optional(),
    metadata: z.array(metadataValue).optional(),
  }),
  version: z.strictObject({ ...content, versionLabel: z.string().optional() }),
  fileName: z.strictObject({ fileName: z.string() }),
  folderId: z.strictObject({ folderId: z.string() }),
  versionId: z.strictObject({ versionId: z.string() }),
  fault: z.strictObject({
    route: z.enum(['*', ...ROUTE_NAMES]),
    status: z.number().int().min(100).max(599).optional(),
    retryAfterSeconds: z.number().int().min(0).optional(),
    latencyMs: z.number().min(0).optional(),
    drop: z.boolean().optional(),
    truncate: z.boolean().optional(),
    invalidBody: z.boolean().optional(),
    emptyList: z.boolean().optional(),
    times: z.number().int().min(1).optional(),
    probability: z.number().min(0).max(1).optional(),
  }),
  searchLag: z.strictObject({ ms: z.number().min(0) }),
  searchShuffled: z.strictObject({ on: z.boolean() }),
  /** documentIds absent: every document's links; null: none any more. */
  expiredLinks: z.strictObject({ documentIds: z.array(z.string()).nullable().optional() }),
  /** slots absent: every presigned upload URL from now on; a number: that many; null: none any more. */
  expiredUploadUrls: z.strictObject({ slots: z.number().int().min(1).nullable().optional() }),
  rateLimit: z.strictObject({ requestsPerSecond: z.number().positive(), burst: z.number().int().min(1).optional() }).nullable(),
};

async function body<T>(req: IncomingMessage, schema: z.ZodType<T>): Promise<T> {
  const raw = await readBody(req);
  let value: unknown;
  try {
    value = raw.length === 0 ? {} : JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HttpProblem(400, 'the control body is not valid JSON');
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new HttpProblem(400, 'invalid control request', { errors: fieldErrors(parsed.error) });
  return parsed.data;
}

function contentOf(b: { content?: string | undefined; contentBase64?: string | undefined }): Buffer {
  if (b.contentBase64 !== undefined) return Buffer.from(b.contentBase64, 'base64');
  return Buffer.from(b.content ?? '', 'utf8');
}

const ok = (value: unknown = { ok: true }): Reply => json(200, value ?? { ok: true });

export function createControlHttp(control: EmulatorControl, credentials: () => EmulatorCredentials) {
  /** Routes as "METHOD /path/with/:params". */
  const routes: Array<[string, (req: IncomingMessage, p: string[], url: URL) => Promise<Reply>]> = [
    ['GET /credentials', async () => ok(credentials())],
    ['POST /tenants', async () => ok(control.createTenant())],
    ['POST /binders', async (req) => ok(control.createBinder(await body(req, schemas.binder)))],
    ['POST /binders/:id/metadataelements', async (req, [id]) => ok(control.addMetadataElement(id!, await body(req, schemas.element)))],
    ['GET /binders/:id/documents', async (_r, [id]) => ok(control.listDocuments(id!))],
    ['GET /binders/:id/folders', async (_r, [id]) => ok(control.listFolders(id!))],
    [
      'POST /folders',
      async (req) => {
        const { binderId, ...rest } = await body(req, schemas.folder);
        return ok(control.createFolder(binderId, rest));
      },
    ],
    ['POST /folders/:id/rename', async (req, [id]) => ok(control.renameFolder(id!, (await body(req, schemas.name)).name))],
    ['POST /folders/:id/move', async (req, [id]) => ok(control.moveFolder(id!, (await body(req, schemas.parent)).parentId))],
    ['DELETE /folders/:id', async (_r, [id]) => ok(control.deleteFolder(id!))],
    [
      'POST /documents',
      async (req) => {
        const b = await body(req, schemas.document);
        const opts: { versionLabel?: string; metadata?: Array<{ metadataElementId: string; valueId: string }> } = {};
        if (b.versionLabel !== undefined) opts.versionLabel = b.versionLabel;
        if (b.metadata !== undefined) opts.metadata = b.metadata;
        return ok(control.addDocument(b.binderId, b.folderId, b.fileName, contentOf(b), opts));
      },
    ],
    ['GET /documents/:id', async (_r, [id]) => ok(control.getDocument(id!))],
    ['DELETE /documents/:id', async (_r, [id]) => ok(control.deleteDocument(id!))],
    [
      'POST /documents/:id/versions',
      async (req, [id]) => {
        const b = await body(req, schemas.version);
        return ok(control.addVersion(id!, contentOf(b), b.versionLabel !== undefined ? { versionLabel: b.versionLabel } : {}));
      },
    ],
    ['GET /documents/:id/versions', async (_r, [id]) => ok(control.listVersions(id!))],
    [
      'GET /documents/:id/content',
      async (_r, [id], url) => {
        const bytes = control.readContent(id!, url.searchParams.get('versionId') ?? undefined);
        return { kind: 'json', status: 200, body: { contentBase64: bytes.toString('base64'), size: bytes.length } };
      },
    ],
    ['POST /documents/:id/rename', async (req, [id]) => ok(control.renameDocument(id!, (await body(req, schemas.fileName)).fileName))],
    ['POST /documents/:id/move', async (req, [id]) => ok(control.moveDocument(id!, (await body(req, schemas.folderId)).folderId))],
    ['POST /documents/:id/latest', async (req, [id]) => ok(control.makeVersionLatest(id!, (await body(req, schemas.versionId)).versionId))],
    ['POST /faults', async (req) => ok({ faultId: control.injectFault(await body(req, schemas.fault)) })],
    ['DELETE /faults', async () => ok(control.clearFaults())],
    ['POST /ratelimit', async (req) => ok(control.setRateLimit(await body(req, schemas.rateLimit)))],
    ['DELETE /ratelimit', async () => ok(control.setRateLimit(null))],
    ['POST /search-lag', async (req) => ok(control.setSearchLag((await body(req, schemas.searchLag)).ms))],
    ['POST /search-shuffled', async (req) => ok(control.setSearchShuffled((await body(req, schemas.searchShuffled)).on))],
    ['POST /expire-tokens', async () => ok(control.expireTokens())],
    ['POST /expired-download-links', async (req) => ok(control.expireDownloadLinks((await body(req, schemas.expiredLinks)).documentIds))],
    ['POST /expired-upload-urls', async (req) => ok(control.expireUploadUrls((await body(req, schemas.expiredUploadUrls)).slots))],
    ['GET /counters', async () => ok(control.counters())],
    ['DELETE /counters', async () => ok(control.resetCounters())],
    ['GET /requests', async (_r, _p, url) => ok(control.lastRequests(Number(url.searchParams.get('n') ?? '50')))],
  ];

  return async function handleControl(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const segments = url.pathname.slice(CONTROL_PREFIX.length).split('/').filter(Boolean).map(decodeURIComponent);
    let reply: Reply = problemReply(new HttpProblem(404, `no control route ${req.method} ${url.pathname}`));
    for (const [spec, handler] of routes) {
      const [method, path] = spec.split(' ') as [string, string];
      const pattern = path.split('/').filter(Boolean);
      if (method !== req.method || pattern.length !== segments.length) continue;
      const params: string[] = [];
      if (!pattern.every((p, i) => (p.startsWith(':') ? params.push(segments[i]!) > 0 : p === segments[i]))) continue;
      try {
        reply = await handler(req, params, url);
      } catch (err) {
        reply = problemReply(err instanceof HttpProblem ? err : new HttpProblem(500, (err as Error).message));
      }
      break;
    }
    sendReply(res, reply);
  };
}
