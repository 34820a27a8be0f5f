/**
 * Each harness killed with SIGKILL in turn, again and again, while tool-heavy sessions run and the
 * harness killed before is still restarting: every session is whole at the end (no event lost or
 * written twice, each tool use with one result, no call run twice), and the recovery figures are
 * printed: kill to the lease taken over, kill to the resumed session's next event. The sessions'
 * workspaces agree: each step's command ran in one sandbox, at most once (a harness late but
 * alive, its lease taken over, once ran a session's first call a second time in a sandbox of its
 * own: test/integration/harness/sandbox-race.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultStack, stepRuns, toolSteps, type FaultStack, type StackService } from "../support/fault-stack.js";
import { eventually } from "../support/eventually.js";
import { countEvents, percentiles, recovery, turnEnded, wholeness } from "../support/whole-session.js";

const HARNESSES = 3;
const SESSIONS = 5;
const KILLS = 4;
const STEPS = 8;
let stack: FaultStack;
beforeAll(async () => {
  stack = await startFaultStack({ harnesses: HARNESSES, scenarios: [toolSteps("work", STEPS, 0.3)] });
});
afterAll(async () => {
  await stack?.stop();
});

/** The stack's harness whose life `holder` (an instance id "harness-<i>.<life>") is. */
const serviceOf = (holder: string | undefined): StackService | undefined => stack.harnesses.find((h) => holder?.startsWith(`${h.name}.`));

describe("harnesses killed again and again", () => {
  it("every session is whole; kill to take-over and to the next event printed", async () => {
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => stack.createSession()));
    for (const id of sessions) await stack.send(id, "[scenario:work] go");
    const takeOver: number[] = [];
    const nextEvent: number[] = [];
    let restarting: Promise<void> = Promise.resolve();
    for (let round = 0; round < KILLS; round++) {
      const victim = stack.harnesses[round % HARNESSES]!;
      // Wait until the victim holds a session (the sweeper spreads them), unless none is left to hold.
      const held: Array<{ id: string; holder: string }> = await eventually(async () => {
        const leases = await Promise.all(sessions.map(async (id) => ({ id, holder: (await stack.logClient.getSession({ sessionId: id })).session?.lease?.holder ?? "" })));
        const victims = leases.filter((l) => serviceOf(l.holder) === victim);
        return victims.length > 0 ? victims : undefined;
      }, `${victim.name} to hold a session`, 5_000).catch(() => []);
      if (!victim.running()) await restarting;
      const before = await countEvents(stack, held.map((h) => h.id));
      await victim.kill("SIGKILL");
      const killedAt = Date.now();
      // Started again in the background: the next round kills another while this one comes up.
      restarting = restarting.then(() => victim.start());
      await Promise.all(
        held.map(async ({ id, holder }) => {
          await eventually(
            async () => {
              const now = (await stack.logClient.getSession({ sessionId: id })).session?.lease?.holder;
              if (now !== undefined && now !== "" && now !== holder) return takeOver.push(Date.now() - killedAt);
              if (turnEnded(await stack.events(id))) return 0; // ended before anyone needed to take it
              return undefined;
            },
            () => `a harness to take ${id} over from ${holder}\n${stack.outputs()}`,
            20_000 - (Date.now() - killedAt),
          );
        }),
      );
      const { nextEventMs } = await recovery(stack, before, killedAt, 20_000, (e) => turnEnded(e) || e.length > before.get(e[0]!.sessionId)!);
      nextEvent.push(...nextEventMs);
    }
    await restarting;
    const { sessions: done } = await recovery(stack, await countEvents(stack, sessions), Date.now(), 90_000);
    const { problems, figures } = await wholeness(done, stack.brokerDbUrl);
    process.stdout.write(
      `  ${KILLS} kills of ${HARNESSES} harnesses: kill to lease taken over ${percentiles(takeOver)}; kill to the next event ${percentiles(nextEvent)}; ` +
        `${figures.toolUses} tool uses, ${figures.interrupted} interrupted, ${figures.errors} session.error; ` +
        `harness restarts to healthy: ${percentiles(stack.starts.filter((s) => s.name.startsWith("harness")).slice(HARNESSES).map((s) => s.ms))}\n`,
    );
    // The workspaces agree: each session's steps ran in one sandbox, none of them twice.
    for (const id of sessions) {
      const workspaces = await stepRuns(stack, id);
      const lines = workspaces.flat();
      if (workspaces.filter((w) => w.length > 0).length > 1) problems.push(`${id}: its steps ran in ${workspaces.length} sandboxes: ${JSON.stringify(workspaces)}`);
      if (new Set(lines).size !== lines.length) problems.push(`${id}: a step ran twice: ${lines.join(", ")}`);
    }
    expect(problems).toEqual([]);
    expect(takeOver.length).toBeGreaterThan(0);
  }, 200_000);
});
