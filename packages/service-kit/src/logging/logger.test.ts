/** The logger: JSON lines with service and trace ids, secrets redacted, context via child loggers. */
import { withSpan, type Telemetry } from "@metaharness/telemetry";
import { startTestTelemetry } from "@metaharness/telemetry/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLogger, loggerFor } from "./logger.js";

let telemetry: Telemetry;
beforeAll(() => {
  ({ telemetry } = startTestTelemetry("logger-test"));
});
afterAll(() => telemetry.shutdown());

function capture(): { lines: Array<Record<string, unknown>>; logger: ReturnType<typeof createLogger> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    service: "svc",
    level: "debug",
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  });
  return { lines, logger };
}

it("writes JSON lines with service, level label and no trace outside a span", () => {
  const { lines, logger } = capture();
  logger.info({ n: 1 }, "hello");
  expect(lines[0]).toMatchObject({ service: "svc", level: "info", msg: "hello", n: 1 });
  expect(lines[0]).not.toHaveProperty("trace_id");
});

it("adds the active span's trace_id and span_id", async () => {
  const { lines, logger } = capture();
  const ids = await withSpan("op", {}, (span) => {
    logger.info("inside");
    return Promise.resolve(span.spanContext());
  });
  expect(lines[0]).toMatchObject({ trace_id: ids.traceId, span_id: ids.spanId });
});

it("redacts secret fields at the top level, one level deep and in headers", () => {
  const { lines, logger } = capture();
  logger.info(
    {
      password: "p",
      creds: { access_token: "a", client_secret: "c" },
      req: { headers: { authorization: "Bearer x" } },
    },
    "secrets",
  );
  const text = JSON.stringify(lines[0]);
  for (const secret of ['"p"', '"a"', '"c"', "Bearer x"]) expect(text).not.toContain(secret);
  expect(lines[0]).toMatchObject({ password: "[redacted]", creds: { access_token: "[redacted]" } });
});

it("loggerFor binds session_id, seq and trace_id without duplicating the span's trace id", async () => {
  const { lines, logger } = capture();
  const traceId = "0af7651916cd43dd8448eb211c80319c";
  const child = loggerFor(logger, { sessionId: "sess_1", seq: 7n, traceId });
  child.info("no span");
  const ids = await withSpan("op", {}, (span) => {
    child.info("other trace");
    loggerFor(logger, { traceId: span.spanContext().traceId }).child({ x: 1 }).info("same trace");
    return Promise.resolve(span.spanContext());
  });
  expect(lines[0]).toMatchObject({ session_id: "sess_1", seq: "7", trace_id: traceId });
  expect(lines[1]).toMatchObject({ trace_id: traceId });
  expect(lines[1]).not.toHaveProperty("span_id");
  expect(lines[2]).toMatchObject({ trace_id: ids.traceId, span_id: ids.spanId, x: 1 });
});

it("loggerFor makes its child at the first line its parent's level writes, and writes the eager child's lines", () => {
  const lines: string[] = [];
  const logger = createLogger({ service: "svc", level: "warn", destination: { write: (line: string) => void lines.push(line) } });
  const made: unknown[] = [];
  const parentChild = logger.child.bind(logger);
  logger.child = ((bindings: Record<string, unknown>) => {
    made.push(bindings);
    return parentChild(bindings);
  });
  const lazy = loggerFor(logger, { sessionId: "sess_1", seq: 3 });
  lazy.info({ n: 1 }, "dropped");
  lazy.debug("dropped too");
  expect(made).toEqual([]);
  expect(lines).toEqual([]);
  lazy.warn({ n: 2 }, "written");
  lazy.error({ n: 3 }, "written too");
  expect(made).toEqual([{ session_id: "sess_1", seq: 3 }]);
  const eager = parentChild({ session_id: "sess_1", seq: 3 });
  eager.warn({ n: 2 }, "written");
  eager.error({ n: 3 }, "written too");
  const withoutTime = (line: string): unknown => ({ ...(JSON.parse(line) as Record<string, unknown>), time: undefined });
  expect(lines.slice(0, 2).map(withoutTime)).toEqual(lines.slice(2).map(withoutTime));
  expect(lazy.level).toBe("warn");
  expect(lazy.isLevelEnabled("info")).toBe(false);
});

it("logs errors with their stack and cause", () => {
  const { lines, logger } = capture();
  logger.error({ err: new Error("outer", { cause: new Error("inner") }) }, "failed");
  const err = lines[0]?.["err"] as { message: string; stack: string; cause?: { message: string } };
  expect(err.message).toBe("outer");
  expect(err.stack).toContain("logger.test");
  expect(err.cause?.message).toBe("inner");
});

it("redacts an error's secret fields once serialized, and a child's bindings", () => {
  const { lines, logger } = capture();
  const err = Object.assign(new Error("refused"), { token: "tok-1", code: "E1" });
  logger.child({ password: "pw-1", session_id: "s" }).error({ err }, "failed");
  const text = JSON.stringify(lines[0]);
  for (const secret of ["tok-1", "pw-1"]) expect(text).not.toContain(secret);
  expect(lines[0]).toMatchObject({ password: "[redacted]", session_id: "s", err: { message: "refused", token: "[redacted]", code: "E1" } });
});

it("redacts the secret fields of an error logged under another key than err, as pino's redact did", () => {
  const { lines, logger } = capture();
  // Not serialized (only err is): the line holds its own fields, token among them.
  const refused = Object.assign(new Error("refused"), { token: "tok-2", code: "E2" });
  logger.warn({ reason: refused }, "refused");
  expect(JSON.stringify(lines[0])).not.toContain("tok-2");
  expect(lines[0]).toMatchObject({ reason: { token: "[redacted]", code: "E2" } });
  // err itself still reaches its serializer as an error: message and stack kept, the field redacted.
  logger.error({ err: refused }, "failed");
  expect(lines[1]).toMatchObject({ err: { message: "refused", token: "[redacted]", code: "E2" } });
  expect((lines[1]?.["err"] as { stack: string }).stack).toContain("logger.test");
});
