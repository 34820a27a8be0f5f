/**
 * PostgreSQL crashes mid-turn (`pg_ctl stop -m immediate`: every backend dies, nothing is flushed
 * at shutdown) and comes back on the same port: the session log, the sandbox broker and the
 * credential vault proxy reconnect, every session's turn completes, each tool use has one result
 * and the call ledger ran none twice. The server is the test's own (own-postgres.ts), never the
 * shared one. Prints how long the server was down and how long each session was held up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultStack, toolSteps, turnsMidTool, type FaultStack } from "../support/fault-stack.js";
import { startOwnPostgres, type OwnPostgres } from "../support/own-postgres.js";
import { percentiles, recovery, wholeness } from "../support/whole-session.js";

const STEPS = 4;
let postgres: OwnPostgres;
let stack: FaultStack;
beforeAll(async () => {
  postgres = await startOwnPostgres();
  stack = await startFaultStack({
    harnesses: 2,
    postgres,
    scenarios: [toolSteps("work", STEPS, 0.7)],
  });
});
afterAll(async () => {
  await stack?.stop();
  await postgres?.stop();
});

describe("PostgreSQL restarted mid-turn", () => {
  it("every turn completes, each tool use has one result, the ledger ran none twice", async () => {
    const before = await turnsMidTool(stack, 3, "[scenario:work] go");
    await postgres.crash();
    const crashedAt = Date.now();
    await postgres.start();
    const down = Date.now() - crashedAt;
    const { sessions: done, nextEventMs } = await recovery(stack, before, crashedAt, 60_000);
    const { problems, figures } = await wholeness(done, stack.brokerDbUrl);
    process.stdout.write(
      `  postgres: down ${down} ms; crash to each session's next event: ${percentiles(nextEventMs)}; ` +
        `${figures.toolUses} tool uses, ${figures.interrupted} interrupted, ${figures.errors} session.error\n`,
    );
    expect(problems).toEqual([]);
    expect(figures.toolUses).toBeGreaterThanOrEqual(STEPS * before.size);
    // Every service lived through it.
    expect([stack.log, stack.broker, stack.proxy, ...stack.harnesses].filter((s) => !s.running()).map((s) => s.name)).toEqual([]);
  }, 120_000);
});
