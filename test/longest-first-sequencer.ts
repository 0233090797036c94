import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The test files that take longest (a minute or more of waiting on child processes each), in the order they
 * should start. vitest runs the longest first only from its own cache of an earlier run's durations, and a
 * fresh clone (CI) has none: there, one of these starting last kept a single worker busy for a minute and a
 * half after the other had finished. Measured from fresh-ci's per-file durations; a file missing from the
 * list is only started later, never skipped.
 */
export const LONGEST_FILES = [
  'test/e2e/real-programs-edge-cases.test.ts',
  'test/e2e/crash-random.test.ts',
  'test/e2e/run-resilience.test.ts',
  'test/e2e/run-real-programs.test.ts',
  'test/e2e/sync-metadata.test.ts',
  'test/e2e/bad-input.test.ts',
  'test/e2e/run-sync.test.ts',
  'test/e2e/crash.test.ts',
  'test/e2e/status-check.test.ts',
  'test/e2e/run-incremental.test.ts',
  'test/e2e/sync-safety.test.ts',
];

/** Where a file starts: the listed long ones first, then end-to-end, integration and unit files (each slower than the next). */
export function startRank(relativePath: string): number {
  const listed = LONGEST_FILES.indexOf(relativePath);
  if (listed >= 0) return listed;
  const kinds = ['test/e2e/', 'test/integration/', 'test/soak/'];
  const kind = kinds.findIndex((prefix) => relativePath.startsWith(prefix));
  return LONGEST_FILES.length + (kind >= 0 ? kind : kinds.length);
}

/**
 * Longest first (the classic LPT schedule), so that two workers finish close together. vitest's own order
 * (durations it cached from an earlier run in this checkout, if any) decides within a rank.
 */
export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cached = await super.sort(files);
    const root = this.ctx.config.root;
    const rel = (spec: TestSpecification) => spec.moduleId.slice(root.length + 1).split('\\').join('/');
    return cached
      .map((spec, position) => ({ spec, position, rank: startRank(rel(spec)) }))
      .sort((a, b) => a.rank - b.rank || a.position - b.position)
      .map(({ spec }) => spec);
  }
}
