/**
 * Model prices: the arithmetic of an estimate (every kind of input token at its own price, the
 * total input the API's input_tokens leaves out), no cost for a model without a price, and
 * MH_MODEL_PRICES read strictly, naming what is wrong.
 */
import { describe, expect, it } from "vitest";
import { costUsd, DEFAULT_PRICES, formatUsd, totalInput } from "./browser/prices.js";
import { loadModelPrices } from "./prices-config.js";

describe("costUsd", () => {
  it("prices each kind of token, a session's usage and a model request's alike", () => {
    // 1,000 plain at $3, 2,000 out at $15, 10,000 cache reads at $0.30, 581 cache writes at $3.75 per million.
    const request = { input_tokens: 1000, output_tokens: 2000, cache_read_input_tokens: 10_000, cache_creation_input_tokens: 581 };
    expect(costUsd(DEFAULT_PRICES, "claude-sonnet-4-5", request)).toBeCloseTo(0.003 + 0.03 + 0.003 + 0.00217875, 10);
    const session = { input_tokens: 1000, output_tokens: 2000, cache_read_input_tokens: 10_000, cache_creation: { ephemeral_5m_input_tokens: 581, ephemeral_1h_input_tokens: 100 } };
    expect(costUsd(DEFAULT_PRICES, "claude-sonnet-4-5", session)).toBeCloseTo(0.003 + 0.03 + 0.003 + 0.00217875 + 0.0006, 10);
    expect(totalInput(session)).toBe(11_681);
    expect(totalInput({ input_tokens: 0, cache_creation_input_tokens: 581 })).toBe(581);
  });

  it("has no cost for a model without a price, rather than a wrong one", () => {
    expect(costUsd(DEFAULT_PRICES, "claude-unknown-9", { input_tokens: 10 })).toBeUndefined();
    expect(costUsd(DEFAULT_PRICES, "toString", { input_tokens: 10 })).toBeUndefined();
    expect(costUsd(DEFAULT_PRICES, undefined, { input_tokens: 10 })).toBeUndefined();
  });

  it("reads as dollars, small amounts to a hundredth of a cent", () => {
    expect([formatUsd(0), formatUsd(0.00723), formatUsd(0.00004), formatUsd(1.5)]).toEqual(["$0.0000", "$0.0072", "<$0.0001", "$1.50"]);
  });
});

describe("MH_MODEL_PRICES", () => {
  const price = { input: 1, output: 2, cache_read: 0.1, cache_write_5m: 1.25, cache_write_1h: 2 };

  it("adds and replaces models over the defaults", () => {
    const table = loadModelPrices({ MH_MODEL_PRICES: JSON.stringify({ "my-model": price, "claude-sonnet-4-5": price }) });
    expect(table["my-model"]).toEqual(price);
    expect(table["claude-sonnet-4-5"]).toEqual(price);
    expect(table["claude-sonnet-5-5"]).toEqual(DEFAULT_PRICES["claude-sonnet-5-5"]);
    expect(loadModelPrices({})).toEqual(DEFAULT_PRICES);
  });

  it("refuses what is not a full table of non-negative prices, naming the field", () => {
    const bad: Array<[string, RegExp]> = [
      ["not json", /not JSON/],
      ["[]", /not an object/],
      [JSON.stringify({ m: { ...price, output: -1 } }), /m\.output is -1/],
      [JSON.stringify({ m: { input: 1 } }), /m\.output is missing/],
      [JSON.stringify({ m: { ...price, cache_write: 1 } }), /m\.cache_write is not a price field/],
    ];
    for (const [raw, problem] of bad) expect(() => loadModelPrices({ MH_MODEL_PRICES: raw })).toThrow(problem);
  });
});
