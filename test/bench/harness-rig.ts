/**
 * The rig of the harness benchmark: one brain (session log on Postgres, offline model, real
 * sandbox broker) with two harness instances, the lazy one (ours) and the coupled baseline
 * (MH_EAGER_SANDBOX), and `runTurn`, which drives one session's turn on a chosen instance while a
 * client watches it with deltas, the way a UI would.
 *
 * Which instance drives a session is made certain, not assumed: the sweepers are slowed to once
 * per 10 minutes (MH_SWEEP_MS; their first sweep runs at start, before any session exists) and
 * the brain's own instance takes no session the log says was freed (MH_WAKE_FREED), the
 * session is woken through that instance's own Wake RPC, and the reply must say STARTED with that
 * instance as the lease holder. Callers also check the sandbox timing against the config.
 */
import { performance } from "node:perf_hooks";
import { defineScenario, type RecordedRequest } from "@metaharness/offline-model";
import {
  DeltaKind,
  HarnessClient,
  HarnessService,
  type Event,
  type Sandbox,
  type WakeOutcome,
} from "@metaharness/proto";
import { createClient, promisify } from "@metaharness/service-kit/grpc";
import { startBrain, type Brain, type HarnessRpc } from "../support/harness.js";
import { userMessage } from "../support/events.js";
import { EVENT_TEXT } from "./lib/service.js";

/** The offline model's time to first token in the TTFT part. */
export const MODEL_TTFT_MS = 200;
const PROBE = "bench-probe";
const TURN_TIMEOUT_MS = 30_000;

const bash = { name: "bash", input: { command: "echo ok" } };
const LEAD = "Let me look at the workspace before I answer.";
const unpaced = { ttftMs: 0, tokensPerSecond: 0 };

export const SCENARIOS = [
  // The second answer (after the tool) is unpaced in every scenario: it does not enter TTFT.
  defineScenario("ttft-bash", [{ text: LEAD, toolUses: [bash], ttftMs: MODEL_TTFT_MS, tokensPerSecond: 0 }, { text: EVENT_TEXT, ...unpaced }]),
  defineScenario("ttft-text", [{ text: EVENT_TEXT, ttftMs: MODEL_TTFT_MS, tokensPerSecond: 0 }]),
  defineScenario("ovh-text", [{ text: EVENT_TEXT, ...unpaced }]),
  defineScenario("ovh-bash", [{ text: LEAD, toolUses: [bash], ...unpaced }, { text: EVENT_TEXT, ...unpaced }]),
];

export interface Instance {
  readonly label: string;
  readonly id: string;
  readonly rpc: HarnessRpc;
}

export interface Rig {
  readonly brain: Brain;
  readonly lazy: Instance;
  readonly eager: Instance;
  stop(): Promise<void>;
}

export async function startRig(): Promise<Rig> {
  const brain = await startBrain({ scenarios: SCENARIOS, broker: true, env: { MH_SWEEP_MS: "600000", MH_WAKE_FREED: "false" } });
  const closers: Array<() => void> = [];
  const stop = async (): Promise<void> => {
    for (const close of closers.splice(0)) close();
    await brain.stop();
  };
  try {
    const first = brain.harnesses[0];
    if (first === undefined) throw new Error("the brain started no harness");
    const second = await brain.addHarness({ MH_EAGER_SANDBOX: "true" });
    const raw = createClient(HarnessClient, `127.0.0.1:${second.port}`, { bearerToken: brain.harnessTokens.tokens.admin });
    closers.push(() => raw.close());
    return {
      brain,
      lazy: { label: "lazy", id: first.supervisor.instanceId, rpc: brain.rpc },
      eager: { label: "eager", id: second.supervisor.instanceId, rpc: promisify(raw, HarnessService) },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

export interface TurnRecord {
  readonly sessionId: string;
  readonly instance: Instance;
  readonly wake: { readonly outcome: WakeOutcome; readonly holder: string };
  /** EmitEvent(user.message) round trip and the Wake RPC after it, client side. */
  readonly emitMs: number;
  readonly wakeMs: number;
  /** created_at of the user.message (the log's clock: Date in the log's process, ms). */
  readonly appendedAt: number;
  /** TTFT from created_at (epoch ms) and from the moment EmitEvent returned (monotonic). */
  readonly ttftFromCreated: number | undefined;
  readonly ttftFromReturn: number | undefined;
  /** TTFT from the moment the client sent the user.message (monotonic): what its author waits. */
  readonly ttftFromSend: number | undefined;
  /** Epoch ms (Date.now, the clock of every service here): EmitEvent sent, returned, Wake returned. */
  readonly clock: { readonly sentAt: number; readonly returnedAt: number; readonly wokenAt: number };
  /** The first delta: when the harness handed it to PublishDeltas, when the watcher got it. */
  readonly deltaEmittedAt: number | undefined;
  readonly deltaReceivedAt: number | undefined;
  /** Every event of the turn, as the watcher received them (sandbox events included). */
  readonly events: readonly Event[];
  /** The model requests of this session, in order. */
  readonly requests: readonly RecordedRequest[];
  readonly sandboxes: readonly Sandbox[];
}

/** A client following one session with deltas; resolves waits as events arrive. */
class SessionWatch {
  readonly events: Event[] = [];
  firstDelta: { perf: number; epoch: number; emittedAt: number } | undefined;
  private probed = false;
  private readonly waiters = new Set<() => void>();
  private readonly controller = new AbortController();
  readonly done: Promise<void>;

  constructor(brain: Brain, sessionId: string) {
    const stream = brain.log.client.watchEvents({ sessionId, afterSeq: 0, types: [], includeDeltas: true, batchDeltas: false, fromHead: false }, { signal: this.controller.signal });
    this.done = (async () => {
      try {
        for await (const msg of stream) {
          if (msg.delta !== undefined) {
            if (msg.delta.modelRequestId === PROBE) this.probed = true;
            else this.firstDelta ??= { perf: performance.now(), epoch: Date.now(), emittedAt: msg.delta.emittedAt?.getTime() ?? NaN };
          } else if (msg.event !== undefined) this.events.push(msg.event);
          for (const wake of this.waiters) wake();
        }
      } catch {
        // Cancelled by close(); a failure shows as a wait that times out.
      }
    })();
  }

  /** Resolves once `holds` is true, checked after every message. */
  until(holds: () => boolean, what: string, timeoutMs = TURN_TIMEOUT_MS): Promise<void> {
    if (holds()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`timed out waiting for ${what}; events: ${this.events.map((e) => e.type).join(", ")}`));
      }, timeoutMs);
      const check = (): void => {
        if (!holds()) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  /**
   * Readiness: the log subscribes a watcher to deltas before its first read, so once a probe
   * delta (ephemeral, never stored) comes back, every later delta will too.
   */
  async subscribed(brain: Brain, sessionId: string): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (!this.probed) {
      if (Date.now() > deadline) throw new Error("the watch never delivered the probe delta");
      const delta = { sessionId, modelRequestId: PROBE, blockIndex: 0, kind: DeltaKind.DELTA_KIND_TEXT, text: "probe", emittedAt: new Date() };
      await brain.log.client.publishDeltas({ sessionId, deltas: [delta] });
      await this.until(() => this.probed, "the probe delta", 5).catch(() => undefined);
    }
  }

  count(type: string): number {
    return this.events.filter((e) => e.type === type).length;
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}

/**
 * One turn: create a session, watch it (subscribed before the message is sent), append the
 * user.message, wake `instance`, wait for session.status_idle. Then (untimed) release the
 * session's sandboxes and wait for the broker's sandbox events, so no work of this turn spills
 * into the next one's measurement.
 */
export interface TurnOptions {
  /** Makes the session (default: a bare one, brain.createSession). */
  readonly newSession?: () => Promise<string>;
  /** How long the turn, and then its sandboxes' release, may take. */
  readonly timeoutMs?: number;
}

export async function runTurn(brain: Brain, instance: Instance, scenario: string, opts: TurnOptions = {}): Promise<TurnRecord> {
  const sessionId = await (opts.newSession ?? (() => brain.createSession()))();
  const timeoutMs = opts.timeoutMs ?? TURN_TIMEOUT_MS;
  const watch = new SessionWatch(brain, sessionId);
  try {
    await watch.subscribed(brain, sessionId);
    const since = Date.now();
    const sentAt = Date.now();
    const t0 = performance.now();
    const { event } = await brain.log.client.emitEvent({ sessionId, event: userMessage(`[scenario:${scenario}] ${sessionId}`) });
    const returned = performance.now();
    const returnedAt = Date.now();
    const res = await instance.rpc.wake({ sessionId });
    const woken = performance.now();
    const wokenAt = Date.now();
    await watch.until(() => watch.count("session.status_idle") > 0, `the turn of ${sessionId} to end`, timeoutMs);
    const requests = brain.model.requests.filter((r) => r.receivedAt >= since && JSON.stringify(r.body).includes(sessionId));
    const broker = brain.broker!.client;
    const { sandboxes } = await broker.listSandboxes({ sessionId, includeEnded: true });
    for (const s of sandboxes) await broker.release({ sandboxId: s.sandboxId, sessionId });
    await watch.until(
      () => watch.count("sandbox.provisioned") >= sandboxes.length && watch.count("sandbox.released") >= sandboxes.length,
      `the sandbox events of ${sessionId}`,
      timeoutMs,
    );
    const appendedAt = event?.createdAt?.getTime() ?? NaN;
    const first = watch.firstDelta;
    return {
      sessionId,
      instance,
      wake: { outcome: res.outcome, holder: res.leaseHolder },
      emitMs: returned - t0,
      wakeMs: woken - returned,
      appendedAt,
      ttftFromCreated: first === undefined ? undefined : first.epoch - appendedAt,
      ttftFromReturn: first === undefined ? undefined : first.perf - returned,
      ttftFromSend: first === undefined ? undefined : first.perf - t0,
      clock: { sentAt, returnedAt, wokenAt },
      deltaEmittedAt: first?.emittedAt,
      deltaReceivedAt: first?.epoch,
      events: [...watch.events],
      requests,
      sandboxes,
    };
  } finally {
    await watch.close();
  }
}

/** created_at of the `n`-th (0-based) event of `type`, in epoch ms; NaN when absent. */
export function at(events: readonly Event[], type: string, n = 0): number {
  return events.filter((e) => e.type === type)[n]?.createdAt?.getTime() ?? NaN;
}
