/**
 * Stops kafkajs 2.2.4's idle timer loop (tulios/kafkajs#1556, #1704; unfixed upstream). Each
 * broker connection's RequestQueue, once a request has been answered, re-arms a timer whenever it
 * checks for pending requests, and with nothing pending and no throttle that timer is set to a
 * negative delay, so it fires within a millisecond and arms the next: about 1,800 timers a second
 * for a producer's two connections, 33 ms of CPU a second of an idle process (measured: a
 * connected producer idle for 5 s, 163-166 ms of CPU, 9,080-9,106 timers; 8.6-10.1 ms and none
 * with this), and more than half of the session log's timers while it relays. The check is kept
 * whenever it has work: requests pending (behind the in-flight limit or a throttle, as kafkajs
 * schedules them) or a throttle still running; a request answered checks the queue again anyway.
 * Applied once, to the kafkajs this package loads, by createKafkaBus; the version is pinned
 * (package.json), and the unit test fails on another one, so an upgrade looks at it again.
 */
import { createRequire } from "node:module";

/** The kafkajs this is written against: its RequestQueue.scheduleCheckPendingRequests. */
export const KAFKAJS_PATCHED_VERSION = "2.2.4";

interface RequestQueueLike {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: unknown;
}

interface RequestQueuePrototype {
  scheduleCheckPendingRequests: (this: RequestQueueLike) => void;
  mhIdleLoopStopped?: true;
}

const load = createRequire(import.meta.url);

/** The RequestQueue class of the kafkajs this package loads (its one copy of it). */
export function kafkajsRequestQueue(): { prototype: RequestQueuePrototype; new (options: object): RequestQueueLike } {
  return load("kafkajs/src/network/requestQueue/index.js") as { prototype: RequestQueuePrototype; new (options: object): RequestQueueLike };
}

/** Applies the fix once; does nothing for another kafkajs than KAFKAJS_PATCHED_VERSION. Returns whether it is applied. */
export function stopKafkajsIdleLoop(): boolean {
  const { version } = load("kafkajs/package.json") as { version: string };
  if (version !== KAFKAJS_PATCHED_VERSION) return false;
  const proto = kafkajsRequestQueue().prototype;
  if (proto.mhIdleLoopStopped === true) return true;
  const schedule = proto.scheduleCheckPendingRequests;
  proto.scheduleCheckPendingRequests = function (this: RequestQueueLike): void {
    if (this.pending.length === 0 && this.throttledUntil <= Date.now()) return;
    schedule.call(this);
  };
  proto.mhIdleLoopStopped = true;
  return true;
}
