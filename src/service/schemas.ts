// zod schemas for every service response (spec section 2): the types the rest of binder-sync uses are z.infer
// of these. Fields sync depends on are required; other spec fields are optional/nullish; extra keys are stripped.
import { z } from 'zod';

/** Optional spec fields: a server may omit them or send null; both read as "absent" (an optional key). */
const opt = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === null ? undefined : v), schema.optional());

const nonEmptyId = z.string().min(1);

/** Metadata value on a document or version. The spec says {metadataElementId, valueId}; free-form values may carry `value`. */
export const MetadataValueSchema = z.object({
  metadataElementId: z.string(),
  valueId: opt(z.string()),
  value: opt(z.string()),
});

export const BinderSchema = z.object({
  id: nonEmptyId,
  name: z.string(),
  type: opt(z.string()),
  createdAt: opt(z.string()),
});

/** GET /binders: the reference shows a bare array, the quickstart reads {items: [...]} (spec 4.1); accept both. */
export const BinderListSchema = z.union([
  z.array(BinderSchema),
  z.object({ items: z.array(BinderSchema) }).transform((o) => o.items),
]);

export const AllowedValueSchema = z.object({ id: z.string(), label: opt(z.string()) });

export const MetadataElementSchema = z.object({
  id: nonEmptyId,
  label: opt(z.string()),
  dataType: opt(z.string()),
  allowedValues: opt(z.array(AllowedValueSchema)),
  required: opt(z.boolean()),
});

export const FolderSchema = z.object({
  id: nonEmptyId,
  name: z.string(),
  type: opt(z.string()),
  // Top-level tabs have no parent folder: a server may omit parentId, send null, or send the drive id.
  parentId: opt(z.string()),
});

/**
 * Spec 2.4 says only that fileName is a string. An empty one is taken as sent (remote/names.ts maps it to '_'
 * locally) rather than refused: refusing it would fail every page that holds it, and with it every listing of
 * the binder.
 */
const FileNameSchema = z.string();

export const DocumentSchema = z.object({
  id: nonEmptyId,
  fileName: FileNameSchema,
  folderId: nonEmptyId,
  binderId: opt(z.string()),
  metadata: opt(z.array(MetadataValueSchema)),
  latestVersionId: nonEmptyId,
});

export const DocumentVersionSchema = z.object({
  id: nonEmptyId,
  // Required: a commit that created a new document tells us its id only here.
  documentId: nonEmptyId,
  /** The version label (spec 2.5 `version`); optional because sync can live without it. */
  version: opt(z.string()),
  status: opt(z.string()),
  modifiedAt: opt(z.string()),
  description: opt(z.string()),
  metadata: opt(z.array(MetadataValueSchema)),
  downloadUrl: opt(z.string()),
  thumbnailUrl: opt(z.string()),
});

/**
 * A version as read from GET .../versions and .../versions/{versionId}: the spec lists documentId (2.5) but a
 * server may leave it out there, where the path names the document anyway; the client fills it from the path.
 */
export const VersionItemSchema = DocumentVersionSchema.extend({ documentId: opt(nonEmptyId) });

/**
 * A search hit: the Document fields a listing uses, validated as strictly as DocumentSchema; the rest
 * (metadata) is dropped unread. A daemon re-reads every page of the binder on each poll (100k documents
 * = 40 MB of JSON), so this schema avoids per-item preprocessing and nested arrays.
 */
export const SearchItemSchema = z.object({
  id: nonEmptyId,
  fileName: FileNameSchema,
  folderId: nonEmptyId,
  // null or absent: the server did not say (the document is taken as this binder's, like DocumentSchema's).
  binderId: z.string().nullish(),
  latestVersionId: nonEmptyId,
});

/** Search result page; pageNumber/pageSize may be absent and then fall back to the requested ones. */
export const SearchPageSchema = z.object({
  items: z.array(SearchItemSchema),
  totalCount: z.number().int().nonnegative(),
  pageNumber: opt(z.number().int()),
  pageSize: opt(z.number().int()),
});

export const DownloadLinkSchema = z.object({
  url: z.string().min(1),
  expiresAt: opt(z.string()),
});

export const PresignedUploadSchema = z.object({
  presignedUrl: z.string().min(1),
  uploadId: nonEmptyId,
});

/**
 * expires_in is an integer per spec 5.2; a numeric string is tolerated (some identity providers send one). Its
 * absence is tolerated too: OAuth 2.0 (RFC 6749 5.1) only recommends it, so the token is then taken to live
 * DEFAULT_TOKEN_LIFETIME_S (token.ts), and a 401 before that refreshes it anyway. A negative lifetime is refused.
 */
export const TokenResponseSchema = z.object({
  access_token: z.string().min(1),
  expires_in: opt(z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)]).pipe(z.number().nonnegative())),
  token_type: opt(z.string()),
});

export type MetadataValue = z.infer<typeof MetadataValueSchema>;
export type Binder = z.infer<typeof BinderSchema>;
export type MetadataElement = z.infer<typeof MetadataElementSchema>;
export type Folder = z.infer<typeof FolderSchema>;
export type Document = z.infer<typeof DocumentSchema>;
export type DocumentVersion = z.infer<typeof DocumentVersionSchema>;
export type VersionItem = z.infer<typeof VersionItemSchema>;
export type SearchItem = z.infer<typeof SearchItemSchema>;
export type SearchPage = z.infer<typeof SearchPageSchema>;
export type DownloadLink = z.infer<typeof DownloadLinkSchema>;
export type PresignedUpload = z.infer<typeof PresignedUploadSchema>;
export type TokenResponse = z.infer<typeof TokenResponseSchema>;
