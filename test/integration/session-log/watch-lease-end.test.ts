/**
 * WatchEvents with end_with_lease against the real session log: the watch a harness follows its
 * session with ends, with OK, once the lease it names is over (given back, taken over by another
 * harness, run out as an append set it), so the harness leaves it without cancelling (a reset on
 * both sides); a watch that does not ask keeps the old behaviour and stays open.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeltaKind, type Event } from "@metaharness/proto";
import { startTestLog, newSession, type LogClient, type TestLog } from "../../support/session-log.js";
import { agentMessage, userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

let log: TestLog;
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false", MH_WATCH_RECHECK_MS: "60000" });
});
afterAll(async () => {
  await log?.stop();
});

const PROBE = "sevt_probe";

interface Watching {
  /** The events sent, once the stream ended by itself (a failure rejects). */
  readonly ended: Promise<Event[]>;
  /** Events so far. */
  readonly events: Event[];
  readonly done: () => boolean;
  /** Leaves the watch (a client that does not wait for its end). */
  readonly leave: () => void;
}

/** A watch read until the log ends it (or `leave()`); deltas asked for only so that a probe shows it subscribed. */
function watch(client: LogClient, req: { sessionId: string; exceptLeaseEpoch?: number; endWithLease?: boolean }): Watching & { probed: () => boolean } {
  const events: Event[] = [];
  let probed = false;
  let done = false;
  const leaving = new AbortController();
  const ended = (async () => {
    const stream = client.watchEvents(
      { sessionId: req.sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false, exceptLeaseEpoch: req.exceptLeaseEpoch, endWithLease: req.endWithLease },
      { signal: leaving.signal },
    );
    try {
      for await (const msg of stream) {
        if (msg.delta?.modelRequestId === PROBE) probed = true;
        if (msg.event !== undefined) events.push(msg.event);
      }
    } finally {
      done = true;
    }
    return events;
  })();
  ended.catch(() => undefined);
  return { ended, events, done: () => done, leave: () => leaving.abort(), probed: () => probed };
}

/** Resolves once every watch of the session got a probe delta: they hear what comes next live. */
async function subscribed(sessionId: string, ...watches: Array<{ probed: () => boolean }>): Promise<void> {
  const probe = { sessionId, modelRequestId: PROBE, blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text: "probe", emittedAt: undefined };
  await eventually(async () => {
    if (watches.every((w) => w.probed())) return true;
    await log.client.publishDeltas({ sessionId, deltas: [probe] });
    return undefined;
  }, `the watches of ${sessionId} to receive a probe delta`);
}

describe("a watch that ends with its lease (end_with_lease)", () => {
  it("ends with OK when the lease is given back, after what came before; a watch that does not ask stays open and gets what follows", async () => {
    const sessionId = await newSession(log.client);
    const { lease } = await log.client.acquireLease({ sessionId, holder: "hold_end_release", ttlMs: 30_000 });
    const epoch = lease!.epoch;
    const ending = watch(log.client, { sessionId, exceptLeaseEpoch: epoch, endWithLease: true });
    const except = watch(log.client, { sessionId, exceptLeaseEpoch: epoch });
    const plain = watch(log.client, { sessionId });
    await subscribed(sessionId, ending, except, plain);
    await log.client.emitEvents({ sessionId, events: [userMessage("a client's")] });
    await log.client.emitEvents({ sessionId, events: [agentMessage("own")], leaseEpoch: epoch });
    await eventually(() => Promise.resolve(ending.events.length === 1 && plain.events.length === 2 ? true : undefined), "the watches to get the appends");
    expect(ending.done()).toBe(false);
    await log.client.releaseLease({ sessionId, holder: "hold_end_release", epoch });
    expect((await ending.ended).map((e) => e.seq)).toEqual([1]);
    // Released, and taken by another: the watches that did not ask still follow.
    await log.client.acquireLease({ sessionId, holder: "hold_end_release_next", ttlMs: 30_000 });
    await log.client.emitEvents({ sessionId, events: [userMessage("after the release")] });
    await eventually(() => Promise.resolve(except.events.length === 2 && plain.events.length === 3 ? true : undefined), "the other watches to get the later append");
    expect(except.done() || plain.done()).toBe(false);
    except.leave();
    plain.leave();
  });

  it("ends when another harness takes the lease over, and not before", async () => {
    const sessionId = await newSession(log.client);
    // The shortest lease there is: it runs out unrenewed, and another holder takes it.
    const { lease } = await log.client.acquireLease({ sessionId, holder: "hold_end_first", ttlMs: 500 });
    const ending = watch(log.client, { sessionId, exceptLeaseEpoch: lease!.epoch, endWithLease: true });
    await subscribed(sessionId, ending);
    // Nothing told the watch when the first lease runs out (it began after the acquire): the
    // takeover, refused until then, is what ends it.
    let taken = false;
    await eventually(async () => {
      expect(ending.done()).toBe(false);
      const next = await log.client.acquireLease({ sessionId, holder: "hold_end_second", ttlMs: 30_000 }).catch(() => undefined);
      taken = next?.lease?.epoch === lease!.epoch + 1;
      return taken ? true : undefined;
    }, "the second holder to take the lease once the first ran out");
    expect(taken).toBe(true);
    await expect(ending.ended).resolves.toEqual([]);
  });

  it("ends when its holder's renewal is refused, the lease given back through another log instance", async () => {
    const sessionId = await newSession(log.client);
    const { lease } = await log.client.acquireLease({ sessionId, holder: "hold_end_renew", ttlMs: 30_000 });
    const epoch = lease!.epoch;
    const ending = watch(log.client, { sessionId, exceptLeaseEpoch: epoch, endWithLease: true });
    await subscribed(sessionId, ending);
    // This instance is told nothing of a release through another: the watch runs on.
    const replica = await log.startReplica();
    await replica.client.releaseLease({ sessionId, holder: "hold_end_renew", epoch });
    expect(ending.done()).toBe(false);
    // The holder's renewal through this instance, refused, is what it learns.
    await expect(log.client.renewLease({ sessionId, holder: "hold_end_renew", epoch, ttlMs: 30_000 })).rejects.toMatchObject({ code: "ABORTED" });
    await eventually(() => Promise.resolve(ending.done() ? true : undefined), "the watch to end after the refused renewal");
    await expect(ending.ended).resolves.toEqual([]);
  });

  it("ends when the lease runs out as an append under it set it, with no call to end it", async () => {
    const sessionId = await newSession(log.client);
    const { lease } = await log.client.acquireLease({ sessionId, holder: "hold_end_runs_out", ttlMs: 30_000 });
    const ending = watch(log.client, { sessionId, exceptLeaseEpoch: lease!.epoch, endWithLease: true });
    await subscribed(sessionId, ending);
    const setAt = performance.now();
    // A turn's last append: the lease runs 600 ms from it, and then nobody renews or releases it.
    const { leaseLeftMs } = await log.client.emitEvents({ sessionId, events: [agentMessage("done")], leaseEpoch: lease!.epoch, leaseTtlMs: 600 });
    expect(leaseLeftMs).toBeGreaterThan(0);
    await expect(ending.ended).resolves.toEqual([]);
    // Not before the time the append set (less the request's own way here).
    expect(performance.now() - setAt).toBeGreaterThanOrEqual(500);
  });

  it("refuses end_with_lease without except_lease_epoch, naming the field", async () => {
    const sessionId = await newSession(log.client);
    await expect(watch(log.client, { sessionId, endWithLease: true }).ended).rejects.toMatchObject({ code: "INVALID_ARGUMENT", field: "end_with_lease" });
  });
});
