/**
 * The request's lazy logger writes the lines fastify's child would (bindings redacted, levels as
 * the parent's), and makes no child for a request that writes nothing at its level.
 */
import { createLogger } from "@metaharness/service-kit/logging";
import type { FastifyBaseLogger } from "fastify";
import { describe, expect, it } from "vitest";
import { requestLogger } from "./request-logger.js";

function logger(level: "info" | "warn"): { lines: Array<Record<string, unknown>>; log: ReturnType<typeof createLogger>; children: () => number } {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ service: "test", level, destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } });
  let made = 0;
  const child = log.child.bind(log);
  log.child = ((...args: Parameters<typeof child>) => {
    made += 1;
    return child(...args);
  }) as typeof log.child;
  return { lines, log, children: () => made };
}

const withoutTime = (line: Record<string, unknown>): Record<string, unknown> => ({ ...line, time: undefined });

describe("requestLogger", () => {
  it("writes what the eager child writes", () => {
    const eager = logger("info");
    const lazy = logger("info");
    const bindings = { request_id: "req_1", token: "secret" };
    const write = (log: FastifyBaseLogger): void => {
      log.debug({ a: 0 }, "not written");
      log.info({ a: 1, password: "p" }, "one");
      log.warn("two %s", "x");
      log.child({ session_id: "s" }).error({ b: 2 }, "three");
    };
    write(eager.log.child(bindings, {}));
    write(requestLogger(lazy.log, bindings, {}));
    expect(lazy.lines.map(withoutTime)).toEqual(eager.lines.map(withoutTime));
    expect(lazy.lines.map((l) => l["msg"])).toEqual(["one", "two x", "three"]);
    expect(lazy.lines[0]).toMatchObject({ request_id: "req_1", token: "[redacted]", password: "[redacted]" });
  });

  it("makes no child while nothing is written at the parent's level, one at the first line that is", () => {
    const { log, lines, children } = logger("warn");
    const req = requestLogger(log, { request_id: "req_2" }, {});
    req.info({ a: 1 }, "request");
    req.debug("nothing");
    expect(children()).toBe(0);
    expect(req.level).toBe("warn");
    req.warn({ a: 2 }, "request failed");
    req.error("again");
    expect(children()).toBe(1);
    expect(lines.map((l) => [l["msg"], l["request_id"]])).toEqual([
      ["request failed", "req_2"],
      ["again", "req_2"],
    ]);
  });

  it("makes the child at once for a route's own level", () => {
    const { log, children } = logger("warn");
    const req = requestLogger(log, { request_id: "req_3" }, { level: "debug" });
    expect(children()).toBe(1);
    expect(req.level).toBe("debug");
  });
});
