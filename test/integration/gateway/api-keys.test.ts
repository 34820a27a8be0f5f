/**
 * MH_GATEWAY_API_KEYS is the whole list of keys that work: a key taken out of it and a restart
 * (here, another instance on the same database) withdraws it; put back, it works again; an
 * instance without the variable changes nothing.
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, KEY_B, startStack, type Stack } from "../../support/gateway.js";

let stack: Stack;
beforeAll(async () => {
  // No key cache: every request asks the database, so a revocation shows at once.
  stack = await startStack({ scenarios: [], vault: false, env: { MH_GATEWAY_KEY_CACHE_MS: "0" } });
});
afterAll(async () => {
  await stack?.stop();
});

const status = async (url: string, key: string): Promise<number | "ok"> => {
  try {
    await new Anthropic({ apiKey: key, baseURL: url, maxRetries: 0 }).beta.agents.list();
    return "ok";
  } catch (err) {
    if (err instanceof Anthropic.APIError && err.status !== undefined) return Number(err.status);
    throw err;
  }
};

describe("API keys", () => {
  it("are the ones MH_GATEWAY_API_KEYS lists: one taken out stops working everywhere, one put back works again", async () => {
    const first = stack.gateway.url;
    expect(await status(first, KEY_A)).toBe("ok");
    const onlyB = await stack.anotherGateway({ MH_GATEWAY_API_KEYS: `${KEY_B}:tenant-b` });
    expect(await status(onlyB.url, KEY_A)).toBe(401);
    expect(await status(first, KEY_A)).toBe(401);
    expect(await status(first, KEY_B)).toBe("ok");
    // An instance without the variable changes nothing.
    const unset = await stack.anotherGateway({ MH_GATEWAY_API_KEYS: "" });
    expect(await status(unset.url, KEY_B)).toBe("ok");
    expect(await status(unset.url, KEY_A)).toBe(401);
    const both = await stack.anotherGateway({ MH_GATEWAY_API_KEYS: `${KEY_A}:tenant-a,${KEY_B}:tenant-b` });
    expect(await status(both.url, KEY_A)).toBe("ok");
    expect(await status(first, KEY_A)).toBe("ok");
  });
});
