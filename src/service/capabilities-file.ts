// What a server was found to speak where the spec shows two spellings (download-link suffix 4.13, commit body
// 4.9), kept in the stateDir between processes. Without it every `binder-sync sync` (a cron job) met a strict
// server's 404 at /raw and its 400 for the two-spelling commit body once more before it found its way. The
// file holds hints, not facts: the client tries the remembered spelling first and still falls back to the
// others when it is refused (a server upgraded to the other spelling), then remembers what worked instead.
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/** Commit body spellings (spec 4.9): both at once, the reference table's, the walkthrough's. */
const CommitSpellingSchema = z.enum(['both', 'reference', 'walkthrough']);
export type CommitSpelling = z.infer<typeof CommitSpellingSchema>;

export const ServiceCapabilitiesSchema = z.object({
  /** Which download-link suffix the server has; null until the first link was fetched. */
  downloadLinkSuffix: z.enum(['raw', 'downloadlink']).nullable(),
  /**
   * Which commit body spelling the server accepted: 'both' (one body carrying both spellings), 'reference' or
   * 'walkthrough'; null until the first commit succeeded.
   */
  commitSpelling: CommitSpellingSchema.nullable(),
});
export type ServiceCapabilities = z.infer<typeof ServiceCapabilitiesSchema>;

const CapabilitiesFileSchema = ServiceCapabilitiesSchema.extend({
  /** Which service they were learned from (API address and tenant): another one starts without hints. */
  service: z.string(),
});

export const CAPABILITIES_FILE = 'service-capabilities.json';

/** The hints saved for `service` in `stateDir`; none when the file is missing, damaged or about another service. */
export function readCapabilities(stateDir: string, service: string): Partial<ServiceCapabilities> {
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(path.join(stateDir, CAPABILITIES_FILE), 'utf8'));
  } catch {
    return {};
  }
  const parsed = CapabilitiesFileSchema.safeParse(raw);
  if (!parsed.success || parsed.data.service !== service) return {};
  const { downloadLinkSuffix, commitSpelling } = parsed.data;
  return { ...(downloadLinkSuffix ? { downloadLinkSuffix } : {}), ...(commitSpelling ? { commitSpelling } : {}) };
}

/**
 * Saves what `service` was found to speak. A temp file renamed over the old one, owner-only: a crash leaves the
 * old file or the new one, and a damaged file only costs the probes it saves. Throws on a file system error.
 */
export function writeCapabilities(stateDir: string, service: string, caps: ServiceCapabilities): void {
  const file = path.join(stateDir, CAPABILITIES_FILE);
  const temp = `${file}.${process.pid}.tmp`;
  const body: z.infer<typeof CapabilitiesFileSchema> = { service, ...caps };
  try {
    fs.writeFileSync(temp, `${JSON.stringify(body)}\n`, { mode: 0o600 });
    fs.renameSync(temp, file);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
}
