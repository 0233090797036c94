// Version labels for uploads (the service takes a client-supplied label). Scheme 'integer': the next integer
// after the highest purely numeric label among the document's versions ("1" for a new document); when the
// document has labels but none numeric, a UTC timestamp. Scheme 'timestamp': always the timestamp.
export type VersionLabelScheme = 'integer' | 'timestamp';

export function nextVersionLabel(existing: readonly string[], scheme: VersionLabelScheme, now: Date): string {
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  if (scheme === 'timestamp') return stamp;
  if (existing.length === 0) return '1';
  let max = -1;
  for (const label of existing) {
    if (/^\d{1,15}$/.test(label.trim())) max = Math.max(max, Number(label.trim()));
  }
  return max >= 0 ? String(max + 1) : stamp;
}
