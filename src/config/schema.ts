// The config file's zod schema: the single source of the config types (ConfigFile = what a user writes,
// Config = what the daemon gets: defaults filled in, durations in ms, paths absolute, secret read).
import { z } from 'zod';
import type { ConflictPolicy, Direction, LocalDeletePolicy } from '../sync/model.js';
import { BYTE_RATE_PATTERN, formatByteRate, parseByteRate } from './byte-rate.js';
import { DURATION_PATTERN, formatDuration, parseDuration } from './duration.js';
import { globProblem } from '../local/glob.js';

export const DIRECTIONS = ['both', 'download', 'upload'] as const satisfies readonly Direction[];
export const CONFLICT_POLICIES = ['keep-both', 'remote-wins', 'local-wins'] as const satisfies readonly ConflictPolicy[];
export const LOCAL_DELETE_POLICIES = ['restore', 'forget'] as const satisfies readonly LocalDeletePolicy[];
export const WATCHERS = ['auto', 'chokidar', 'folders', 'native', 'off'] as const;
export const VERSION_LABEL_SCHEMES = ['integer', 'timestamp'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Pair names become file names in stateDir, so they are restricted to a portable, safe alphabet. */
export const PAIR_NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
export const DEFAULT_STATE_DIR = './state';

/** Schema-level message that leaves "missing" to the generic message ("is required"). */
const unlessMissing = (message: string) => (iss: { input?: unknown }) => (iss.input === undefined ? undefined : message);

const nonEmpty = () => z.string().regex(/\S/, { error: 'must not be empty' });

/**
 * A path. `localPath: ~` is YAML's null, not the home folder (nor is an empty value a path): said so, with what to
 * write instead, where "must be a string (got null)" left it a puzzle (black-box round 30b, F11).
 */
const pathValue = () =>
  z
    .string({ error: (iss) => (iss.input === null ? "must be a string (got null: a bare ~, like an empty value, is YAML's null; write ~/ for the home folder, or a full path)" : undefined) })
    .regex(/\S/, { error: 'must not be empty' });

const httpUrl = () =>
  z
    .string({ error: (iss) => (iss.input === undefined ? undefined : `must be an http(s) URL (got ${iss.input === null ? 'null' : `a ${typeof iss.input}`})`) })
    // The value is echoed (as other messages do) with any user:password@ part masked: it may hold a secret.
    .refine((s) => isHttpUrl(s), { error: (iss) => `must be an http(s) URL (got "${shownUrl(String(iss.input))}")`, abort: true })
    // The service authenticates with client credentials (spec 5). A password in the address would be written
    // wherever the address is (the state DB says which service a pair synced with, logs name the host), so it
    // is refused rather than carried along (black-box round 22, K4).
    .refine((s) => !hasUserInfo(s), {
      error: 'must not carry a user name or password (user:password@host): the service takes clientId and clientSecret',
      abort: true,
    })
    // Paths are appended to the address ('/connect/token', '/binders'): a query string or fragment would end up in
    // front of them, and requests went to the wrong place under a misleading message (black-box round 33a, F2).
    .refine((s) => !hasQueryOrFragment(s), {
      error: "must not carry a query string or fragment (?... or #...): the request paths are appended to it",
      abort: true,
    })
    // Trailing slashes are dropped so that callers can always append '/path'.
    .transform((s) => s.trim().replace(/\/+$/, ''));

/** A refused address as a message may show it: user information masked, long values cut. */
function shownUrl(s: string): string {
  // Everything up to the last '@' is masked: a password may hold an unencoded @ / # ?, and a mask that stopped at
  // the first of them printed the rest (black-box round 42b, F3). An '@' in a path hides a little more than needed.
  // So is one typed as a fullwidth '＠' or percent-encoded ('%40', '%2540'): no user info to a URL parser, but a
  // password in front of it all the same (black-box round 43a, notes).
  let at = -1;
  let after = 0;
  for (const m of s.matchAll(/@|\uFF20|%(?:25)*40/gi)) {
    at = m.index;
    after = m.index + m[0].length;
  }
  const scheme = /^\s*[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(s)?.[0] ?? '';
  const masked = at < 0 ? s : `${scheme}***@${s.slice(after)}`;
  return masked.length > 120 ? `${masked.slice(0, 117)}...` : masked;
}

function hasUserInfo(s: string): boolean {
  try {
    const u = new URL(s.trim());
    return u.username !== '' || u.password !== '';
  } catch {
    return false;
  }
}

function hasQueryOrFragment(s: string): boolean {
  try {
    const u = new URL(s.trim());
    return u.search !== '' || u.hash !== '' || /[?#]/.test(s.trim());
  } catch {
    return false;
  }
}

function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s.trim());
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/** A duration (number of seconds or '90s'/'5m'/'1h'/'250ms') resolved to milliseconds, within [minMs, maxMs]. */
const DURATION_MESSAGE = "must be a duration: seconds as a number, or a string like '90s', '5m', '1h', '250ms'";
/** What is wrong with a value that is not a duration: a negative one says so ('-5s' read as a typo of a unit). */
const durationProblem = (input: unknown): string => {
  const shown = typeof input === 'string' ? `"${input.length > 40 ? `${input.slice(0, 37)}...` : input}"` : String(input);
  return /^\s*-/.test(String(input)) ? `must not be negative (got ${shown})` : `${DURATION_MESSAGE} (got ${shown})`;
};
const duration = (minMs: number, maxMs: number) =>
  z
    .union([z.number(), z.string().regex(new RegExp(DURATION_PATTERN), { error: (iss) => durationProblem(iss.input) })], {
      error: unlessMissing(DURATION_MESSAGE),
    })
    .transform((v, ctx) => {
      const ms = parseDuration(v);
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: durationProblem(v) });
        return z.NEVER;
      }
      if (ms < minMs || ms > maxMs) {
        ctx.addIssue({ code: 'custom', message: `must be between ${formatDuration(minMs)} and ${formatDuration(maxMs)} (got ${formatDuration(ms)})` });
        return z.NEVER;
      }
      return ms;
    });

/** A transfer rate limit (bytes/s as a number, or '10MiB/s', '500K', '2MB/s'), resolved to bytes per second. */
const RATE_MESSAGE = "must be a rate: bytes per second as a number, or a string like '500KiB/s', '10M', '2MB/s'";
const MIN_RATE = 16 * 1024;
const MAX_RATE = 1024 ** 4;
const byteRate = () =>
  z
    .union([z.number(), z.string().regex(new RegExp(BYTE_RATE_PATTERN), { error: RATE_MESSAGE })], { error: unlessMissing(RATE_MESSAGE) })
    .transform((v, ctx) => {
      const rate = parseByteRate(v);
      if (rate === null) {
        ctx.addIssue({ code: 'custom', message: RATE_MESSAGE });
        return z.NEVER;
      }
      // Below this a 60 s request timeout could pass between two chunks of one transfer.
      if (rate < MIN_RATE) {
        ctx.addIssue({ code: 'custom', message: `must be at least ${formatByteRate(MIN_RATE)} (got ${formatByteRate(rate)})` });
        return z.NEVER;
      }
      // Above this it is no cap at all (and past 2^53 not even a number of bytes): leave the key out instead.
      if (rate > MAX_RATE) {
        ctx.addIssue({ code: 'custom', message: `must be at most ${formatByteRate(MAX_RATE)}; leave the key out for no cap` });
        return z.NEVER;
      }
      return rate;
    });

const serviceSchema = z
  .strictObject({
    baseUrl: httpUrl().describe('Base address of the API; every API path is relative to it.'),
    authUrl: httpUrl().describe('Base address of the identity provider (POST {authUrl}/connect/token).'),
    tenantId: nonEmpty().describe('Organization id, sent on every request in the tenant header.'),
    clientId: nonEmpty().describe('OAuth client id.'),
    clientSecret: nonEmpty().optional().describe('OAuth client secret. Prefer ${ENV_VAR} or clientSecretFile; exactly one of the two.'),
    clientSecretFile: pathValue()
      .optional()
      .describe('File holding the client secret (relative to the config file; trailing newline ignored).'),
    tenantHeader: z
      .string()
      .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, { error: 'must be an HTTP header name' })
      .default('x-service-tenantid')
      .describe('Name of the tenant header.'),
    scope: nonEmpty().default('service_public').describe('OAuth scope requested with the token.'),
    maxConcurrentRequests: z.number().int().min(1).max(64).default(8).describe('API requests in flight at once.'),
    requestsPerSecond: z.number().gt(0).max(1000).default(100).describe('Upper bound on API requests per second.'),
    maxConcurrentTransfers: z.number().int().min(1).max(32).default(4).describe('Uploads/downloads of content at once.'),
    maxUploadRate: byteRate().optional().describe("Upper bound on the bytes per second sent to storage, all uploads together (e.g. '2MiB/s'; unlimited when unset)."),
    maxDownloadRate: byteRate().optional().describe("Upper bound on the bytes per second read from storage, all downloads together (e.g. '10MiB/s'; unlimited when unset)."),
    requestTimeout: duration(1000, 3_600_000).prefault('60s').describe('Timeout of one API request: for its headers, and for each 1 KiB of its answer (the whole answer gets at most ten times it); for a storage transfer, of a pause in it.'),
  })
  .describe('How to reach and authenticate with the Document and Binder Service.');

/** A glob as compileGlob reads it; one it would take literally by accident (an unclosed '[') is refused. */
const glob = () => nonEmpty().superRefine((g, ctx) => {
  const problem = globProblem(g);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
});

const metadataRuleSchema = z.strictObject({
  match: glob().describe('Glob (relative to the pair root) of the files this rule applies to.'),
  values: z
    // An empty value says nothing (and a required element "given" one is not given at all): refused.
    .record(nonEmpty(), z.union([z.string().refine((v) => v.trim() !== '', { error: 'must not be empty' }), z.number(), z.boolean()]).transform(String))
    .refine((r) => Object.keys(r).length > 0, { error: 'must set at least one metadata value' })
    .describe('Metadata element (id or label) -> value (value id or label).'),
});

const pairSchema = z.strictObject({
  name: z
    .string()
    .regex(PAIR_NAME_PATTERN, { error: 'must be 1-64 characters from A-Z a-z 0-9 . _ -' })
    .refine((s) => !/^\.+$/.test(s), { error: 'must not consist of dots only' })
    .describe('Unique name of the pair; used for its state files.'),
  localPath: pathValue().describe('Local directory to sync (relative to the config file; ~/ allowed).'),
  binderId: nonEmpty().describe('Id of the binder to sync with.'),
  direction: z.enum(DIRECTIONS).default('both').describe('both, download (remote -> local only) or upload (local -> remote only).'),
  conflictPolicy: z
    .enum(CONFLICT_POLICIES)
    .default('keep-both')
    .describe('When both sides changed: keep-both (local copy renamed), remote-wins or local-wins.'),
  localDeletePolicy: z
    .enum(LOCAL_DELETE_POLICIES)
    .default('restore')
    .describe('A locally deleted file cannot be deleted remotely: restore it, or forget it.'),
  maxDeleteShare: z
    // A share, not a percentage: "150%" said only "must be a number" (black-box round 40c).
    .number({ error: (iss) => (typeof iss.input === 'string' ? `must be a number above 0 and at most 1, a share of the synced files (0.25 for 25%; got "${iss.input}")` : undefined) })
    .gt(0)
    .max(1)
    .default(0.5)
    .describe('A pass stops when it would trash more than this share of the local files (0 < x <= 1).'),
  ignore: z.array(glob()).default([]).describe('Globs of local paths never synced.'),
  pollInterval: duration(5000, 86_400_000).prefault('60s').describe('How often the remote side is listed.'),
  pollCpuBudget: z
    .number()
    .min(0)
    .max(100)
    .default(1)
    .describe(
      'Most CPU (percent of one core) quiet polls may use: when listing the binder costs more than this share of pollInterval, polls are spaced out (at most 5x pollInterval). 0 = poll every pollInterval regardless.',
    ),
  fullRescanInterval: duration(60_000, 7 * 86_400_000).prefault('1h').describe('How often the whole local tree is rescanned.'),
  quietPeriod: duration(0, 600_000)
    .prefault('1s')
    .describe(
      'How long a changed local file must stay unchanged before the daemon uploads it, and a deleted one stay missing before it is restored (editors that save by rename-away, rename-in). Raise it where writers pause mid-file (tar or cp over a slow network mount): a pause longer than this uploads the part written so far, then the whole file as the next version. Temp files of rsync, sed -i, mktemp, Excel, Python tempfile and GLib (by their names) always wait a minute.',
    ),
  watcher: z.enum(WATCHERS).default('auto').describe('Local change detection: auto (the folders backend), folders (one fs.watch per folder), chokidar, native (@parcel/watcher) or off (rescans only).'),
  trashRetentionDays: z.number().int().min(1).max(3650).default(30).describe('Days replaced/removed local files stay in the trash (and conflicts in the history status lists).'),
  versionLabel: z
    .strictObject({
      scheme: z
        .enum(VERSION_LABEL_SCHEMES)
        .default('integer')
        .describe('integer: the next integer above the highest numeric label (digits, or a decimal such as 2.9: 3 next; a timestamp when there is none); timestamp: always a timestamp.'),
    })
    .prefault({})
    .describe('Labels given to uploaded versions.'),
  metadata: z.array(metadataRuleSchema).default([]).describe('Metadata attached to uploads; rules apply in order, later ones override.'),
  // 1000, the largest page the spec calls fast: half the requests of 500, and ~15% less CPU per quiet poll of
  // 100k documents (bench/tools/idle-lab.ts poll rounds, 380-501 vs 482-542 ms). A server that answers with
  // smaller pages is followed (remote/listing.ts).
  pageSize: z.number().int().min(1).max(1000).default(1000).describe('Page size of the remote document search.'),
});

export const configFileSchema = z
  .strictObject({
    service: serviceSchema,
    stateDir: pathValue().default(DEFAULT_STATE_DIR).describe('Directory of the state databases (relative to the config file).'),
    log: z
      .strictObject({ level: z.enum(LOG_LEVELS).default('info').describe('Log level.') })
      .prefault({})
      .describe('Logging.'),
    metrics: z
      .strictObject({
        port: z.number().int().min(1).max(65535).optional().describe('Serve Prometheus metrics on this port (off when unset).'),
        host: nonEmpty().default('127.0.0.1').describe('Address the metrics endpoint listens on.'),
      })
      .prefault({})
      .describe('Optional metrics endpoint.'),
    pairs: z.array(pairSchema).min(1).describe('Local directory <-> binder pairs to keep in sync.'),
  })
  .meta({ title: 'binder-sync configuration' });

/** What a user writes in the YAML file. */
export type ConfigFile = z.input<typeof configFileSchema>;
/** The schema's output before paths and the secret are resolved. */
export type ParsedConfigFile = z.output<typeof configFileSchema>;

/** Service settings with the secret resolved (from clientSecret or the clientSecretFile contents). */
export type ServiceConfig = Omit<ParsedConfigFile['service'], 'clientSecret' | 'clientSecretFile'> & {
  clientSecret: string;
  /** Absolute path the secret was read from, or null when it was given inline. */
  clientSecretFile: string | null;
  /** The environment variables clientSecret was written as (`${BINDER_SYNC_CLIENT_SECRET}`); empty for a literal or a file. */
  clientSecretEnv: string[];
};

/**
 * The resolved config. Durations (requestTimeout, pollInterval, fullRescanInterval) are milliseconds;
 * stateDir, localPath and clientSecretFile are absolute paths.
 */
export type Config = Omit<ParsedConfigFile, 'service'> & { service: ServiceConfig };
export type PairConfig = Config['pairs'][number];
