/**
 * kill -9 of the sandbox broker while tools run in its sandboxes, then a restart on the same port
 * and database: every session's turn completes, each tool use has one result and the call ledger
 * ran none twice. Prints how long the broker was down and how long each session was held up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultStack, toolSteps, turnsMidTool, type FaultStack } from "../support/fault-stack.js";
import { percentiles, recovery, wholeness } from "../support/whole-session.js";

const STEPS = 4;
let stack: FaultStack;
beforeAll(async () => {
  stack = await startFaultStack({
    harnesses: 2,
    scenarios: [toolSteps("work", STEPS, 1)],
  });
});
afterAll(async () => {
  await stack?.stop();
});

describe("kill -9 of the sandbox broker mid-tool", () => {
  it("every turn completes, each tool use has one result, the ledger ran none twice", async () => {
    const before = await turnsMidTool(stack, 3, "[scenario:work] go");
    await stack.broker.kill("SIGKILL");
    const killedAt = Date.now();
    await stack.broker.start();
    const down = Date.now() - killedAt;
    const { sessions: done, nextEventMs } = await recovery(stack, before, killedAt, 60_000);
    const { problems, figures } = await wholeness(done, stack.brokerDbUrl);
    process.stdout.write(
      `  sandbox broker: down ${down} ms (restart to healthy); kill to each session's next event: ${percentiles(nextEventMs)}; ` +
        `${figures.toolUses} tool uses, ${figures.interrupted} interrupted, ${figures.errors} session.error\n`,
    );
    expect(problems).toEqual([]);
    expect(figures.toolUses).toBeGreaterThanOrEqual(STEPS * before.size);
  }, 120_000);
});
