// Version labels for uploads (the service takes a client-supplied label). Scheme 'integer': the next integer
// above the highest numeric label among the document's versions ("1" for a new document); when the document
// has labels but none numeric, a UTC timestamp. Scheme 'timestamp': always the timestamp.
//
// A numeric label is digits, optionally with a decimal part, around which spaces are ignored: "7", "007", " 12 ",
// "2.9", "1.0". Digits are read as a BigInt, so a label past 2^53 ("9007199254740993") is followed by the next
// one, not by a smaller number that a float rounded it to (black-box round 30b, F10: labels went backwards). A
// decimal label is followed by the next integer above it ("2.9" -> "3", "1.0" -> "2"). Anything else is not a
// number here, even where JavaScript would read one: "1e3", "Infinity", "0x10", "-1", "1.2.3".
export type VersionLabelScheme = 'integer' | 'timestamp';

/** Digits, then an optional decimal part: only the integer part matters for the next label. */
const NUMERIC_LABEL = /^(\d+)(?:\.\d+)?$/;

export function nextVersionLabel(existing: readonly string[], scheme: VersionLabelScheme, now: Date): string {
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  if (scheme === 'timestamp') return stamp;
  if (existing.length === 0) return '1';
  let max: bigint | null = null;
  for (const label of existing) {
    const digits = NUMERIC_LABEL.exec(label.trim())?.[1];
    if (digits === undefined) continue;
    const n = BigInt(digits);
    if (max === null || n > max) max = n;
  }
  return max === null ? stamp : String(max + 1n);
}
