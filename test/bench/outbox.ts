/**
 * Outbox: how long after an append its event reaches a real Kafka consumer, at a steady
 * 1,000 events/s (20 sessions, each appending every 20 ms on a fixed schedule, open loop), and
 * whether every event arrives. Lag = the consumer's receive time - the event's created_at (set by
 * the service when it appends; one machine, one clock). Why: analytics and harness wake-ups ride
 * on the topic, and the relay is a poll/poke loop whose batching and per-batch round trips
 * (SELECT, produce with acks=all, DELETE) decide that lag. Target: p99 < 250 ms, none lost,
 * counted by (session_id, seq).
 */
import type { Event } from "@metaharness/proto";
import { readTopic, type Received, type TopicReader } from "../support/kafka.js";
import { observe } from "./lib/observe.js";
import { atMost, cpuTable, exactly, LATENCY_COLUMNS, latencyCells, rate, type Bench } from "./lib/report.js";
import { benchEvent, startBenchLog, type BenchLog } from "./lib/service.js";
import { nowMs, sleep, summarize } from "./lib/stats.js";

const RATE = 1_000;
const SESSIONS = 20;
const WARMUP_MS = 2_000;
const MEASURE_MS = 10_000;
const DELIVERY_TIMEOUT_MS = 30_000;
/** The writers start this long after the schedule is laid out, so the first due times are not late. */
const LEAD_MS = 50;

interface Sent {
  readonly event: Event;
  readonly emitMs: number;
  readonly measured: boolean;
}

const keyOf = (e: Event): string => `${e.sessionId}:${e.seq}`;

/** Appends on a fixed schedule: event k of session i is due at start + offset_i + k * interval. */
async function pacedLoad(bench: BenchLog, sessions: readonly string[]): Promise<Sent[]> {
  const interval = (SESSIONS * 1000) / RATE;
  const start = nowMs() + LEAD_MS;
  const measureFrom = start + WARMUP_MS;
  const end = measureFrom + MEASURE_MS;
  const sent: Sent[] = [];
  const writer = async (sessionId: string, offset: number): Promise<void> => {
    for (let due = start + offset; due < end; due += interval) {
      const wait = due - nowMs();
      if (wait > 0) await sleep(wait);
      const t0 = nowMs();
      const { event } = await bench.client.emitEvent({ sessionId, event: benchEvent() });
      if (event === undefined) throw new Error("EmitEvent returned no event");
      sent.push({ event, emitMs: nowMs() - t0, measured: due >= measureFrom });
    }
  };
  await Promise.all(sessions.map((id, i) => writer(id, (i * interval) / SESSIONS)));
  return sent;
}

/** Waits until every measured event was received; returns false on timeout instead of throwing. */
async function awaitDelivery(reader: TopicReader, wanted: ReadonlySet<string>): Promise<boolean> {
  const seen = new Set<string>();
  let scanned = 0;
  const done = (received: Received[]): boolean => {
    for (; scanned < received.length; scanned++) {
      const r = received[scanned];
      if (r !== undefined && wanted.has(keyOf(r.event))) seen.add(keyOf(r.event));
    }
    return seen.size === wanted.size;
  };
  try {
    await reader.waitFor(done, DELIVERY_TIMEOUT_MS);
    return true;
  } catch {
    return false;
  }
}

export const outboxBench: Bench = {
  name: "outbox",
  title: `append-to-Kafka lag at ${rate(RATE)} events/s`,
  async run() {
    const bench = await startBenchLog();
    let reader: TopicReader | undefined;
    try {
      const sessions = await bench.newSessions(SESSIONS);
      reader = await readTopic(bench.topic);
      const [sent, observed] = await Promise.all([
        pacedLoad(bench, sessions),
        observe(LEAD_MS + WARMUP_MS, MEASURE_MS, { servicePid: bench.pid }),
      ]);
      const measured = sent.filter((s) => s.measured);
      const wanted = new Set(measured.map((s) => keyOf(s.event)));
      const complete = await awaitDelivery(reader, wanted);

      const firstReceipt = new Map<string, Received>();
      let duplicates = 0;
      for (const r of reader.received) {
        const key = keyOf(r.event);
        if (!wanted.has(key)) continue;
        if (firstReceipt.has(key)) duplicates += 1;
        else firstReceipt.set(key, r);
      }
      const lags = [...firstReceipt.values()].map((r) => r.receivedAt - (r.event.createdAt?.getTime() ?? Number.NaN));
      const lag = summarize(lags);
      const emit = summarize(measured.map((s) => s.emitMs));
      const lost = wanted.size - firstReceipt.size;
      const achieved = (measured.length * 1000) / MEASURE_MS;
      return {
        name: "outbox",
        title: this.title,
        tables: [
          {
            title: `${SESSIONS} sessions, paced, ${MEASURE_MS / 1000} s measured`,
            columns: ["figure", ...LATENCY_COLUMNS],
            rows: [
              ["append-to-consumer lag", ...latencyCells(lag)],
              ["EmitEvent latency meanwhile", ...latencyCells(emit)],
            ],
          },
          {
            title: "delivery",
            columns: ["appended", "events/s achieved", "received", "lost", "duplicates"],
            rows: [[measured.length, rate(achieved), firstReceipt.size, lost, duplicates]],
          },
          cpuTable("CPU while measuring", [["paced appends + relay + consumer", observed.cpu]]),
        ],
        checks: [
          atMost("lag p99 at 1,000 events/s", lag.p99, 250, "ms"),
          exactly("events lost (by session_id, seq)", lost, 0),
        ],
        notes: [
          `${WARMUP_MS / 1000} s warm-up at the same rate, not counted; then waited up to ${DELIVERY_TIMEOUT_MS / 1000} s for delivery${complete ? "" : " (TIMED OUT)"}`,
          `relay: poked in-process after each append batch, at most one drain per ${bench.config.relayLingerMs} ms, batch ${bench.config.relayBatchSize}, poll ${bench.config.relayPollMs} ms; topic with ${bench.config.topicPartitions} partitions`,
          "the service and its relay run as their own process; the consumer (kafkajs via @metaharness/event-bus) and the writers in the bench process",
        ],
        data: {
          lag,
          emit,
          appended: measured.length,
          achieved,
          received: firstReceipt.size,
          lost,
          duplicates,
          complete,
          cpu: observed.cpu,
        },
      };
    } finally {
      await reader?.close();
      await bench.stop();
    }
  },
};
