/**
 * How the turn-cpu benchmark drives its services, by one of two ways in (`Via`,
 * turn-cpu-clients.ts: gRPC with the bench playing the gateway, or the official SDK through the
 * gateway), each turn waited for to the session.status_idle that ends it.
 * Sessions come in one of two patterns:
 * - closed loop: `sessions` workers, each running sessions of `turnsPerSession` turns back to back;
 *   paced (`turnsPerSecond` given), each worker's turns arrive as a Poisson process of its share of
 *   that rate instead of one after the other, a turn that arrives while the one before it runs
 *   being sent when it ends: so many sessions open at once carrying a stated pace, as users at
 *   their keyboards do, rather than as fast as the machine turns them;
 * - open loop: turns arriving as a Poisson process at a stated rate, each in a new session of one
 *   turn, whether or not earlier turns have ended (the closed loop with a fixed model TTFT starts
 *   its sessions' turns in convoys; arrivals at random moments do not).
 * Each turn is timed from the client's send of its user.message; the model's own TTFT of its
 * request (the offline model's receipt to its first delta written) is found by a marker in the
 * message that names the session and the turn.
 */
import { performance } from "node:perf_hooks";
import type { RecordedRequest } from "@metaharness/offline-model";
import { sessionClient, type SessionClient } from "./turn-cpu-clients.js";
import { SCENARIO, type TurnStack } from "./turn-cpu-stack.js";

export type { Via } from "./turn-cpu-clients.js";

/**
 * Where a turn's platform share went, ms (performance.now() of the bench process, where the SDK
 * client, the gRPC clients and the offline model all run: sub-millisecond): the client's
 * EmitEvent(user.message) round trip; its Wake round trip (the lease and the short log's read
 * inside it); Wake's return to the model's receipt of the request (the harness's context, the
 * SDK, HTTP); the model's first delta written to its arrival at the watcher (the harness,
 * PublishDeltas, the log's fan-out). Through the SDK: `emit` is events.send's round trip (the
 * gateway's append and Wake), `wake` NaN (inside it), `toModel` from the send, and `fromModel`
 * to the first preview frame at the SDK client (the gateway's stream too).
 */
export interface Segments {
  readonly emit: number;
  readonly wake: number;
  readonly toModel: number;
  readonly fromModel: number;
}

export const SEGMENT_KEYS: ReadonlyArray<keyof Segments> = ["emit", "wake", "toModel", "fromModel"];

export interface Turn {
  /** Which turn of its session, from 1. */
  readonly index: number;
  /** user.message sent -> session.status_idle at the watcher. */
  readonly turnMs: number;
  /** user.message sent -> first token delta at the watcher; NaN when none came. */
  readonly ttftMs: number;
  /** TTFT less the model's own TTFT of the turn's request. */
  readonly overheadMs: number;
  readonly segments: Segments;
  /** Open loop: the turn's arrival (as scheduled) -> its user.message sent (CreateSession, the watch opened, this process's own lateness); 0 in a closed loop. */
  readonly lateMs: number;
}

/** The pattern of the load. */
export type TurnLoop =
  | { readonly kind: "closed"; readonly sessions: number; readonly turnsPerSession: number; readonly turnsPerSecond?: number }
  | { readonly kind: "open"; readonly turnsPerSecond: number };

export const loopLabel = (l: TurnLoop): string =>
  l.kind === "closed"
    ? `${l.sessions} session${l.sessions === 1 ? "" : "s"}, ${l.turnsPerSecond === undefined ? "closed loop" : `paced at ${l.turnsPerSecond} turns/s`}, ${l.turnsPerSession} turn${l.turnsPerSession === 1 ? "" : "s"} each`
    : `open loop, Poisson arrivals at ${l.turnsPerSecond.toFixed(1)} turns/s, 1 turn each`;

/** The model's requests by the marker of the turn that sent them, indexed once as they come. */
class ModelRequests {
  private seen = 0;
  private readonly byMarker = new Map<string, RecordedRequest>();

  constructor(private readonly model: TurnStack["model"]) {}

  /** The first request whose last message carries `marker` (a later turn's request repeats earlier ones). */
  take(marker: string): RecordedRequest | undefined {
    const records = this.model.requests;
    let i = records.length;
    while (i > 0 && records[i - 1]!.seq > this.seen) i--;
    for (; i < records.length; i++) {
      const r = records[i]!;
      this.seen = r.seq;
      const messages = (r.body as { messages?: unknown[] } | undefined)?.messages;
      const m = /<(sesn_[A-Za-z0-9]+#\d+)>/.exec(JSON.stringify(messages?.[messages.length - 1] ?? null))?.[1];
      if (m !== undefined && !this.byMarker.has(m)) this.byMarker.set(m, r);
    }
    const found = this.byMarker.get(marker);
    this.byMarker.delete(marker);
    return found;
  }
}


export interface SessionRun {
  readonly turnsPerSession: number;
  /** Asked before each turn: false ends the session early. */
  readonly more: () => boolean;
  readonly onTurn: (t: Turn) => void;
  /** Open loop: when the session's first turn arrived (performance.now()). */
  readonly arrivedAt?: number;
  /** Paced: waits for each turn's arrival and returns when it was (performance.now()). */
  readonly arrival?: () => Promise<number>;
}

/** One session of `turnsPerSession` turns (fewer if `more()` says so), watched throughout. */
export async function runSession(stack: TurnStack, client: SessionClient, models: ModelIndex, run: SessionRun): Promise<void> {
  const { sessionId, watch } = await client.open();
  try {
    for (let k = 1; k <= run.turnsPerSession && (k === 1 || run.more()); k++) {
      const marker = `${sessionId}#${k}`;
      const arrivedAt = run.arrival === undefined ? (k === 1 ? run.arrivedAt : undefined) : await run.arrival();
      watch.firstDelta = undefined;
      // The offline model runs in this process: its receivedPerf and firstDeltaPerf are on this clock.
      const t0 = performance.now();
      const { emitted, woken } = await client.send(sessionId, `[scenario:${SCENARIO}] <${marker}>`);
      await watch.idle(k);
      const turnMs = performance.now() - t0;
      const first = watch.firstDelta as number | undefined;
      const rec = models.take(marker);
      const modelTtft = (rec?.firstDeltaPerf ?? NaN) - (rec?.receivedPerf ?? NaN);
      const ttftMs = (first ?? NaN) - t0;
      run.onTurn({
        index: k,
        turnMs,
        ttftMs,
        overheadMs: ttftMs - modelTtft,
        segments: {
          emit: emitted - t0,
          // Through the SDK the append and the Wake are one request: its round trip is `emit`.
          wake: stack.gateway === undefined ? woken - emitted : NaN,
          // Through the SDK the send returns after its Wake, so after the request left: timed from the send.
          toModel: (rec?.receivedPerf ?? NaN) - (stack.gateway === undefined ? woken : t0),
          fromModel: (first ?? NaN) - (rec?.firstDeltaPerf ?? NaN),
        },
        lateMs: arrivedAt === undefined ? 0 : t0 - arrivedAt,
      });
    }
  } finally {
    await watch.close();
  }
}

export type ModelIndex = ModelRequests;
export const modelIndex = (stack: TurnStack): ModelIndex => new ModelRequests(stack.model);

export interface Window {
  /** Called when the warm-up ends; the measured window starts once it has returned. */
  readonly atStart: () => void | Promise<void>;
  /** Called when the window ends (turns in flight then finish unmeasured). */
  readonly atEnd: () => void | Promise<void>;
}

export interface LoopResult {
  /** Turns that ended inside the window. */
  readonly turns: readonly Turn[];
  /** The window's length as it was (its end is a timer). */
  readonly seconds: number;
  /** Open and paced loops: arrivals in the window, and (open) those not started because `maxInFlight` turns were running. */
  readonly arrivals: number;
  readonly refused: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** The gap to the next arrival of a Poisson process of `perSecond`, ms (exponentially distributed). */
const poissonGapMs = (perSecond: number): number => (-Math.log(1 - Math.random()) * 1000) / perSecond;

/**
 * Runs `loop` for `warmupSeconds` then `seconds` measured, calling `window` at the two edges. A
 * failed session stops the others and is thrown after them all, so the caller's cleanup runs
 * with nothing left in flight.
 */
export async function drive(stack: TurnStack, loop: TurnLoop, phase: { warmupSeconds: number; seconds: number; maxInFlight?: number }, window: Window): Promise<LoopResult> {
  const models = modelIndex(stack);
  const client = sessionClient(stack);
  const turns: Turn[] = [];
  const failures: unknown[] = [];
  let measuring = false;
  let stopAt = Number.POSITIVE_INFINITY;
  const more = (): boolean => failures.length === 0 && Date.now() < stopAt;
  const onTurn = (t: Turn): void => {
    if (measuring) turns.push(t);
  };
  const guard = (p: Promise<void>): Promise<void> =>
    p.catch((err: unknown) => {
      failures.push(err);
    });
  const running = new Set<Promise<void>>();
  let arrivals = 0;
  let refused = 0;
  let generator: Promise<void>;
  if (loop.kind === "closed") {
    const rate = loop.turnsPerSecond;
    generator = Promise.all(
      Array.from({ length: loop.sessions }, () =>
        guard(
          (async () => {
            // Paced: this worker's turns on absolute times, its share of the rate (a Poisson process each).
            let next = performance.now();
            const arrival =
              rate === undefined
                ? undefined
                : async (): Promise<number> => {
                    next += poissonGapMs(rate / loop.sessions);
                    await sleep(next - performance.now());
                    if (measuring) arrivals++;
                    return next;
                  };
            while (more()) await runSession(stack, client, models, { turnsPerSession: loop.turnsPerSession, more, onTurn, ...(arrival === undefined ? {} : { arrival }) });
          })(),
        ),
      ),
    ).then(() => undefined);
  } else {
    const maxInFlight = phase.maxInFlight ?? 256;
    generator = (async () => {
      let next = performance.now();
      while (more()) {
        // Exponential gaps: a Poisson process of the stated rate, scheduled on absolute times so
        // that this process's own lateness does not thin the arrivals.
        next += poissonGapMs(loop.turnsPerSecond);
        await sleep(next - performance.now());
        if (!more()) break;
        if (measuring) arrivals++;
        if (running.size >= maxInFlight) {
          if (measuring) refused++;
          continue;
        }
        const p = guard(runSession(stack, client, models, { turnsPerSession: 1, more, onTurn, arrivedAt: next })).finally(() => running.delete(p));
        running.add(p);
      }
      await Promise.all(running);
    })();
  }
  let opened = 0;
  let closed = 0;
  try {
    await Promise.race([sleep(phase.warmupSeconds * 1000), generator]);
    if (failures.length === 0) {
      await window.atStart();
      measuring = true;
      opened = Date.now();
      stopAt = opened + phase.seconds * 1000;
      // The window ends on time: turns still in flight then are neither counted nor measured.
      await Promise.race([sleep(stopAt - Date.now()), generator]);
      measuring = false;
      closed = Date.now();
      await window.atEnd();
    }
  } finally {
    // Whatever failed, nothing is left in flight when this returns.
    stopAt = 0;
    await generator;
  }
  if (failures.length > 0) throw failures[0];
  return { turns, seconds: (closed - opened) / 1000, arrivals, refused };
}
