/** Graceful shutdown: ordered steps, failures and timeouts turn into exit code 1, signals run it once. */
import { afterEach, describe, expect, it } from "vitest";
import { installShutdown, runShutdown, type ShutdownHandle } from "./shutdown.js";
import { capturingLogger, deferred } from "../testing.js";

describe("runShutdown", () => {
  it("runs the steps in order, logs each and resolves 0", async () => {
    const { logger, lines } = capturingLogger();
    const order: string[] = [];
    const step = (name: string) => ({ name, run: () => Promise.resolve(void order.push(name)) });
    expect(await runShutdown(logger, [step("grpc"), step("db"), step("telemetry")])).toBe(0);
    expect(order).toEqual(["grpc", "db", "telemetry"]);
    const done = lines.filter((l) => l["msg"] === "shutdown step done").map((l) => l["step"]);
    expect(done).toEqual(["grpc", "db", "telemetry"]);
  });

  it("keeps going after a failed step and resolves 1", async () => {
    const { logger, lines } = capturingLogger();
    const order: string[] = [];
    const code = await runShutdown(logger, [
      { name: "grpc", run: () => Promise.reject(new Error("drain failed")) },
      { name: "db", run: () => Promise.resolve(void order.push("db")) },
    ]);
    expect(code).toBe(1);
    expect(order).toEqual(["db"]);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: "error", step: "grpc", msg: "shutdown step failed" }),
    );
  });

  it("gives up after the timeout with 1, naming the step that hung", async () => {
    const { logger, lines } = capturingLogger();
    const stuck = { name: "stuck", run: () => new Promise<void>(() => undefined) };
    const code = await runShutdown(logger, [stuck], { timeoutMs: 20 });
    expect(code).toBe(1);
    expect(lines).toContainEqual(expect.objectContaining({ msg: "shutdown timed out", step: "stuck", timeoutMs: 20 }));
  });
});

describe("installShutdown", () => {
  let handle: ShutdownHandle | undefined;
  afterEach(() => handle?.uninstall());

  it("runs once on the first signal, exits with the code, and a second signal forces exit 1", async () => {
    const { logger } = capturingLogger();
    const exits: number[] = [];
    const release = deferred();
    let runs = 0;
    handle = installShutdown(
      logger,
      [{ name: "slow", run: () => ((runs += 1), release.promise) }],
      { exit: (code) => void exits.push(code), signals: ["SIGUSR2"] },
    );
    process.emit("SIGUSR2", "SIGUSR2");
    const running = handle.trigger("test");
    process.emit("SIGUSR2", "SIGUSR2");
    expect(exits).toEqual([1]);
    release.resolve();
    expect(await running).toBe(0);
    expect(runs).toBe(1);
    expect(exits).toEqual([1, 0]);
  });

  it("removes its handlers on uninstall", () => {
    const before = process.listenerCount("SIGUSR2");
    const { logger } = capturingLogger();
    const h = installShutdown(logger, [], { exit: () => undefined, signals: ["SIGUSR2"] });
    expect(process.listenerCount("SIGUSR2")).toBe(before + 1);
    h.uninstall();
    expect(process.listenerCount("SIGUSR2")).toBe(before);
  });
});
