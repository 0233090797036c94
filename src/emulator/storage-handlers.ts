// The storage side ({storage_url}): presigned GET of blobs and one-shot presigned PUT of uploads.
// Storage is not the API: it refuses any Authorization header (400), so a client leaking its token is caught.
import type { IncomingMessage } from 'node:http';
import { HttpProblem, type Reply } from './http-util.js';
import type { Signer } from './signing.js';
import type { Store } from './store.js';
import type { Handler, Params } from './api-handlers.js';

function checkRequest(req: IncomingMessage, signer: Signer, method: 'GET' | 'PUT', url: URL): void {
  if (req.headers.authorization !== undefined) {
    throw new HttpProblem(400, 'storage requests must not carry an Authorization header', {
      errors: { authorization: ['Presigned URLs are called without the Authorization header.'] },
    });
  }
  const check = signer.checkPresigned(method, url.pathname, url.searchParams, Date.now());
  if (check === 'expired') throw new HttpProblem(403, 'this presigned URL has expired');
  if (check !== 'ok') throw new HttpProblem(403, 'the presigned URL signature is not valid');
}

export function createStorageHandlers(store: Store, signer: Signer): { get: Handler; put: Handler } {
  return {
    async get(req: IncomingMessage, p: Params, url: URL): Promise<Reply> {
      checkRequest(req, signer, 'GET', url);
      const blobId = p.blobId!;
      if (!store.blobs.exists(blobId)) throw new HttpProblem(404, 'blob not found');
      const { size } = await import('node:fs/promises').then((fs) => fs.stat(store.blobs.path(blobId)));
      return { kind: 'file', status: 200, path: store.blobs.path(blobId), size };
    },

    async put(req: IncomingMessage, p: Params, url: URL): Promise<Reply> {
      checkRequest(req, signer, 'PUT', url);
      const upload = store.uploads.get(p.uploadId!);
      if (!upload) throw new HttpProblem(404, 'upload not found');
      // One PUT per uploadId (spec 3 and 8). A PUT that broke off also spends the slot: the client must ask
      // for a new presigned upload, which is the strictest reading of "exactly one PUT".
      if (upload.state !== 'issued') throw new HttpProblem(409, 'this presigned upload URL was already used');
      const blobType = req.headers['x-ms-blob-type'];
      // Spec 4.8: included "for a blob-storage target": accepted when present, not required.
      if (blobType !== undefined && blobType !== 'BlockBlob') {
        throw new HttpProblem(400, 'x-ms-blob-type must be BlockBlob', { errors: { 'x-ms-blob-type': ['Only BlockBlob is supported.'] } });
      }
      const lengthHeader = req.headers['content-length'];
      const expected = lengthHeader === undefined ? undefined : Number(lengthHeader);
      // Persisted before streaming: if the process stops mid-PUT, the restart sees 'receiving' and spends the slot.
      upload.state = 'receiving';
      store.changed();
      try {
        upload.size = await store.blobs.receive(req, upload.blobId, expected);
      } catch (err) {
        upload.state = 'failed';
        store.changed();
        throw new HttpProblem(400, `the upload broke off: ${(err as Error).message}`);
      }
      upload.state = 'stored';
      store.changed();
      return { kind: 'empty', status: 201, headers: { etag: `"${upload.blobId}"` } };
    },
  };
}
