/**
 * MH_MODEL_PRICES: a deployment's own model prices, as JSON, US dollars per million tokens:
 * `{"claude-sonnet-5-5": {"input": 2, "output": 10, "cache_read": 0.1, "cache_write_5m": 2.5,
 * "cache_write_1h": 4}}`. Each model named replaces or adds its entry of the defaults
 * (prices.ts); every field is required, a non-negative number, so a typo cannot price a model
 * at zero. Read by the gateway's UI config, and by the CLI for its summaries.
 */
import { readConfig, type EnvResult, type EnvSource, type EnvVar } from "@metaharness/service-kit/config";
import { DEFAULT_PRICES, type ModelPrice, type PriceTable } from "./browser/prices.js";

const FIELDS = ["input", "output", "cache_read", "cache_write_5m", "cache_write_1h"] as const satisfies ReadonlyArray<keyof ModelPrice>;
const EXPECTED = `a JSON object of model ids to {${FIELDS.join(", ")}}, each a number >= 0 (US dollars per million tokens)`;

function parse(name: string, raw: string): EnvResult<PriceTable> {
  const bad = (why: string): EnvResult<PriceTable> => ({ ok: false, problem: `${name} is invalid: ${why} (expected ${EXPECTED})` });
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return bad("not JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return bad("not an object");
  const table: Record<string, ModelPrice> = { ...DEFAULT_PRICES };
  for (const [model, entry] of Object.entries(json)) {
    if (model === "" || typeof entry !== "object" || entry === null || Array.isArray(entry)) return bad(`${JSON.stringify(model)} is not an object of prices`);
    const fields = entry as Record<string, unknown>;
    const unknown = Object.keys(fields).find((k) => !(FIELDS as readonly string[]).includes(k));
    if (unknown !== undefined) return bad(`${model}.${unknown} is not a price field`);
    const price: Partial<Record<keyof ModelPrice, number>> = {};
    for (const field of FIELDS) {
      const value = fields[field];
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) return bad(`${model}.${field} is ${JSON.stringify(value) ?? "missing"}`);
      price[field] = value;
    }
    table[model] = price as ModelPrice;
  }
  return { ok: true, value: table };
}

export function modelPrices(name: string): EnvVar<PriceTable> {
  return { name, read: (raw) => (raw === undefined ? { ok: true, value: DEFAULT_PRICES } : parse(name, raw)) };
}

export const PRICES_CONFIG = { prices: modelPrices("MH_MODEL_PRICES") } as const;

/** The price table in force: the defaults, with MH_MODEL_PRICES's models over them. */
export function loadModelPrices(source: EnvSource = process.env): PriceTable {
  return readConfig(PRICES_CONFIG, source).prices;
}
