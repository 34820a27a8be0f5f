/**
 * What model tokens cost, as an estimate beside the usage the page and the CLI show: a price table
 * (US dollars per million tokens of each kind, per model id) and the arithmetic on a usage
 * object, the API's session usage or a model request's. The defaults are the prices Anthropic
 * published for the model ids this project uses, checked on PRICES_CHECKED; a deployment replaces
 * or adds models with MH_MODEL_PRICES (prices-config.ts). A model the table does not name has no
 * cost, rather than a wrong one. Pure and import-free: the page runs this very module in the
 * browser, and the CLI imports it through the gateway's package.
 */

/** US dollars per million tokens. */
export interface ModelPrice {
  /** Input tokens read without the prompt cache. */
  readonly input: number;
  readonly output: number;
  /** Input tokens read from the prompt cache. */
  readonly cache_read: number;
  /** Input tokens written to the cache for 5 minutes (the default lifetime). */
  readonly cache_write_5m: number;
  /** Input tokens written to the cache for an hour. */
  readonly cache_write_1h: number;
}

export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** When the defaults were checked against Anthropic's published prices. */
export const PRICES_CHECKED = "2026-12-03";

export const DEFAULT_PRICES: PriceTable = {
  // Cache reads at 0.05x input since 2026-10-07 (0.10x before).
  "claude-sonnet-5-5": { input: 2, output: 10, cache_read: 0.1, cache_write_5m: 2.5, cache_write_1h: 4 },
  "claude-sonnet-4-5": { input: 3, output: 15, cache_read: 0.3, cache_write_5m: 3.75, cache_write_1h: 6 },
};

/**
 * Usage as the API reports it: a session's (`cache_creation` split by lifetime) or a model
 * request's (`cache_creation_input_tokens`, written for the default 5 minutes).
 */
export interface TokenUsage {
  readonly input_tokens?: number | null | undefined;
  readonly output_tokens?: number | null | undefined;
  readonly cache_read_input_tokens?: number | null | undefined;
  readonly cache_creation_input_tokens?: number | null | undefined;
  readonly cache_creation?: { readonly ephemeral_5m_input_tokens?: number | null | undefined; readonly ephemeral_1h_input_tokens?: number | null | undefined } | null | undefined;
}

const n = (v: number | null | undefined): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** Input tokens of every kind, by what they cost: plain, read from the cache, written to it for 5 minutes, for an hour. */
export function inputParts(u: TokenUsage): { readonly plain: number; readonly cacheRead: number; readonly cacheWrite5m: number; readonly cacheWrite1h: number } {
  return {
    plain: n(u.input_tokens),
    cacheRead: n(u.cache_read_input_tokens),
    cacheWrite5m: n(u.cache_creation_input_tokens) + n(u.cache_creation?.ephemeral_5m_input_tokens),
    cacheWrite1h: n(u.cache_creation?.ephemeral_1h_input_tokens),
  };
}

/** Every input token the model read: plain + cache reads + cache writes (the API's input_tokens counts the first only). */
export function totalInput(u: TokenUsage): number {
  const p = inputParts(u);
  return p.plain + p.cacheRead + p.cacheWrite5m + p.cacheWrite1h;
}

/** The table's price of `model`, if it names it (its own entries only: "toString" is no model). */
export function priceOf(table: PriceTable, model: string | undefined): ModelPrice | undefined {
  return model === undefined || !Object.hasOwn(table, model) ? undefined : table[model];
}

/** The estimated cost in US dollars, or undefined when the table has no price for `model`. */
export function costUsd(table: PriceTable, model: string | undefined, u: TokenUsage): number | undefined {
  const price = priceOf(table, model);
  if (price === undefined) return undefined;
  const p = inputParts(u);
  const micro = p.plain * price.input + n(u.output_tokens) * price.output + p.cacheRead * price.cache_read + p.cacheWrite5m * price.cache_write_5m + p.cacheWrite1h * price.cache_write_1h;
  return micro / 1_000_000;
}

/** "$0.0042", "$0.12", "$3.40": four decimals under a dime, so a single request does not read as $0.00. */
export function formatUsd(usd: number): string {
  if (usd > 0 && usd < 0.0001) return "<$0.0001";
  return `$${usd.toFixed(usd < 0.1 ? 4 : 2)}`;
}
