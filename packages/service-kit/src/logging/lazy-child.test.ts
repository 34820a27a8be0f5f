/** The lazy child: made at the first line its parent's level writes, once, writing the eager child's lines. */
import type { Bindings, ChildLoggerOptions } from "pino";
import { describe, expect, it } from "vitest";
import { LazyChildLogger, type ContextLogger } from "./lazy-child.js";
import { createLogger } from "./logger.js";

/** A logger at `level` whose lines are kept, and the bindings of every child made of it. */
function parent(level: "debug" | "warn"): { log: ContextLogger; lines: string[]; made: Bindings[] } {
  const lines: string[] = [];
  const log: ContextLogger = createLogger({ service: "svc", level, destination: { write: (line: string) => void lines.push(line) } });
  const made: Bindings[] = [];
  // Kept as the logger's own child is, for its children too (they have it through their prototype).
  const child = Reflect.get(log, "child");
  log.child = function (this: ContextLogger, bindings: Bindings, options?: ChildLoggerOptions) {
    made.push(bindings);
    return child.call(this, bindings, options);
  };
  return { log, lines, made };
}

const withoutTime = (line: string): unknown => ({ ...(JSON.parse(line) as Record<string, unknown>), time: undefined });

describe("LazyChildLogger", () => {
  it("makes no child for lines the parent's level drops, one at the first it writes, and no other", () => {
    const { log, lines, made } = parent("warn");
    const lazy = new LazyChildLogger(log, { session_id: "s1" });
    lazy.info({ n: 1 }, "dropped");
    lazy.debug("dropped too");
    lazy.trace("and this");
    expect(made).toEqual([]);
    expect(lines).toEqual([]);
    lazy.warn({ n: 2 }, "written");
    lazy.error("written %s", "too");
    lazy.fatal("and fatal");
    expect(made).toEqual([{ session_id: "s1" }]);
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>).map((l) => [l["level"], l["msg"], l["session_id"]])).toEqual([
      ["warn", "written", "s1"],
      ["error", "written too", "s1"],
      ["fatal", "and fatal", "s1"],
    ]);
  });

  it("writes the eager child's lines, its bindings redacted and its options kept", () => {
    const eager = parent("debug");
    const lazy = parent("debug");
    const bindings = { request_id: "req_1", token: "secret" };
    const options = { msgPrefix: "[req] " };
    const write = (log: ContextLogger): void => {
      log.debug({ a: 0 }, "zero");
      log.info({ a: 1, password: "p" }, "one");
      log.child({ x: 1 }).warn("two %d", 2);
    };
    write(eager.log.child(bindings, options));
    write(new LazyChildLogger(lazy.log, bindings, options));
    expect(lazy.lines.map(withoutTime)).toEqual(eager.lines.map(withoutTime));
    expect(JSON.parse(lazy.lines[1] ?? "{}")).toMatchObject({ request_id: "req_1", token: "[redacted]", password: "[redacted]", msg: "[req] one" });
    expect(JSON.parse(lazy.lines[2] ?? "{}")).toMatchObject({ request_id: "req_1", x: 1 });
    expect(lazy.made).toEqual([{ request_id: "req_1", token: "secret" }, { x: 1 }]);
  });

  it("answers level and level checks from the parent without making the child", () => {
    const { log, made } = parent("warn");
    const lazy = new LazyChildLogger(log, { session_id: "s2" });
    expect(lazy.level).toBe("warn");
    expect(lazy.isLevelEnabled("info")).toBe(false);
    expect(lazy.isLevelEnabled("error")).toBe(true);
    lazy.silent();
    expect(made).toEqual([]);
  });

  it("makes the child for a level set or a child asked, and tells onMade of it once", () => {
    const { log, lines, made } = parent("warn");
    const told: unknown[] = [];
    const lazy = new LazyChildLogger(log, { session_id: "s3" }, undefined, (child) => told.push(child));
    lazy.level = "debug";
    expect(made).toEqual([{ session_id: "s3" }]);
    expect(lazy.level).toBe("debug");
    expect(lazy.isLevelEnabled("debug")).toBe(true);
    lazy.debug("written now");
    expect(lines).toHaveLength(1);
    lazy.child({ y: 2 });
    expect(made).toEqual([{ session_id: "s3" }, { y: 2 }]);
    expect(told).toHaveLength(1);
    expect(log.level).toBe("warn");
  });

  it("makes a child given a level of its own at once, so its lines follow that level", () => {
    const { log, lines, made } = parent("warn");
    const lazy = new LazyChildLogger(log, { session_id: "s4" }, { level: "debug" });
    expect(made).toEqual([{ session_id: "s4" }]);
    expect(lazy.isLevelEnabled("debug")).toBe(true);
    lazy.debug("written at the child's level");
    expect(lines.map((l) => (JSON.parse(l) as Record<string, unknown>)["msg"])).toEqual(["written at the child's level"]);
  });
});
