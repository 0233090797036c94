// zod schemas of the request bodies the emulator accepts, strict: unknown keys are a 400 with `errors`.
// Bodies are checked exactly as the spec spells them (MetadataFilters / SortBy with capital letters).
import { z } from 'zod';
import type { FieldErrors } from './http-util.js';

const nonEmpty = z.string().min(1);

export const searchBodySchema = z.strictObject({
  MetadataFilters: z
    .array(
      z
        .strictObject({ metadataElementId: nonEmpty, valueId: z.string().optional(), value: z.string().optional() })
        .refine((f) => (f.valueId === undefined) !== (f.value === undefined), { message: 'Give exactly one of valueId and value.' }),
    )
    .optional(),
  SortBy: z.array(z.strictObject({ metadataElementId: nonEmpty, direction: z.enum(['asc', 'desc']) })).optional(),
});
export type SearchBody = z.infer<typeof searchBodySchema>;

/** The reference spelling (spec 4.9 table). additionalMetadata is listed without "optional": required, may be []. */
export const referenceCommitSchema = z.strictObject({
  fileName: nonEmpty,
  version: nonEmpty,
  uploadId: nonEmpty,
  additionalMetadata: z.array(z.strictObject({ metadataElementId: nonEmpty, value: z.string() })),
});

/** The walkthrough spelling: versionLabel, and metadata with valueIds, optional. */
export const walkthroughCommitSchema = z.strictObject({
  fileName: nonEmpty,
  versionLabel: nonEmpty,
  uploadId: nonEmpty,
  metadata: z.array(z.strictObject({ metadataElementId: nonEmpty, valueId: z.string() })).optional(),
});

export const tokenRequestSchema = z.object({
  grant_type: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  scope: z.string().optional(),
});

/** Field -> messages, in the shape of an ASP.NET validation problem. */
export function fieldErrors(error: z.ZodError): FieldErrors {
  const out: FieldErrors = {};
  const add = (key: string, msg: string) => {
    (out[key] ??= []).push(msg);
  };
  for (const issue of error.issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) add(base ? `${base}.${k}` : k, 'Unknown field.');
    } else {
      add(base || '$', issue.message);
    }
  }
  return out;
}
