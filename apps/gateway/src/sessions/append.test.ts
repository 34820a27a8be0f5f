/**
 * When the gateway wakes a session's harness around the append of its input (append.ts): beside
 * it for a session not seen held lately, after it when the append found no lease and the early
 * Wake's harness had not read up to the input, and not at all while a lease is held. The log and
 * the harness are stand-ins here, to choose each answer and each order; the real ones are in
 * test/integration/gateway/wake-skip.test.ts and test/integration/harness/input-landing.test.ts.
 */
import { describe, expect, it } from "vitest";
import { newEvent } from "@metaharness/events";
import { WakeOutcome, type Event, type WakeRequest } from "@metaharness/proto";
import type { FastifyBaseLogger } from "fastify";
import type { HarnessRpc, SessionLogRpc } from "../clients.js";
import { appendUserEvents, type AppendDeps } from "./append.js";
import { LeaseHints } from "./lease-hints.js";

const SKIP_MS = 1_000;
const quiet = { warn: () => undefined } as unknown as FastifyBaseLogger;
const message = (): Event => newEvent("user.message", { content: [{ block: { $case: "text", value: { text: "hi" } } }] });

/** A stand-in log whose append lands at seq `inputSeq` leaving `leaseLeftMs`, and a harness answering `answers` in turn. */
function deps(opts: { inputSeq: number; leaseLeftMs: number; answers: Array<{ outcome: WakeOutcome; readSeq: number }>; hints?: LeaseHints }) {
  const wakes: WakeRequest[] = [];
  const log = {
    emitEvents: (req: { events: Event[] }) =>
      Promise.resolve({ events: req.events.map((e, i) => ({ ...e, seq: opts.inputSeq - req.events.length + 1 + i })), leaseLeftMs: opts.leaseLeftMs }),
  } as unknown as SessionLogRpc;
  const harness = {
    wake: (req: WakeRequest) => {
      wakes.push(req);
      const answer = opts.answers[wakes.length - 1] ?? { outcome: WakeOutcome.WAKE_OUTCOME_ALREADY_RUNNING, readSeq: 0 };
      return Promise.resolve({ ...answer, leaseHolder: "h" });
    },
  } as unknown as HarnessRpc;
  const ctx: AppendDeps = { log, harness, wakeTimeoutMs: 1_000, wakeSkipLeaseMs: SKIP_MS, leaseHints: opts.hints ?? new LeaseHints() };
  return { ctx, wakes };
}

const STARTED = WakeOutcome.WAKE_OUTCOME_STARTED;

describe("the Wakes around an append of input", () => {
  it("wakes once, beside the append, when the harness read up to the input (it took the lease after the input landed)", async () => {
    const { ctx, wakes } = deps({ inputSeq: 1, leaseLeftMs: 0, answers: [{ outcome: STARTED, readSeq: 1 }] });
    await appendUserEvents(ctx, "s", [message()], quiet);
    expect(wakes.map((w) => w.inputLanding)).toEqual([true]);
  });

  it("wakes once when the early Wake's harness holds the lease as the input lands", async () => {
    const { ctx, wakes } = deps({ inputSeq: 1, leaseLeftMs: 20_000, answers: [{ outcome: STARTED, readSeq: 0 }] });
    await appendUserEvents(ctx, "s", [message()], quiet);
    expect(wakes).toHaveLength(1);
  });

  it("wakes again when that harness read less than the input and the append found no lease (it let the session go first)", async () => {
    const { ctx, wakes } = deps({ inputSeq: 3, leaseLeftMs: 0, answers: [{ outcome: STARTED, readSeq: 2 }] });
    await appendUserEvents(ctx, "s", [message()], quiet);
    expect(wakes.map((w) => w.inputLanding ?? false)).toEqual([true, false]);
  });

  it("wakes again after an early Wake that did not say how far it read (an older harness), failed, or found the lease elsewhere", async () => {
    for (const answer of [{ outcome: STARTED, readSeq: 0 }, { outcome: WakeOutcome.WAKE_OUTCOME_HELD_ELSEWHERE, readSeq: 0 }]) {
      const { ctx, wakes } = deps({ inputSeq: 1, leaseLeftMs: 0, answers: [answer] });
      await appendUserEvents(ctx, "s", [message()], quiet);
      expect(wakes).toHaveLength(2);
    }
  });

  it("while a harness is known to hold the lease, waits for the append and skips the Wake its answer shows needless", async () => {
    const hints = new LeaseHints();
    hints.heard("s", 30_000);
    const { ctx, wakes } = deps({ inputSeq: 5, leaseLeftMs: 25_000, answers: [], hints });
    await appendUserEvents(ctx, "s", [message()], quiet);
    expect(wakes).toHaveLength(0);
  });

  it("wakes nothing for system.message alone", async () => {
    const { ctx, wakes } = deps({ inputSeq: 1, leaseLeftMs: 0, answers: [] });
    await appendUserEvents(ctx, "s", [newEvent("system.message", { content: [{ block: { $case: "text", value: { text: "note" } } }] })], quiet);
    expect(wakes).toHaveLength(0);
  });
});
