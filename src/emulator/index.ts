// The emulator of the Document and Binder Service: startEmulator() runs the API, the token endpoint,
// storage and the control interface on one 127.0.0.1 port, in-process (tests) or from the CLI.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApiHandlers } from './api-handlers.js';
import { BlobStore } from './blobs.js';
import { createControl, RequestLog } from './control.js';
import { createControlHttp } from './control-http.js';
import { FaultInjector, RateLimiter } from './faults.js';
import { seedDemo } from './seed.js';
import { API_PREFIX, AUTH_PREFIX, createDispatcher, createRouter } from './server.js';
import { Signer } from './signing.js';
import { createStorageHandlers } from './storage-handlers.js';
import { Store } from './store.js';
import { createTokenHandler } from './token-handler.js';
import type { EmulatorControl, EmulatorCredentials, EmulatorOptions, RequestRecord } from './types.js';
import { STORAGE_PREFIX, type ViewContext } from './views.js';

export type {
  EmulatorOptions,
  EmulatorCredentials,
  EmulatorControl,
  Fault,
  RateLimit,
  RequestRecord,
  RouteName,
  DocumentView,
  VersionView,
  FolderView,
  BinderView,
  MetadataElement,
  MetadataValue,
} from './types.js';
export { ROUTE_NAMES } from './types.js';
export { DEPARTMENTS } from './seed.js';

export interface Emulator {
  /** http://127.0.0.1:PORT/api/v1 (the spec's API paths are relative to it). */
  baseUrl: string;
  /** http://127.0.0.1:PORT/auth (POST {authUrl}/connect/token). */
  authUrl: string;
  /** http://127.0.0.1:PORT/storage (presigned URLs point under it). */
  storageUrl: string;
  /** http://127.0.0.1:PORT/_control (the control interface over HTTP). */
  controlUrl: string;
  /** The default tenant: a read/write client and a read-only client. */
  credentials: EmulatorCredentials;
  control: EmulatorControl;
  /** The "Project Atlas" binder id when seeded with 'demo' (also when the seed was loaded from dataDir). */
  demoBinderId: string | undefined;
  close(): Promise<void>;
}

/** Internal extra for the CLI: a callback per finished request. */
export interface EmulatorHooks {
  onRequest?: (r: RequestRecord) => void;
}

export async function startEmulator(opts: EmulatorOptions = {}, hooks: EmulatorHooks = {}): Promise<Emulator> {
  const durable = opts.dataDir !== undefined;
  const root = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'binder-emulator-'));
  mkdirSync(root, { recursive: true });
  const store = new Store(new BlobStore(root, durable), opts.dataDir);
  const signer = new Signer(store.signingKey);
  const faults = new FaultInjector(opts.faultSeed ?? 1);
  const limiter = new RateLimiter();
  const log = new RequestLog();
  // The origin is known only after listen(); views read it through this object.
  const view: ViewContext = {
    signer,
    origin: 'http://127.0.0.1',
    downloadUrlLifetimeMs: (opts.downloadUrlLifetimeSeconds ?? 300) * 1000,
    expiredLinks: null,
    expiredUploadUrls: null,
    topLevelParentId: opts.topLevelParentId ?? 'null',
  };
  const api = createApiHandlers(store, signer, view, {
    bindersShape: opts.bindersShape ?? 'array',
    downloadLinkPaths: opts.downloadLinkPaths ?? ['raw', 'downloadlink'],
    commitSpelling: opts.commitSpelling ?? 'both',
    ignoreUnknownCommitKeys: opts.ignoreUnknownCommitKeys ?? false,
    repeatCommitAnswer: opts.repeatCommitAnswer ?? 'version',
    maxPageSize: opts.maxPageSize,
    defaultPageSize: opts.defaultPageSize ?? 50,
    uploadUrlLifetimeMs: (opts.uploadUrlLifetimeSeconds ?? 3600) * 1000,
    missingDocumentStatus: opts.missingDocumentStatus ?? 404,
  });
  const storage = createStorageHandlers(store, signer);
  const control = createControl(store, view, faults, limiter, log);

  const router = createRouter();
  const a = API_PREFIX;
  router.add('binders', 'GET', `${a}/binders`, api.binders!);
  router.add('metadataelements', 'GET', `${a}/binders/:id/metadataelements`, api.metadataelements!);
  router.add('search', 'POST', `${a}/documents`, api.search!);
  router.add('presignedupload', 'GET', `${a}/documents/uploads/personalstorage/presignedupload`, api.presignedupload!);
  router.add('folders', 'GET', `${a}/documents/drives/:domain/:id`, api.folders!);
  router.add('subfolders', 'GET', `${a}/documents/drives/:domain/:id/:folderId`, api.subfolders!);
  router.add('folderdocuments', 'GET', `${a}/documents/drives/:domain/:id/:folderId/documents`, api.folderdocuments!);
  router.add('commit', 'POST', `${a}/documents/drives/:domain/:id/:folderId/upload`, api.commit!);
  router.add('document', 'GET', `${a}/documents/:documentId`, api.document!);
  router.add('versions', 'GET', `${a}/documents/:documentId/versions`, api.versions!);
  router.add('version', 'GET', `${a}/documents/:documentId/versions/:versionId`, api.version!);
  router.add('downloadlink', 'GET', `${a}/documents/:documentId/versions/:versionId/:suffix(raw|downloadlink)`, api.downloadlink!);
  router.add('token', 'POST', `${AUTH_PREFIX}/connect/token`, createTokenHandler(store, signer, opts.tokenLifetimeSeconds ?? 3600));
  router.add('storage-get', 'GET', `${STORAGE_PREFIX}/blobs/:blobId`, storage.get);
  router.add('storage-put', 'PUT', `${STORAGE_PREFIX}/uploads/:uploadId`, storage.put);

  let demoBinderId: string | undefined;
  if (opts.seed === 'demo') {
    demoBinderId = store.isEmpty
      ? seedDemo(store, control).binderId
      : [...store.binders.values()].find((b) => b.name === 'Project Atlas' && b.tenantId === store.defaultCredentials.tenantId)?.id;
  }

  const dispatch = createDispatcher({
    router,
    log,
    faults,
    limiter,
    compressJson: opts.compressJson ?? false,
    control: createControlHttp(control, () => store.defaultCredentials),
    onRequest: hooks.onRequest,
    onError: (err) => {
      if (!opts.quiet) process.stderr.write(`emulator: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    },
  });
  const server = createServer((req, res) => {
    dispatch(req, res).catch((err: unknown) => {
      if (!opts.quiet) process.stderr.write(`emulator: ${String(err)}\n`);
      res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  view.origin = origin;

  let closed: Promise<void> | undefined;
  return {
    baseUrl: `${origin}${API_PREFIX}`,
    authUrl: `${origin}${AUTH_PREFIX}`,
    storageUrl: `${origin}${STORAGE_PREFIX}`,
    controlUrl: `${origin}/_control`,
    credentials: store.defaultCredentials,
    control,
    demoBinderId,
    close() {
      store.closed = true;
      closed ??= new Promise<void>((resolve) => {
        server.close(() => {
          if (!durable) rmSync(root, { recursive: true, force: true });
          resolve();
        });
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
