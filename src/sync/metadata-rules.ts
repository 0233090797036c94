// Upload metadata from per-pair rules (glob -> element values), checked against the binder's metadata
// elements once at start: unknown elements, values outside allowedValues, names that fit more than one element
// or value, and required elements that no rule can supply are errors before any upload. Labels are accepted for
// element ids and enumerated values, an exact match before one in another case.
import { BinderSyncError, oneLineMessage } from '../errors.js';
import { globMatches } from '../local/glob.js';
import type { MetadataElement } from '../service/schemas.js';

/** What to do about rules that do not fit; `check` says only this (the rest of the sync-time hint is "run check"). */
export const METADATA_RULES_HINT = "fix the pair's metadata rules (an unknown name is listed with the elements the binder has)";

export interface MetadataRule {
  match: string;
  values: Record<string, string>;
}

export interface UploadMetadataValue {
  metadataElementId: string;
  /** For enumerated elements the allowed value's id (the valueId); free-form text otherwise. */
  value: string;
}

export interface MetadataResolver {
  /** Metadata for an upload of relPath; throws METADATA_MISSING when a required element has no value. */
  forPath(relPath: string): UploadMetadataValue[];
  /** The rules' values for relPath, whether or not they cover every required element (a new version's fill). */
  valuesFor(relPath: string): UploadMetadataValue[];
  /**
   * Required customer elements (by label, else id) that neither the rules give for relPath nor `have` holds (the
   * ids of the values a new version already carries from its document); empty when uploadable.
   */
  missingFor(relPath: string, have?: ReadonlySet<string>): string[];
  /**
   * Whether the binder takes this value for this element now (the element exists; an enumerated element lists
   * the value, by id or label). A document's own values are carried into its new versions only when they are
   * still accepted: a retired value would make the service refuse every later edit. True when the binder
   * defines no elements at all (nothing is known to check against).
   */
  accepts(metadataElementId: string, value: string): boolean;
  /** Set when no upload may go at all (the rules do not fit the binder): why, said for each file held back. */
  blockedBecause?: string;
}

/**
 * The resolver of a daemon's pair whose rules do not fit its binder (openPair's `badRules: 'hold-uploads'`):
 * no upload goes, each is listed as not synced with the reason, and downloads go on, instead of the whole pair
 * waiting in error while its binder's changes pile up (black-box round 24, M5).
 */
export function uploadsHeldResolver(err: Error, reason?: string): MetadataResolver {
  return {
    blockedBecause: reason === undefined ? oneLineMessage(err) : `${reason}: ${oneLineMessage(err)}`,
    forPath() {
      throw err;
    },
    valuesFor() {
      throw err;
    },
    missingFor: () => [],
    accepts: () => true,
  };
}

/** The resolver as compiled, with what `check` asks of it besides. */
export interface CompiledMetadataRules extends MetadataResolver {
  /**
   * For each required customer element (by label, else id): the globs of the rules that give it a value, and
   * whether one of them matches every path. A required element set only under some folders leaves every new
   * file elsewhere unuploadable (metadata-missing): `check` warns of it.
   */
  requiredCoverage(): Array<{ element: string; globs: string[]; everywhere: boolean }>;
}

/** Globs that match every relative path (a rule with one of them applies to every file). */
const EVERY_PATH = new Set(['*', '**', '**/*', '/**', '/**/*']);

interface ResolvedRule {
  match: string;
  values: UploadMetadataValue[];
}

/** Validates the rules against the binder's elements and returns a resolver. Lists every problem at once. */
export function compileMetadataRules(rules: readonly MetadataRule[], elements: readonly MetadataElement[], pair: string): CompiledMetadataRules {
  const problems: string[] = [];
  const resolved: ResolvedRule[] = rules.map((rule, i) => {
    const keyOf = new Map<string, string>(); // element id -> the rule's key that named it
    return {
      match: rule.match,
      values: Object.entries(rule.values).flatMap(([elementKey, valueKey]) => {
        const found = pickOne(elements, elementKey, (e) => e.id, (e) => e.label);
        if (found.length !== 1) {
          problems.push(found.length === 0
            ? `metadata[${i}].values.${elementKey}: no metadata element with this id or label on the binder (known: ${elements.map(describeElement).join(', ')})`
            : `metadata[${i}].values.${elementKey}: names ${found.length} metadata elements (${found.map(describeElement).join(', ')}); use the id of the one meant`);
          return [];
        }
        const el = found[0]!;
        if (el.id.startsWith('GLOBAL_')) {
          problems.push(`metadata[${i}].values.${elementKey}: GLOBAL_ elements are set by the service, not by rules`);
          return [];
        }
        const twin = keyOf.get(el.id);
        if (twin !== undefined) {
          problems.push(`metadata[${i}].values: ${twin} and ${elementKey} both name the element ${describeElement(el)}; keep one`);
          return [];
        }
        keyOf.set(el.id, elementKey);
        const allowed = el.allowedValues ?? [];
        if (allowed.length === 0) return [{ metadataElementId: el.id, value: valueKey }];
        const v = pickOne(allowed, valueKey, (a) => a.id, (a) => a.label);
        const choices = allowed.map((a) => (a.label ? `${a.id} (${a.label})` : a.id)).join(', ');
        if (v.length !== 1) {
          problems.push(v.length === 0
            ? `metadata[${i}].values.${elementKey}: "${valueKey}" is not an allowed value (allowed: ${choices})`
            : `metadata[${i}].values.${elementKey}: "${valueKey}" names ${v.length} allowed values (${v.map((a) => a.id).join(', ')}); use the value id (allowed: ${choices})`);
          return [];
        }
        return [{ metadataElementId: el.id, value: v[0]!.id }];
      }),
    };
  });
  if (problems.length > 0) {
    throw new BinderSyncError(`pair ${pair}: metadata rules do not fit the binder's metadata elements:\n  ${problems.join('\n  ')}`, {
      code: 'METADATA_RULES_INVALID',
      retryable: false,
      context: { pair },
      hint: `${METADATA_RULES_HINT}; \`binder-sync check -c <config>\` checks them again without syncing`,
    });
  }
  const required = elements.filter((e) => e.required === true && !e.id.startsWith('GLOBAL_'));

  const valuesFor = (relPath: string): Map<string, string> => {
    const out = new Map<string, string>();
    for (const rule of resolved) {
      if (!globMatches(rule.match, relPath, false)) continue;
      for (const v of rule.values) out.set(v.metadataElementId, v.value); // later rules override
    }
    return out;
  };
  const missingFor = (relPath: string, have?: ReadonlySet<string>) => {
    const given = valuesFor(relPath);
    return required.filter((e) => !given.has(e.id) && have?.has(e.id) !== true).map((e) => e.label ?? e.id);
  };
  const byId = new Map(elements.map((e) => [e.id, e]));
  return {
    missingFor,
    valuesFor: (relPath) => [...valuesFor(relPath)].map(([metadataElementId, value]) => ({ metadataElementId, value })),
    requiredCoverage() {
      return required.map((e) => {
        const globs = resolved.filter((r) => r.values.some((v) => v.metadataElementId === e.id)).map((r) => r.match);
        return { element: e.label ?? e.id, globs, everywhere: globs.some((g) => EVERY_PATH.has(g)) };
      });
    },
    accepts(metadataElementId, value) {
      if (elements.length === 0) return true;
      const el = byId.get(metadataElementId);
      if (el === undefined) return false;
      const allowed = el.allowedValues ?? [];
      return allowed.length === 0 || allowed.some((a) => a.id === value || a.label === value);
    },
    forPath(relPath) {
      const missing = missingFor(relPath);
      if (missing.length > 0) {
        throw new BinderSyncError(`${relPath}: required metadata ${missing.join(', ')} has no value in the pair's metadata rules`, {
          code: 'METADATA_MISSING',
          retryable: false,
          context: { relPath, missing },
          hint: 'add a metadata rule whose glob matches this file (e.g. match: "**")',
        });
      }
      return [...valuesFor(relPath)].map(([metadataElementId, value]) => ({ metadataElementId, value }));
    },
  };
}

/**
 * What a rule's key (or value) names: the candidates with this id, else with this label exactly, else with this
 * id or label in another case; the first of those steps that finds any decides. More than one result is
 * ambiguous (two elements labelled "Status"), and the caller refuses it rather than pick one: a value attached
 * to the wrong element is wrong metadata on every upload, with nothing to say so.
 */
function pickOne<T>(items: readonly T[], key: string, idOf: (t: T) => string, labelOf: (t: T) => string | null | undefined): T[] {
  const byId = items.filter((t) => idOf(t) === key);
  if (byId.length > 0) return byId;
  const byLabel = items.filter((t) => labelOf(t) === key);
  if (byLabel.length > 0) return byLabel;
  const lower = key.toLowerCase();
  return items.filter((t) => idOf(t).toLowerCase() === lower || labelOf(t)?.toLowerCase() === lower);
}

function describeElement(e: MetadataElement): string {
  return e.label ? `${e.id} (${e.label})` : e.id;
}
