// Response schemas: required fields sync depends on, tolerance of extra/optional/null fields, both binder shapes.
import { describe, expect, it } from 'vitest';
import {
  BinderListSchema,
  DocumentSchema,
  DocumentVersionSchema,
  FolderSchema,
  SearchPageSchema,
  TokenResponseSchema,
  PresignedUploadSchema,
  DownloadLinkSchema,
  MetadataElementSchema,
} from '../../src/service/schemas.js';

const doc = { id: 'd1', fileName: 'a.txt', folderId: 'f1', binderId: 'b', metadata: [{ metadataElementId: 'GLOBAL_TabId', valueId: 'f1' }], latestVersionId: 'v1' };

describe('service schemas', () => {
  it('accepts both binder list shapes', () => {
    const b = { id: 'abcdefghi', name: 'Atlas', type: 'Project', createdAt: '2026-01-01T00:00:00Z' };
    expect(BinderListSchema.parse([b])).toEqual([b]);
    expect(BinderListSchema.parse({ items: [b], totalCount: 1 })).toEqual([b]);
    expect(BinderListSchema.parse({ items: [{ id: 'x', name: 'n' }] })).toEqual([{ id: 'x', name: 'n' }]);
    expect(BinderListSchema.safeParse({ binders: [b] }).success).toBe(false);
  });

  it('strips extra fields and reads null optional fields as absent', () => {
    const v = DocumentVersionSchema.parse({ id: 'v', documentId: 'd', version: '1', thumbnailUrl: null, description: null, extra: 1 });
    expect(v).toEqual({ id: 'v', documentId: 'd', version: '1' });
    expect(v.thumbnailUrl).toBeUndefined();
    expect(FolderSchema.parse({ id: 'f', name: 'Tab', parentId: null })).toEqual({ id: 'f', name: 'Tab' });
  });

  it('requires the fields sync depends on', () => {
    expect(DocumentSchema.parse(doc)).toEqual(doc);
    for (const k of ['id', 'fileName', 'folderId', 'latestVersionId'] as const) {
      const { [k]: _, ...rest } = doc;
      expect(DocumentSchema.safeParse(rest).success, k).toBe(false);
    }
    expect(DocumentVersionSchema.safeParse({ id: 'v' }).success).toBe(false);
    expect(PresignedUploadSchema.safeParse({ presignedUrl: 'http://x' }).success).toBe(false);
    expect(DownloadLinkSchema.safeParse({ expiresAt: 'x' }).success).toBe(false);
    expect(DocumentSchema.safeParse({ ...doc, id: 42 }).success).toBe(false);
  });

  it('search page: items and integer totalCount >= 0 required, paging fields optional', () => {
    // A search hit keeps the fields a listing uses; metadata is dropped unread (see SearchItemSchema).
    const { metadata: _unused, ...hit } = doc;
    expect(SearchPageSchema.parse({ items: [doc], totalCount: 1 })).toEqual({ items: [hit], totalCount: 1 });
    expect(SearchPageSchema.parse({ items: [{ ...hit, binderId: null }], totalCount: 1 }).items[0]?.binderId).toBeNull();
    for (const missing of ['id', 'fileName', 'folderId', 'latestVersionId'] as const) {
      const { [missing]: _gone, ...partial } = hit;
      expect(SearchPageSchema.safeParse({ items: [partial], totalCount: 1 }).success).toBe(false);
      // Ids must not be empty; an empty fileName is a string like any other (spec 2.4), mapped to '_' locally.
      expect(SearchPageSchema.safeParse({ items: [{ ...hit, [missing]: '' }], totalCount: 1 }).success).toBe(missing === 'fileName');
    }
    expect(SearchPageSchema.safeParse({ items: [doc] }).success).toBe(false);
    expect(SearchPageSchema.safeParse({ items: [], totalCount: -1 }).success).toBe(false);
    expect(SearchPageSchema.safeParse({ items: [], totalCount: 1.5 }).success).toBe(false);
    expect(SearchPageSchema.safeParse({ totalCount: 0 }).success).toBe(false);
  });

  it('token response: access_token and expires_in (number or numeric string; absent is allowed, RFC 6749 5.1)', () => {
    expect(TokenResponseSchema.parse({ access_token: 't', expires_in: 3600, token_type: 'Bearer' }).expires_in).toBe(3600);
    expect(TokenResponseSchema.parse({ access_token: 't', expires_in: '60' }).expires_in).toBe(60);
    expect(TokenResponseSchema.parse({ access_token: 't' }).expires_in).toBeUndefined();
    expect(TokenResponseSchema.parse({ access_token: 't', expires_in: null }).expires_in).toBeUndefined();
    expect(TokenResponseSchema.safeParse({ access_token: 't', expires_in: -5 }).success).toBe(false);
    expect(TokenResponseSchema.safeParse({ access_token: 't', expires_in: 'soon' }).success).toBe(false);
    expect(TokenResponseSchema.safeParse({ expires_in: 60 }).success).toBe(false);
    expect(TokenResponseSchema.safeParse({ access_token: '', expires_in: 1 }).success).toBe(false);
  });

  it('metadata elements keep allowed values and tolerate missing optional fields', () => {
    expect(MetadataElementSchema.parse({ id: 'Department', allowedValues: [{ id: 'eng', label: 'Engineering' }], required: true })).toEqual({
      id: 'Department',
      allowedValues: [{ id: 'eng', label: 'Engineering' }],
      required: true,
    });
  });
});
