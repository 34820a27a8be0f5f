/**
 * Token usage and its estimated cost as the page writes them: the whole input the model read
 * (plain, cache reads and writes; the API's input_tokens is the first only), its parts, and the
 * cost from the deployment's price table (none for a model without a price).
 */
import { formatTokens } from "./format.js";
import { costUsd, formatUsd, inputParts, totalInput, type PriceTable, type TokenUsage } from "./prices.js";

/** "3.03k (1.83k + cache read 1.20k)", or "950" when it was all plain input. */
export function inputText(u: TokenUsage): string {
  const p = inputParts(u);
  const cached = [
    p.cacheRead > 0 ? `cache read ${formatTokens(p.cacheRead)}` : "",
    p.cacheWrite5m + p.cacheWrite1h > 0 ? `cache write ${formatTokens(p.cacheWrite5m + p.cacheWrite1h)}` : "",
  ].filter((t) => t !== "");
  return cached.length === 0 ? formatTokens(p.plain) : `${formatTokens(totalInput(u))} (${formatTokens(p.plain)} + ${cached.join(" + ")})`;
}

/** "≈ $0.0073", or undefined when the model has no price. */
export function costText(prices: PriceTable, model: string | undefined, u: TokenUsage): string | undefined {
  const usd = costUsd(prices, model, u);
  return usd === undefined ? undefined : `≈ ${formatUsd(usd)}`;
}

/** The price table the gateway put in the page (`<meta name="mh-model-prices">`); empty if unreadable. */
export function pagePrices(json: string): PriceTable {
  try {
    const table: unknown = JSON.parse(json);
    return typeof table === "object" && table !== null ? (table as PriceTable) : {};
  } catch {
    return {};
  }
}
