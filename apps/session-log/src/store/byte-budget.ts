/**
 * The byte budget that slices (store/read.ts) and the relay's batches (outbox/batch.ts) apply in
 * SQL, over a window `w` ordered as their rows are read: a row is within it when it is the first
 * (one event is always served, however large) or when the running sum of body sizes up to it is
 * at most the budget. octet_length reads a TOASTed body's size without reading the body, so the
 * bodies past the budget are never read.
 */
export function withinByteBudget(body: string, budget: string): string {
  return `(row_number() OVER w = 1 OR sum(octet_length(${body})) OVER w <= ${budget})`;
}
