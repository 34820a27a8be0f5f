/** checkNoNul: the field of a NUL named as the .proto spells it, through messages, lists, maps, Structs and oneofs. */
import { describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { checkNoNul } from "./request-text.js";

const fieldOf = (value: unknown, maps?: ReadonlySet<string>): string | undefined => {
  try {
    checkNoNul(value, "", maps);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(MhError);
    expect((err as MhError).code).toBe("INVALID_ARGUMENT");
    return (err as MhError).field;
  }
};

describe("checkNoNul", () => {
  it("passes text without NUL, whatever else it holds", () => {
    expect(fieldOf({ displayName: "ünï ✓", labels: { "k é": "v" }, at: new Date(0), bytes: new Uint8Array([0]) })).toBeUndefined();
  });

  it("names the field in protobuf names: nested messages, list items, map and Struct keys, oneof cases", () => {
    const maps = new Set(["metadata", "inputSchema"]);
    expect(fieldOf({ sessionId: "a\0" })).toBe("session_id");
    expect(fieldOf({ agent: { tools: [{ name: "ok" }, { name: "x\0" }] } })).toBe("agent.tools[1].name");
    expect(fieldOf({ metadata: { team: "x\0" } }, maps)).toBe("metadata[team]");
    expect(fieldOf({ metadata: { "te\0am": "x" } }, maps)).toBe("metadata[te\\0am]");
    expect(fieldOf({ inputSchema: { properties: { camelCase: { enum: ["a", "\0"] } } } }, maps)).toBe("input_schema[properties][camelCase][enum][1]");
    expect(fieldOf({ config: { $case: "gitToken", value: { userName: "\0" } } })).toBe("git_token.user_name");
  });
});
