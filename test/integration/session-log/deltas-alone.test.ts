/**
 * A session log that is the only instance keeps its token deltas to its own watchers and its
 * appends unannounced: no NOTIFY of either (watch/peers.ts, migrations/008), while it still says it
 * is there every 2 s for instances to come. Delivery across instances, once there are two, is
 * watch.test.ts's.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import pg from "pg";
import { DeltaKind, EventDelta } from "@metaharness/proto";
import { newSession, startTestLog, type TestLog } from "../../support/session-log.js";
import { eventually } from "../../support/eventually.js";
import { userMessage } from "../../support/events.js";

let log: TestLog;
let listener: pg.Client;
/** What came on mh_deltas: the sessions of the deltas, "" for an instance's announcement. */
const heard: string[] = [];
/** What came on mh_events: each NOTIFY's items ("<session_id>:<last_seq>"). */
const appends: string[] = [];
beforeAll(async () => {
  log = await startTestLog({ MH_RELAY_ENABLED: "false", MH_WATCH_RECHECK_MS: "60000" });
  listener = new pg.Client({ connectionString: log.db.url });
  await listener.connect();
  listener.on("notification", (msg) => {
    const items = (msg.payload ?? "").slice((msg.payload ?? "").indexOf("|") + 1).split(";");
    if (msg.channel === "mh_events") appends.push(...items);
    else for (const item of items) heard.push(EventDelta.decode(Buffer.from(item, "base64")).sessionId);
  });
  await listener.query("LISTEN mh_deltas");
  await listener.query("LISTEN mh_events");
});
afterAll(async () => {
  await listener?.end();
  await log?.stop();
});

it("sends no NOTIFY of deltas when it is the only instance, and still announces itself", async () => {
  const sessionId = await newSession(log.client);
  const got: string[] = [];
  const controller = new AbortController();
  const watching = (async () => {
    for await (const msg of log.client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false }, { signal: controller.signal })) {
      if (msg.delta !== undefined) got.push(msg.delta.text);
    }
  })().catch(() => undefined);
  const delta = { sessionId: "", modelRequestId: "sevt_req", blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text: "tok", emittedAt: undefined };
  // Until it is sure it is alone (its first 6 s), it sends them; then it keeps them to itself.
  // After a publish, the next announcement comes after anything that publish would have sent.
  await eventually(
    async () => {
      const mark = heard.length;
      await log.client.publishDeltas({ sessionId, deltas: [delta] });
      await eventually(() => Promise.resolve(heard.slice(mark).includes("") ? true : undefined), "the next announcement");
      return heard.slice(mark).includes(sessionId) ? undefined : true;
    },
    "a publish with no NOTIFY of its deltas",
    60_000,
  );
  await eventually(() => Promise.resolve(got.length > 0 ? true : undefined), "the deltas at this instance's own watcher");
  expect(got.every((t) => t === "tok")).toBe(true);
  controller.abort();
  await watching;
});

it("sends no NOTIFY of its appends when it is the only instance, and its own watchers still get them at once", async () => {
  const sessionId = await newSession(log.client);
  // As with deltas: announced until it is sure it is alone, then not. The next announcement of
  // the instance comes after any NOTIFY the append's commit sent.
  let seq = 0;
  await eventually(
    async () => {
      const mark = { appends: appends.length, heard: heard.length };
      seq = (await log.client.emitEvent({ sessionId, event: userMessage("unheard") })).event!.seq;
      await eventually(() => Promise.resolve(heard.slice(mark.heard).includes("") ? true : undefined), "the next announcement");
      return appends.slice(mark.appends).some((item) => item.startsWith(`${sessionId}:`)) ? undefined : true;
    },
    "an append with no NOTIFY",
    60_000,
  );
  // A watcher at the head, then an append: the watch re-reads only every 60 s here, so if it
  // starts before the append, the append's poke within the instance is what brings it.
  const controller = new AbortController();
  const next = (async () => {
    for await (const msg of log.client.watchEvents({ sessionId, afterSeq: seq, types: [], includeDeltas: false, batchDeltas: false, fromHead: false }, { signal: controller.signal })) {
      if (msg.event !== undefined) return msg.event;
    }
    return undefined;
  })();
  const mark = appends.length;
  await log.client.emitEvent({ sessionId, event: userMessage("watched") });
  const got = await next;
  controller.abort();
  expect(got?.seq).toBe(seq + 1);
  expect(appends.slice(mark).some((item) => item.startsWith(`${sessionId}:`))).toBe(false);
});
