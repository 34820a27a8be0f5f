/**
 * The broker's side of workspace snapshots (workspaces/): a snapshot after each tool call that may
 * have changed a local sandbox's workspace, the last one restored into a new sandbox of the
 * session, and the idle pause. A store that fails costs the call a note in its result, never the
 * call itself: the session goes on without persistence until the store is back.
 */
import { MhError } from "@metaharness/errors";
import { SandboxState, type WorkspaceFork } from "@metaharness/proto";
import { LocalSandbox } from "../driver/local-sandbox.js";
import type { ToolOutcome } from "../tools/types.js";
import type { SandboxRuntime } from "../runtime.js";
import { sandboxProcess } from "../workspaces/sandbox-files.js";
import type { RestoreResult, RestoreSource, SnapshotResult, Snapshots } from "../workspaces/snapshots.js";
import type { BrokerContext } from "./context.js";
import type { LiveSandbox } from "./live.js";

/** Tools that never write: no snapshot after them. */
const READ_ONLY_TOOLS = new Set(["read", "glob", "grep"]);

/** The reason a paused sandbox is released with; a call to it resumes it (see revive.ts). */
export const PAUSED_PREFIX = "paused";

export function pausedReason(idleSeconds: number): string {
  return `${PAUSED_PREFIX}: idle for ${idleSeconds} s (its idle timeout); its workspace is saved, and its next call resumes it`;
}

/** Records the workspace after a call; a failure becomes a note at the end of the call's output. */
export async function snapshotAfter(ctx: BrokerContext, live: LiveSandbox, call: CallRef, name: string, outcome: ToolOutcome): Promise<ToolOutcome> {
  const workspaces = ctx.workspaces;
  if (workspaces === undefined || READ_ONLY_TOOLS.has(name) || !(live.runtime instanceof LocalSandbox)) return outcome;
  const { callId } = call;
  try {
    const taken = await snapshotOf(workspaces.snapshots, live, call);
    // One line per snapshot (debug): what it cost the call, for the workspaces benchmark and an operator.
    const saved = taken.kind === "saved" ? { seq: taken.seq, bytes: taken.bytes, added_bytes: taken.addedBytes } : {};
    ctx.logger.debug({ sandbox_id: live.id, session_id: live.sessionId, call_id: callId, kind: taken.kind, ...saved, duration_ms: Math.round(taken.ms * 10) / 10 }, "workspace snapshot");
    return outcome;
  } catch (err) {
    if (live.ended !== undefined) return outcome; // it ended meanwhile: its result already says so
    const e = MhError.from(err);
    ctx.logger.warn({ err: e, sandbox_id: live.id, session_id: live.sessionId, call_id: callId }, "workspace snapshot failed");
    return { ...outcome, output: `${outcome.output}\n[workspace not saved: ${e.message}]` };
  }
}

/** The call a snapshot follows, and its agent.tool_use event's seq (0: not said; a fork skips it). */
export interface CallRef {
  readonly callId: string;
  readonly eventSeq: number;
}

async function snapshotOf(snapshots: Snapshots, live: { readonly id: string; readonly sessionId: string; readonly runtime: SandboxRuntime }, call: CallRef): Promise<SnapshotResult> {
  const runtime = live.runtime as LocalSandbox;
  const pid = runtime.pid;
  if (pid === undefined) throw new MhError("UNAVAILABLE", `sandbox ${live.id} has no process`);
  return snapshots.snapshot(await sandboxProcess(pid), { sessionId: live.sessionId, sandboxId: live.id, callId: call.callId, eventSeq: call.eventSeq });
}

/** Restores a session's last good snapshot (or a fork's source) into a new local sandbox. */
export async function restoreInto(
  ctx: BrokerContext,
  runtime: SandboxRuntime,
  ids: { readonly sandboxId: string; readonly sessionId: string },
  source: RestoreSource,
): Promise<RestoreResult | undefined> {
  const workspaces = ctx.workspaces;
  if (workspaces === undefined || !(runtime instanceof LocalSandbox) || runtime.pid === undefined) return undefined;
  const target = await sandboxProcess(runtime.pid);
  const restored = await workspaces.snapshots.restore(target, ids.sandboxId, ids.sessionId, source);
  if (restored !== undefined) {
    ctx.logger.info(
      { sandbox_id: ids.sandboxId, session_id: ids.sessionId, from_session: source.sessionId, seq: restored.seq, files: restored.files, bytes: restored.bytes, duration_ms: Math.round(restored.ms), skipped: restored.skipped },
      "workspace restored",
    );
  }
  return restored;
}

/**
 * The workspace follows a transferred sandbox: a snapshot under its new session at once, so a
 * sandbox lost before its next changing call comes back, in the new session, with its files (a
 * revive restores its holder's snapshots). A failure is logged: the next changing call saves it.
 */
export async function handOverWorkspace(ctx: BrokerContext, live: LiveSandbox): Promise<void> {
  const workspaces = ctx.workspaces;
  if (workspaces === undefined || !(live.runtime instanceof LocalSandbox)) return;
  try {
    workspaces.snapshots.handOver(live.id, live.sessionId);
    await snapshotOf(workspaces.snapshots, live, { callId: "", eventSeq: 0 });
  } catch (err) {
    ctx.logger.warn({ err, sandbox_id: live.id, session_id: live.sessionId }, "the workspace of a transferred sandbox was not saved under its new session; its next changing call saves it");
  }
}

/**
 * A forked session's new sandbox starts from the source session's workspace at the fork's event
 * (Provision's fork), then records it as its own session's first snapshot, at event 1: a sandbox of
 * the fork that is later lost or paused comes back from it, and a fork of the fork finds it.
 */
export async function forkInto(ctx: BrokerContext, runtime: SandboxRuntime, ids: { readonly sandboxId: string; readonly sessionId: string }, fork: WorkspaceFork): Promise<void> {
  if (fork.sessionId === "") return;
  const field = { field: "fork" };
  if (ctx.workspaces === undefined) {
    throw new MhError("FAILED_PRECONDITION", "fork: this broker keeps no workspace snapshots (MH_WORKSPACE_STORE is off), so no session's workspace can be forked", field);
  }
  if (!(runtime instanceof LocalSandbox)) throw new MhError("INVALID_ARGUMENT", "fork: an external hand has no workspace to start from another session's", field);
  let restored: RestoreResult | undefined;
  try {
    restored = await restoreInto(ctx, runtime, ids, { sessionId: fork.sessionId, atEventSeq: fork.eventSeq });
    await snapshotOf(ctx.workspaces.snapshots, { id: ids.sandboxId, sessionId: ids.sessionId, runtime }, { callId: "", eventSeq: 1 });
  } catch (err) {
    const e = MhError.from(err);
    throw new MhError("UNAVAILABLE", `fork: the workspace of session ${fork.sessionId} at event ${fork.eventSeq} could not be restored: ${e.message}`, { ...field, cause: e });
  }
  ctx.logger.info(
    { sandbox_id: ids.sandboxId, session_id: ids.sessionId, from_session: fork.sessionId, at_seq: fork.eventSeq, snapshot: restored?.seq ?? 0, skipped: restored?.skipped ?? [] },
    restored === undefined || restored.seq === 0 ? "forked session starts empty: no snapshot of its source at or before its event" : "forked session's sandbox starts from its source's workspace",
  );
}

/** What the model is told about a restore: the snapshot used, and each one skipped, named. */
export function restoreNote(restored: RestoreResult | undefined): string {
  if (restored === undefined) return "no snapshot of its workspace exists, so it starts empty";
  const from = restored.seq === 0 ? "no snapshot restores, so it starts empty" : `its workspace was restored from snapshot ${restored.seq}${restored.callId === "" ? "" : ` (taken after call ${restored.callId})`}, ${restored.files} files`;
  return restored.skipped.length === 0 ? from : `${restored.skipped.join("; ")}; ${from}`;
}

/**
 * The idle pause: a last snapshot, then the sandbox is released (its memory and processes go) with
 * a reason a later call recognises. A snapshot that fails keeps the sandbox running (its work
 * would be lost) until the next idle timeout tries again.
 */
export async function pause(ctx: BrokerContext, live: LiveSandbox): Promise<void> {
  const workspaces = ctx.workspaces;
  if (workspaces === undefined) return;
  const usedAt = live.lastUsedAt;
  try {
    await snapshotOf(workspaces.snapshots, live, { callId: "", eventSeq: 0 });
  } catch (err) {
    live.lastUsedAt = Date.now();
    ctx.logger.warn({ err, sandbox_id: live.id, session_id: live.sessionId }, "an idle sandbox was not paused: its snapshot failed; trying again after another idle timeout");
    return;
  }
  // A call that came in meanwhile keeps it (checked and ended in one tick: none can slip between).
  if (live.runtime.inFlight > 0 || live.lastUsedAt !== usedAt || live.ended !== undefined) return;
  await ctx.live.end(live.id, SandboxState.SANDBOX_STATE_RELEASED, pausedReason(live.limits.idleTimeoutSeconds));
}
