// A reader that goes away early (`binder-sync status | head -1`, `sync | true`) closes the pipe, and the next
// write to stdout fails with EPIPE. Node reports that as an 'error' event, which unhandled kills the process
// with a stack trace and exit code 1, hiding the command's own exit code. Like other command-line tools, we
// drop the rest of the output instead: the command finishes its work and exits with its own code.
import type { Writable } from 'node:stream';

/** Codes meaning "nobody reads this stream any more": the rest of its output is dropped. */
const READER_GONE = new Set(['EPIPE', 'ERR_STREAM_DESTROYED']);

export function dropOutputWhenReaderGone(streams: Writable[] = [process.stdout, process.stderr]): void {
  for (const s of streams) {
    s.on('error', (err: NodeJS.ErrnoException) => {
      if (READER_GONE.has(err.code ?? '')) return;
      throw err;
    });
  }
}
