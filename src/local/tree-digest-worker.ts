// The second thread of digestLocalTree (tree-digest.ts): waits for its one task (it may be started before the
// pass knows it will need it: prewarmDigestWorker), then takes sub-trees from the shared counter until none is
// left, walks each and sends its directories' digests back. Any error ends it; the main thread then walks what
// is missing.
import fs from 'node:fs';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { createIgnoreMatcher } from './ignore.js';
import { walkSegment, type WorkerMessage, type WorkerTask } from './tree-digest.js';

const task = await new Promise<WorkerTask>((resolve) => parentPort?.once('message', resolve));
const opts = { root: task.root, caseInsensitive: task.caseInsensitive, ignore: createIgnoreMatcher(task.ignoreGlobs) };
const claims = new Int32Array(task.next);
const post = (m: WorkerMessage) => parentPort?.postMessage(m);
for (;;) {
  const index = Atomics.add(claims, 0, 1);
  if (index >= task.rels.length) break;
  const rel = task.rels[index] as string;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(task.root, rel), { withFileTypes: true });
  } catch {
    post({ index, digests: new Uint8Array(0), clean: false }); // changed or unreadable since the main thread listed it
    continue;
  }
  post({ index, ...(await walkSegment(opts, { rel, entries })) });
}
post({ done: true });
