/**
 * MH_GATEWAY_API_KEYS is the whole list of keys that work: a key taken out of it and a restart
 * (here, another instance on the same database) withdraws it; put back, it works again; an
 * instance without the variable changes nothing. With the key cache on (its default), a revoked
 * key is refused once the cache's TTL has passed, never later.
 */
import Anthropic from "@anthropic-ai/sdk";
import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, KEY_B, startStack, type Stack } from "../../support/gateway.js";
import { eventually } from "../../support/eventually.js";

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

  it("are refused once revoked through the key cache too, within its TTL", async () => {
    // The cache holds a key's answer by the key itself (auth/principals.ts): a hit hashes nothing.
    const cached = await stack.anotherGateway({ MH_GATEWAY_KEY_CACHE_MS: "300" });
    expect(await status(cached.url, KEY_A)).toBe("ok");
    expect(await status(cached.url, KEY_A)).toBe("ok");
    await stack.anotherGateway({ MH_GATEWAY_API_KEYS: `${KEY_B}:tenant-b` });
    await eventually(async () => ((await status(cached.url, KEY_A)) === 401 ? true : undefined), "the revoked key refused by the caching instance");
    // Not a refusal kept in the cache for ever: put back, it works again once the TTL passed.
    await stack.anotherGateway({ MH_GATEWAY_API_KEYS: `${KEY_A}:tenant-a,${KEY_B}:tenant-b` });
    await eventually(async () => ((await status(cached.url, KEY_A)) === "ok" ? true : undefined), "the key put back accepted by the caching instance");
    expect(await status(cached.url, KEY_B)).toBe("ok");
  });

  it("are not kept whole when unknown and longer than any key can be: the cache's memory stays bounded", async () => {
    // The cache holds a key's answer by the key itself, unknown keys too (a miss would otherwise
    // be a query per request). A key is at most 256 characters (config.ts; environment keys and
    // sessions tokens are 48), but a header may hold 16 KiB: 10,000 of those cached would be
    // 160 MB of the gateway's heap, for anyone who can send requests.
    const cached = await stack.anotherGateway({ MH_GATEWAY_KEY_CACHE_MS: "600000" });
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const heap = (): number => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const send = async (count: number): Promise<Set<number>> => {
      const statuses = new Set<number>();
      for (let i = 0; i < count; i += 10) {
        const batch = Array.from({ length: 10 }, async () => (await fetch(`${cached.url}/v1/agents`, { headers: { "x-api-key": randomBytes(6000).toString("hex") } })).status);
        for (const s of await Promise.all(batch)) statuses.add(s);
      }
      return statuses;
    };
    // The first requests' own allocations (code compiled, connections) before the measure.
    await send(100);
    const before = heap();
    const statuses = await send(3000);
    const grown = heap() - before;
    expect(statuses).toEqual(new Set([401]));
    // 3,000 keys of 12,000 characters kept would be 36 MB.
    expect(grown).toBeLessThan(12_000_000);
    // A key of a length there is still works.
    expect(await status(cached.url, KEY_A)).toBe("ok");
    // 3,100 requests: 10-15 s at load 10, given room for a busier machine.
  }, 180_000);
});
