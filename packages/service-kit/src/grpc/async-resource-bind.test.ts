/**
 * The cheaper AsyncResource.prototype.bind behaves as Node 20's: the bound function runs in the
 * resource's scope with its arguments and `this` (or the thisArg), keeps the function's length,
 * and its deprecated `asyncResource` reads the resource and warns DEP0172 once.
 */
import { AsyncLocalStorage, AsyncResource } from "node:async_hooks";
import { describe, expect, it } from "vitest";
import { installCheapAsyncResourceBind } from "./async-resource-bind.js";

describe("AsyncResource.prototype.bind on Node 20", () => {
  installCheapAsyncResourceBind();
  const store = new AsyncLocalStorage<string>();

  it("runs the function in the resource's scope, with its arguments and this", () => {
    const resource = store.run("bound here", () => new AsyncResource("test"));
    function probe(this: unknown, a: number, b: number): [string | undefined, unknown, number] {
      return [store.getStore(), this, a + b];
    }
    const bound = resource.bind(probe);
    const self = { name: "caller" };
    expect(store.run("elsewhere", () => bound.call(self, 1, 2))).toEqual(["bound here", self, 3]);
    expect(bound.length).toBe(2);
    // thisArg: in Node's API, not in @types/node's signature.
    const withThis = (resource.bind as (fn: typeof probe, thisArg: unknown) => typeof probe)(probe, "fixed");
    expect(store.run("elsewhere", () => withThis(3, 4))).toEqual(["bound here", "fixed", 7]);
    expect(AsyncResource.bind(probe, "named")(5, 6)[2]).toBe(11);
  });

  it("keeps the deprecated asyncResource property, which warns once", async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on("warning", onWarning);
    try {
      const resource = new AsyncResource("test");
      const bound = resource.bind(() => 1) as (() => number) & { asyncResource: unknown };
      expect(bound.asyncResource).toBe(resource);
      bound.asyncResource = "other";
      expect(bound.asyncResource).toBe("other");
      expect(bound()).toBe(1);
      await new Promise((resolve) => setImmediate(resolve));
      const dep = warnings.filter((w) => (w as Error & { code?: string }).code === "DEP0172");
      expect(dep.length).toBe(1);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
