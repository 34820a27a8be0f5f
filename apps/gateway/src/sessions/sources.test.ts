/**
 * A kept session source is frozen whole, so that handing it out as it is lets no caller change
 * another's copy: a change throws (ES modules are strict) rather than lands.
 */
import { describe, expect, it } from "vitest";
import { deepFreeze } from "./sources.js";

describe("deepFreeze", () => {
  it("freezes every object and array a source holds", () => {
    const source = deepFreeze({ agent: { body: { tools: [{ type: "custom", input_schema: { properties: {} } }], metadata: { a: "1" } } }, environment: undefined, agentExists: true });
    const tools = source.agent.body.tools as Array<Record<string, unknown>>;
    expect(() => tools.push({ type: "other" })).toThrow(TypeError);
    expect(() => {
      (source.agent.body.metadata as Record<string, string>)["b"] = "2";
    }).toThrow(TypeError);
    expect(() => {
      (tools[0]?.["input_schema"] as Record<string, unknown>)["x"] = 1;
    }).toThrow(TypeError);
    expect(source.agent.body.tools).toHaveLength(1);
  });

  it("returns what it was given, and leaves what is frozen already alone", () => {
    const inner = Object.freeze({ a: 1 });
    const outer = { inner, at: new Date(0) };
    expect(deepFreeze(outer)).toBe(outer);
    expect(Object.isFrozen(outer.at)).toBe(true);
  });
});
