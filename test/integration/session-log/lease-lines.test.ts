/**
 * Holders' lines (HoldLeases): a holder whose line ends (its process died, its connection closed)
 * loses its leases at once, not at their expiry, and the other lines, on every instance of the
 * log, hear which sessions need a harness now; an old holder cut off without dying is fenced
 * by the epoch the next holder takes. A log that stops ends its lines without freeing anything.
 * The leases here run 60 s: anything freed within the test's waits was not freed by expiry.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newSession as newSessionOf, rejection, startTestLog, type LogClient, type TestLog } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";

const TTL_MS = 60_000;
/** Far below the TTL: what happens within it happened without expiry. */
const WITHIN_MS = 10_000;

let log: TestLog;
let harness: LogClient;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false" });
  harness = log.clientAs("harness");
});
afterAll(async () => {
  await log?.stop();
});

interface Line {
  /** Resolves when the log says the line is held. */
  readonly held: Promise<void>;
  /** Every session id the line heard of. */
  readonly heard: string[];
  /** Ends the line from this side, as a dying process's kernel does. */
  cut(): void;
  /** Resolves when the line has ended, with its error if any. */
  readonly ended: Promise<unknown>;
}

function openLine(client: LogClient, holder: string): Line {
  const controller = new AbortController();
  const heard: string[] = [];
  let markHeld: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (markHeld = resolve));
  const ended = (async (): Promise<unknown> => {
    try {
      for await (const m of client.holdLeases({ holder }, { signal: controller.signal, deadlineMs: undefined })) {
        markHeld();
        heard.push(...m.freedSessionIds);
      }
      return undefined;
    } catch (err) {
      return err;
    }
  })();
  return { held, heard, cut: () => controller.abort(), ended };
}

/** A session with a user's message waiting: it needs a harness. */
async function waitingSession(): Promise<string> {
  const sessionId = await newSessionOf(log.client);
  await log.client.emitEvent({ sessionId, event: userMessage("hello") });
  return sessionId;
}

const holderOf = async (client: LogClient, sessionId: string): Promise<string | undefined> =>
  (await client.getSession({ sessionId })).session?.lease?.holder;

describe("a holder's line to the log", () => {
  it("frees the holder's leases when it ends, tells the other lines, and the old holder is fenced", async () => {
    const [s1, s2] = [await waitingSession(), await waitingSession()];
    const a = openLine(harness, "line-a");
    await a.held;
    const a1 = (await harness.acquireLease({ sessionId: s1, holder: "line-a", ttlMs: TTL_MS })).lease!;
    const a2 = (await harness.acquireLease({ sessionId: s2, holder: "line-a", ttlMs: TTL_MS })).lease!;
    await harness.emitEvent({ sessionId: s1, event: agentMessage("a writes"), leaseEpoch: a1.epoch });
    // The other harness listens through another instance of the log: the news crosses instances.
    const replica = await log.startReplica();
    const b = openLine(replica.client, "line-b");
    await b.held;

    const cutAt = Date.now();
    a.cut();
    await expect.poll(() => holderOf(harness, s1), { timeout: WITHIN_MS, interval: 20 }).toBeUndefined();
    expect(await holderOf(harness, s2)).toBeUndefined();
    await expect.poll(() => [...b.heard].sort(), { timeout: WITHIN_MS, interval: 20 }).toEqual([s1, s2].sort());
    process.stdout.write(`  a line's end to its leases freed and heard elsewhere: ${Date.now() - cutAt} ms (TTL ${TTL_MS} ms)\n`);

    // A was only cut off: it still writes and renews with its epoch, and is refused once B holds.
    const b1 = (await replica.client.acquireLease({ sessionId: s1, holder: "line-b", ttlMs: TTL_MS })).lease!;
    expect(b1.epoch).toBe(a1.epoch + 1);
    const stale = await rejection(harness.emitEvent({ sessionId: s1, event: agentMessage("a again"), leaseEpoch: a1.epoch }));
    expect(stale).toMatchObject({ code: "ABORTED", field: "lease_epoch" });
    expect((await rejection(harness.renewLease({ sessionId: s1, holder: "line-a", epoch: a1.epoch, ttlMs: TTL_MS }))).code).toBe("ABORTED");
    // Nobody took s2 yet: A's renewal is refused all the same (its lease was freed), so A stops.
    expect((await rejection(harness.renewLease({ sessionId: s2, holder: "line-a", epoch: a2.epoch, ttlMs: TTL_MS }))).code).toBe("ABORTED");
    await replica.client.emitEvent({ sessionId: s1, event: agentMessage("b writes"), leaseEpoch: b1.epoch });
    b.cut();
    await b.ended;
    await replica.handle.stop();
  });

  it("frees nothing while another line of the same holder stays open", async () => {
    const s = await waitingSession();
    const first = openLine(harness, "line-twice");
    const second = openLine(harness, "line-twice");
    await Promise.all([first.held, second.held]);
    await harness.acquireLease({ sessionId: s, holder: "line-twice", ttlMs: TTL_MS });
    first.cut();
    await first.ended;
    // Both ends are seen in order on one connection; a probe line proves the first end was handled.
    const probe = openLine(harness, "line-probe");
    await probe.held;
    expect(await holderOf(harness, s)).toBe("line-twice");
    second.cut();
    await expect.poll(() => holderOf(harness, s), { timeout: WITHIN_MS, interval: 20 }).toBeUndefined();
    probe.cut();
  });

  it("tells the lines of a lease given back mid-turn", async () => {
    const s = await waitingSession();
    const listener = openLine(harness, "line-listener");
    await listener.held;
    const { lease } = await harness.acquireLease({ sessionId: s, holder: "line-giver", ttlMs: TTL_MS });
    await harness.releaseLease({ sessionId: s, holder: "line-giver", epoch: lease!.epoch });
    await expect.poll(() => listener.heard, { timeout: WITHIN_MS, interval: 20 }).toContain(s);
    listener.cut();
  });

  it("ends its lines when the log stops, and frees nothing then", async () => {
    const s = await waitingSession();
    const replica = await log.startReplica();
    const line = openLine(replica.client, "line-on-a-stopping-log");
    await line.held;
    await replica.client.acquireLease({ sessionId: s, holder: "line-on-a-stopping-log", ttlMs: TTL_MS });
    const stopAt = Date.now();
    await replica.handle.stop();
    // Ended by the log at once, not after the server's 5 s drain.
    expect(Date.now() - stopAt).toBeLessThan(4000);
    await line.ended;
    expect(await holderOf(harness, s)).toBe("line-on-a-stopping-log");
  });

  it("refuses a bad holder, naming it", async () => {
    const line = openLine(harness, "");
    const err = await line.ended;
    expect(err).toMatchObject({ code: "INVALID_ARGUMENT", field: "holder" });
  });
});
