// Error types shared by every layer: a stable code, explicit retryability, context and a hint for the user.
// Messages never contain secrets: callers pass paths, pair names and request names, never tokens or URLs
// with signatures (see redactUrl in service/redact.ts).

export interface ErrorDetails {
  /** Stable machine-readable code, e.g. CONFIG_INVALID, SERVICE_HTTP, LOCAL_IO. */
  code: string;
  /** True when the same operation may succeed if simply tried again later. */
  retryable: boolean;
  /** What the user can do about it. */
  hint?: string;
  /** Which pair, path, request... */
  context?: Record<string, unknown>;
  cause?: unknown;
}

export class BinderSyncError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly hint: string | undefined;
  readonly context: Record<string, unknown>;

  constructor(message: string, details: ErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.code = details.code;
    this.retryable = details.retryable;
    this.hint = details.hint;
    this.context = details.context ?? {};
  }

  /** One line for a terminal: message plus hint. */
  describe(): string {
    return this.hint ? `${this.message}\n  hint: ${this.hint}` : this.message;
  }
}

/**
 * An error's message on one line, without its hint, for a log field or a status row: the lines after the first
 * (a list of problems, a quoted service answer) are kept, joined with "; ", not cut off.
 */
export function oneLineMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const [first = '', ...rest] = text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
  return rest.length === 0 ? first : `${first} ${rest.join('; ')}`;
}

/** Formats any thrown value for a user-facing message. */
export function describeError(err: unknown): string {
  if (err instanceof BinderSyncError) return err.describe();
  if (err instanceof Error) return err.message;
  return String(err);
}

export function isRetryable(err: unknown): boolean {
  return err instanceof BinderSyncError ? err.retryable : false;
}
