// Upload metadata from per-pair rules (glob -> element values), checked against the binder's metadata
// elements once at start: unknown elements, values outside allowedValues and required elements that no
// rule can supply are errors before any upload. Labels are accepted for element ids and enumerated values.
import { BinderSyncError } from '../errors.js';
import { globMatches } from '../local/glob.js';
import type { MetadataElement } from '../service/schemas.js';

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
  /** Required customer elements that the rules give no value for relPath (empty when uploadable). */
  missingFor(relPath: string): string[];
}

interface ResolvedRule {
  match: string;
  values: UploadMetadataValue[];
}

/** Validates the rules against the binder's elements and returns a resolver. Lists every problem at once. */
export function compileMetadataRules(rules: readonly MetadataRule[], elements: readonly MetadataElement[], pair: string): MetadataResolver {
  const problems: string[] = [];
  const resolved: ResolvedRule[] = rules.map((rule, i) => ({
    match: rule.match,
    values: Object.entries(rule.values).flatMap(([elementKey, valueKey]) => {
      const el = findElement(elements, elementKey);
      if (!el) {
        problems.push(`metadata[${i}].values.${elementKey}: no metadata element with this id or label on the binder (known: ${elements.map((e) => e.id).join(', ')})`);
        return [];
      }
      if (el.id.startsWith('GLOBAL_')) {
        problems.push(`metadata[${i}].values.${elementKey}: GLOBAL_ elements are set by the service, not by rules`);
        return [];
      }
      const allowed = el.allowedValues ?? [];
      if (allowed.length === 0) return [{ metadataElementId: el.id, value: valueKey }];
      const v = allowed.find((a) => a.id === valueKey) ?? allowed.find((a) => a.label !== undefined && a.label !== null && a.label.toLowerCase() === valueKey.toLowerCase());
      if (!v) {
        const choices = allowed.map((a) => (a.label ? `${a.id} (${a.label})` : a.id)).join(', ');
        problems.push(`metadata[${i}].values.${elementKey}: "${valueKey}" is not an allowed value (allowed: ${choices})`);
        return [];
      }
      return [{ metadataElementId: el.id, value: v.id }];
    }),
  }));
  if (problems.length > 0) {
    throw new BinderSyncError(`pair ${pair}: metadata rules do not fit the binder's metadata elements:\n  ${problems.join('\n  ')}`, {
      code: 'METADATA_RULES_INVALID',
      retryable: false,
      context: { pair },
      hint: 'fix the pair\'s metadata rules; `binder-sync check` lists the binder\'s elements',
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
  const missingFor = (relPath: string) => {
    const have = valuesFor(relPath);
    return required.filter((e) => !have.has(e.id)).map((e) => e.label ?? e.id);
  };
  return {
    missingFor,
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

function findElement(elements: readonly MetadataElement[], key: string): MetadataElement | undefined {
  return elements.find((e) => e.id === key) ?? elements.find((e) => e.label !== undefined && e.label !== null && e.label.toLowerCase() === key.toLowerCase());
}
