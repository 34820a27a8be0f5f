/**
 * Execute: idempotent by session and call_id, whichever of the session's sandboxes a request
 * names (db/calls.ts says why). The call is claimed in the ledger before anything runs; a repeat
 * gets the recorded outcome (replayed, nothing runs), waits for a first attempt still running (in
 * this process, or on another broker), or, for an attempt a restart interrupted, gets "outcome
 * unknown" and never a second run. A sandbox that is gone is a tool result the model reads, not a
 * gRPC error.
 */
import { MhError, retry, retryPolicy } from "@metaharness/errors";
import { SandboxState, type ExecuteRequest, type ExecuteResponse } from "@metaharness/proto";
import { claimCall, finishCall, interruptCall, readCall, type CallKey, type CallOutcome } from "../db/calls.js";
import { getSandbox, notFound, runByAnotherBroker, type SandboxRow } from "../db/sandboxes.js";
import { SandboxGoneError } from "../protocol/agent-channel.js";
import { failed, type Input, type ToolOutcome } from "../tools/types.js";
import { requireField, type BrokerContext } from "./context.js";
import { endedMessage, type LiveSandbox, type Revived } from "./live.js";
import { revive } from "./revive.js";
import { snapshotAfter } from "./workspace.js";

const POLL_MS = 100;
/** How long a repeat waits for a first attempt this process cannot see, beyond its timeout. */
const FOREIGN_WAIT_SLACK_MS = 10_000;

interface Target {
  readonly live: LiveSandbox | undefined;
  readonly row: SandboxRow | undefined;
  readonly holder: string;
}

export async function execute(ctx: BrokerContext, req: ExecuteRequest, signal?: AbortSignal): Promise<ExecuteResponse> {
  const sandboxId = requireField(req.sandboxId, "sandbox_id");
  const name = requireField(req.name, "name");
  const callId = requireField(req.callId, "call_id");
  const timeoutMs = req.timeoutMs === 0 ? ctx.config.callTimeoutMs : req.timeoutMs;
  if (timeoutMs > ctx.config.maxCallTimeoutMs) {
    throw new MhError("INVALID_ARGUMENT", `timeout_ms: at most ${ctx.config.maxCallTimeoutMs}`, { field: "timeout_ms" });
  }
  const target = await locate(ctx, sandboxId);
  if (req.sessionId !== "" && req.sessionId !== target.holder) {
    throw new MhError("PERMISSION_DENIED", `sandbox ${sandboxId} is held by another session, not ${req.sessionId}`, {
      field: "session_id",
    });
  }
  const key: CallKey = { sessionId: target.holder, callId, sandboxId };
  const inflightKey = `${target.holder}/${callId}`;
  const first = ctx.inflight.get(inflightKey);
  if (first !== undefined) return response(await first, true);

  const attempt = runOnce(ctx, key, target, { name, input: req.input ?? {}, timeoutMs, ...(signal === undefined ? {} : { signal }) }, req.eventSeq);
  const outcome = attempt.then((r) => r.outcome);
  outcome.catch(() => undefined); // awaited below; repeats awaiting it handle their own rejection
  ctx.inflight.set(inflightKey, outcome);
  // A repeat is served from memory until the outcome is in the ledger, so the answer need not
  // wait for that write.
  const forget = (): void => void ctx.inflight.delete(inflightKey);
  try {
    const { outcome: result, replayed, recorded } = await attempt;
    ctx.pendingWrites.add(recorded);
    void recorded.finally(() => {
      ctx.pendingWrites.delete(recorded);
      forget();
    });
    return response(result, replayed);
  } catch (err) {
    forget();
    throw err;
  }
}

async function locate(ctx: BrokerContext, sandboxId: string): Promise<Target> {
  const live = ctx.live.get(sandboxId);
  if (live !== undefined) return { live, row: undefined, holder: live.sessionId };
  const row = await getSandbox(ctx.pool, sandboxId);
  if (row === undefined) throw notFound(sandboxId);
  if (row.state === SandboxState.SANDBOX_STATE_READY && row.brokerId !== ctx.config.brokerId) {
    throw runByAnotherBroker(sandboxId, row.brokerId);
  }
  return { live: undefined, row, holder: row.sessionId };
}

function response(outcome: CallOutcome, replayed: boolean): ExecuteResponse {
  return { ...outcome, replayed };
}

interface Call {
  readonly name: string;
  readonly input: Input;
  readonly timeoutMs: number;
  /** The first caller's cancellation ends the run (a repeat then gets that outcome). */
  readonly signal?: AbortSignal;
}

async function runOnce(
  ctx: BrokerContext,
  key: CallKey,
  target: Target,
  call: Call,
  eventSeq: number,
): Promise<{ outcome: CallOutcome; replayed: boolean; recorded: Promise<void> }> {
  const recorded = Promise.resolve();
  const claim = await claimCall(ctx.pool, key, { name: call.name, incarnation: ctx.incarnation });
  if (claim.kind === "done") return { outcome: claim.outcome, replayed: true, recorded };
  if (claim.kind === "running") {
    // Claimed on a sandbox another broker runs: that broker records the outcome (or, restarted,
    // settles the call as interrupted); its incarnation says nothing about this one's.
    const elsewhere = claim.brokerId !== "" && claim.brokerId !== ctx.config.brokerId;
    if (!elsewhere && claim.incarnation !== ctx.incarnation) {
      return { outcome: await interruptCall(ctx.pool, key, ctx.incarnation), replayed: true, recorded };
    }
    return { outcome: await waitForOutcome(ctx, key, call.timeoutMs), replayed: true, recorded };
  }
  const started = performance.now();
  const result = await run(ctx, key, target, call, eventSeq);
  const outcome: CallOutcome = { ...result, durationMs: Math.round(performance.now() - started) };
  return { outcome, replayed: false, recorded: record(ctx, key, outcome) };
}

/** An outcome's write is tried again for 15 s while the database is out of reach (whatever failed: the write is idempotent). */
const RECORD_POLICY = retryPolicy({ initialIntervalMs: 100, maxIntervalMs: 2_000, maxAttempts: Number.POSITIVE_INFINITY, maxElapsedMs: 15_000 });

/**
 * Writes the outcome to the ledger, again with backoff while that fails: until it is in, a repeat
 * of the call in this process is answered from memory (execute's inflight). A write given up on
 * left the call "running" for this incarnation, and a repeat (a harness resuming the session after
 * Postgres restarted) waited the call's whole timeout for an outcome that never came.
 */
async function record(ctx: BrokerContext, key: CallKey, outcome: CallOutcome): Promise<void> {
  try {
    await retry(RECORD_POLICY, () => finishCall(ctx.pool, key, outcome), { isRetryable: () => true });
  } catch (err) {
    // The model still gets its result; after this process, a repeat reports the outcome unknown.
    ctx.logger.error({ err, sandbox_id: key.sandboxId, call_id: key.callId }, "could not record a call's outcome");
  }
}

async function run(ctx: BrokerContext, key: CallKey, target: Target, call: Call, eventSeq: number): Promise<ToolOutcome> {
  let { live } = target;
  let note = "";
  if (live === undefined || live.ended !== undefined) {
    const state = live?.ended?.state ?? target.row?.state ?? SandboxState.SANDBOX_STATE_LOST;
    const reason = live?.ended?.reason ?? (target.row?.reason || "its process is gone");
    // With snapshots, a lost or paused sandbox comes back under its id, from its last snapshot.
    let revived: Revived | undefined;
    try {
      revived = await revive(ctx, key.sandboxId, state, reason);
    } catch (err) {
      return failed(`${endedMessage(key.sandboxId, state, reason)}; it could not be replaced: ${MhError.from(err).message}`);
    }
    if (revived === undefined) return failed(endedMessage(key.sandboxId, state, reason));
    if (revived.error !== undefined) return failed(revived.error);
    live = revived.live;
    note = revived.note;
  }
  live.lastUsedAt = Date.now();
  try {
    const outcome = await snapshotAfter(ctx, live, { callId: key.callId, eventSeq }, call.name, await live.runtime.execute({ callId: key.callId, ...call }));
    return note === "" ? outcome : { ...outcome, output: note + outcome.output };
  } catch (err) {
    if (err instanceof SandboxGoneError) return failed(err.message);
    if (err instanceof MhError) return failed(err.message);
    ctx.logger.error({ err, sandbox_id: key.sandboxId, call_id: key.callId }, "a call failed inside the broker");
    return failed("the broker failed to run this call (an internal error; see its log)");
  } finally {
    live.lastUsedAt = Date.now();
  }
}

/** A first attempt of this incarnation that this process does not hold (a lost ledger write). */
async function waitForOutcome(ctx: BrokerContext, key: CallKey, timeoutMs: number): Promise<CallOutcome> {
  const until = Date.now() + timeoutMs + FOREIGN_WAIT_SLACK_MS;
  while (Date.now() < until) {
    const seen = await readCall(ctx.pool, key);
    if (seen?.kind === "done") return seen.outcome;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return { output: "the outcome of this call is unknown: its first attempt never finished", isError: true, exitCode: -1, durationMs: 0, truncated: false };
}
