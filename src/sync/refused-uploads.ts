// Uploads the service refused for good (a commit answered 400/422: a name or metadata it does not accept), kept
// in the state DB so that neither a daemon restart nor the next `binder-sync sync` (a cron job every few minutes)
// sends the same bytes again: the refusal comes only after the content was PUT, so each try costs the whole
// file. A refusal is forgotten when the file changes (withheldAsRefused compares the content), when the pair's
// config changes (a metadata rule fixed), and after REFUSAL_RETRY_MS (the service's rules may have changed).
import { z } from 'zod';
import type { StateStore } from '../state/store.js';

/** Meta key holding the refusals (JSON, see SavedSchema). */
const REFUSED_UPLOADS = 'refusedUploads';

/** How long a refusal holds back the same content: a day. */
export const REFUSAL_RETRY_MS = 24 * 60 * 60 * 1000;

const RefusalSchema = z.object({ content: z.string(), detail: z.string(), at: z.number() });
export type Refusal = z.infer<typeof RefusalSchema>;

/** As stored: the config the refusals were made under, and the refusals by path key. */
const SavedSchema = z.object({ config: z.string(), byKey: z.record(z.string(), RefusalSchema) });

/**
 * The refusals saved for this config that are younger than REFUSAL_RETRY_MS at `now` (ms). A damaged value, or
 * one saved under another config, is no refusal at all: the files are simply tried again.
 */
export function loadRefusedUploads(store: StateStore, config: string, now: number): Map<string, Refusal> {
  const raw = store.getMeta(REFUSED_UPLOADS);
  if (raw === undefined || raw === '') return new Map();
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return new Map();
  }
  const saved = SavedSchema.safeParse(json);
  if (!saved.success || saved.data.config !== config) return new Map();
  return new Map(Object.entries(saved.data.byKey).filter(([, r]) => isCurrent(r, now)));
}

/** Drops the refusals older than REFUSAL_RETRY_MS at `now`; returns whether any was dropped. */
export function expireRefusals(refused: Map<string, Refusal>, now: number): boolean {
  let dropped = false;
  for (const [key, r] of refused) {
    if (isCurrent(r, now)) continue;
    refused.delete(key);
    dropped = true;
  }
  return dropped;
}

export function saveRefusedUploads(store: StateStore, config: string, refused: ReadonlyMap<string, Refusal>): void {
  if (refused.size === 0) store.deleteMeta(REFUSED_UPLOADS);
  else store.setMeta(REFUSED_UPLOADS, JSON.stringify({ config, byKey: Object.fromEntries(refused) }));
}

/** A clock set back (at in the future) counts as current only within the retry period too. */
function isCurrent(r: Refusal, now: number): boolean {
  return Math.abs(now - r.at) < REFUSAL_RETRY_MS;
}
