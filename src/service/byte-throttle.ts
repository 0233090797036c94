// Transfer rate limits (service.maxUploadRate / maxDownloadRate): one byte budget per direction, shared by every
// transfer of the client, and a stream stage that lets bytes through at that rate. Only built when a limit is
// set: an unlimited transfer has no extra stage.
import { Transform, type TransformCallback } from 'node:stream';

/**
 * A token bucket of bytes. reserve(n) takes n bytes now and says how long to wait before sending them: the
 * budget may go into debt, which later reservations wait behind, so concurrent transfers share the rate in
 * the order they asked. At most a tenth of a second of rate builds up while idle.
 */
export class ByteBudget {
  private tokens: number;
  private last: number;
  private burst: number;

  constructor(
    public bytesPerSecond: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.burst = Math.max(1, bytesPerSecond / 10);
    this.tokens = this.burst;
    this.last = now();
  }

  /** A new rate from now on (a config reload); Infinity lets everything through. The debt so far is forgiven. */
  setRate(bytesPerSecond: number): void {
    this.bytesPerSecond = bytesPerSecond;
    this.burst = Number.isFinite(bytesPerSecond) ? Math.max(1, bytesPerSecond / 10) : Number.POSITIVE_INFINITY;
    this.tokens = Number.isFinite(bytesPerSecond) ? this.burst : Number.POSITIVE_INFINITY;
    this.last = this.now();
  }

  /** Milliseconds to wait before sending n bytes (0: at once); the bytes are taken from the budget. */
  reserve(n: number): number {
    if (!Number.isFinite(this.bytesPerSecond)) return 0; // the cap was lifted
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.bytesPerSecond) / 1000);
    this.last = t;
    this.tokens -= n;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.bytesPerSecond;
  }

  /** The largest piece a chunk is cut into: a twentieth of a second of rate, at least 16 KiB. */
  get piece(): number {
    return Math.max(16 * 1024, Math.floor(this.bytesPerSecond / 20));
  }
}

/**
 * Passes chunks on no faster than its budget allows, cut into pieces so that bytes keep flowing every few tens
 * of milliseconds (no stall long enough for a request's idle timeout, however large the chunk). Backpressure
 * pauses the source meanwhile.
 */
export class ThrottleStream extends Transform {
  private timer: NodeJS.Timeout | undefined;
  /** Bytes let through so far (what the rate allowed, as opposed to what was read into the stage). */
  passed = 0;

  constructor(private readonly budget: ByteBudget) {
    super({ highWaterMark: 1 << 20 });
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.sendFrom(chunk, 0, cb);
  }

  private sendFrom(chunk: Buffer, offset: number, cb: TransformCallback): void {
    while (offset < chunk.length) {
      const piece = chunk.subarray(offset, offset + this.budget.piece);
      offset += piece.length;
      const wait = this.budget.reserve(piece.length);
      if (wait > 0) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          if (this.destroyed) return;
          this.pass(piece);
          this.sendFrom(chunk, offset, cb);
        }, wait);
        return;
      }
      this.pass(piece);
    }
    cb();
  }

  private pass(piece: Buffer): void {
    this.passed += piece.length;
    this.push(piece);
  }

  override _destroy(err: Error | null, cb: (error: Error | null) => void): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    cb(err);
  }
}
