// A small record kept as JSON under one key of the state DB's meta table (followed folders, restored versions,
// waiting moves): read with its schema, a damaged or missing one read as empty (such records only add knowledge,
// so losing one costs what the pass would have done without it), written only when it changed, removed when empty.
import type { z } from 'zod';
import type { StateStore } from './store.js';

/** The record under `key`, or {} when there is none or it does not parse as `schema`. */
export function readMetaRecord<T extends Record<string, unknown>>(store: StateStore, key: string, schema: z.ZodType<T>): T {
  const raw = store.getMeta(key);
  if (raw === undefined || raw === '') return {} as T;
  try {
    const parsed = schema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : ({} as T);
  } catch {
    return {} as T;
  }
}

/** Stores `record` under `key`: deleted when empty, written only when it differs from what is there. */
export function writeMetaRecord(store: StateStore, key: string, record: Record<string, unknown>): void {
  const saved = store.getMeta(key);
  if (Object.keys(record).length === 0) {
    if (saved !== undefined) store.deleteMeta(key);
    return;
  }
  const text = JSON.stringify(record);
  if (text !== saved) store.setMeta(key, text);
}
