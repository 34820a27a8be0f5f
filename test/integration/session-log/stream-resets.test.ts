/**
 * A client of the real session log (on real Postgres) that leaves thousands of watches early,
 * as the gateway leaves a watch for each SSE stream a client closes (and the harness a follow the
 * log did not end with its lease): each is an RST_STREAM, and the log's HTTP/2 server (nghttp2) closes a
 * connection past 1,000 of them plus 33 a second, failing every call on it. createClient's
 * channel moves its calls to fresh connections before that (service-kit reset-guard.ts): nothing
 * fails, and a watch open beside them all along sees every event. Without it this failed after
 * about 1,100 watches left ("Received RST_STREAM with code 2 ... Session closed with error code 2").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionLogClient, SessionLogService } from "@metaharness/proto";
import { ResetGuardedChannel, createClient, promisify } from "@metaharness/service-kit/grpc";
import { startTestLog, newSession, type TestLog } from "../../support/session-log.js";
import { userMessage } from "../../support/events.js";
import { eventually } from "../../support/eventually.js";

/** The server's allowance: 1,000 resets, then 33 a second (nghttp2's defaults in Node 20). */
const allowance = (seconds: number): number => 1_000 + 33 * (Math.ceil(seconds) + 1);
/** Watches left at least, and then until well past what the server allows over the run. */
const AT_LEAST = 3_000;
const PAST_BY = 300;
/** Watches at once. */
const CONCURRENCY = 20;
/** A machine too slow to end watches faster than the allowance refills would never get past it. */
const GIVE_UP_MS = 150_000;

let log: TestLog;

beforeAll(async () => {
  log = await startTestLog();
});
afterAll(async () => {
  await log?.stop();
});

describe("a client leaving watches early", () => {
  it(`leaves ${AT_LEAST}+ watches at well over 33 a second, past the server's allowance, beside a live watch and appends, and loses nothing`, async () => {
    const raw = createClient(SessionLogClient, `127.0.0.1:${log.handle.port}`, { bearerToken: log.tokens.tokens.admin });
    const client = promisify(raw, SessionLogService);
    const channel = raw.getChannel();
    const lanes = (): number => (channel instanceof ResetGuardedChannel ? channel.lanes() : 1);
    let mostLanes = 1;
    const shorts = await Promise.all(Array.from({ length: 4 }, () => newSession(client)));
    for (const sessionId of shorts) await client.emitEvent({ sessionId, event: userMessage("one") });
    const long = await newSession(client);

    const failures: string[] = [];
    const seen: number[] = [];
    const following = new AbortController();
    const watch = (async () => {
      for await (const { event } of client.watchEvents({ sessionId: long, afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false }, { signal: following.signal })) {
        if (event !== undefined) seen.push(event.seq);
      }
    })().catch((err: unknown) => {
      if (!following.signal.aborted) failures.push(`the live watch: ${String(err)}`);
    });

    /** Watches a session from its start, takes its first event and leaves: the client resets the stream. */
    const leaveEarly = async (sessionId: string): Promise<void> => {
      for await (const { event } of client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: false, batchDeltas: false, fromHead: false })) {
        if (event !== undefined) return;
      }
      throw new Error(`the watch of ${sessionId} ended before its first event`);
    };

    const started = performance.now();
    const seconds = (): number => (performance.now() - started) / 1000;
    let left = 0;
    let appended = 0;
    while (failures.length === 0 && (left < AT_LEAST || left < allowance(seconds()) + PAST_BY)) {
      if (performance.now() - started > GIVE_UP_MS) throw new Error(`only ${left} watches left in ${seconds().toFixed(0)} s: too slow to pass the allowance`);
      const batch: Promise<unknown>[] = [];
      for (let i = 0; i < CONCURRENCY; i++) batch.push(leaveEarly(shorts[i % shorts.length]!).then(() => void (left += 1)));
      batch.push(client.emitEvent({ sessionId: long, event: userMessage(`m${appended}`) }).then(() => void (appended += 1)));
      batch.push(client.getSession({ sessionId: long }));
      for (const outcome of await Promise.allSettled(batch)) {
        if (outcome.status === "rejected") failures.push(`after ${left} watches left: ${String(outcome.reason)}`);
      }
      mostLanes = Math.max(mostLanes, lanes());
    }
    const took = seconds();
    expect(failures.slice(0, 5)).toEqual([]);
    expect(left).toBeGreaterThan(allowance(took));

    await eventually(
      () => Promise.resolve(seen.length >= appended ? true : undefined),
      () => `the live watch to see ${appended} events (${seen.length})`,
      60_000,
    );
    expect(seen).toEqual(Array.from({ length: appended }, (_, i) => i + 1));
    expect(failures).toEqual([]);
    // The client's calls did move: more than one connection over the run.
    expect(mostLanes).toBeGreaterThan(1);
    following.abort();
    await watch;
    raw.close();
    console.log(`${left} watches left in ${took.toFixed(1)} s (${(left / took).toFixed(0)} a second; the server allows ${allowance(took)}), ${appended} appends seen live`);
  }, 240_000);
});
