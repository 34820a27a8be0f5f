/**
 * A call to a local sandbox that is gone, when its workspace has snapshots: a new sandbox takes
 * its id (so the harness and the model go on naming it), starts from the last good snapshot, and
 * runs the call. Gone means lost (its process died, or the broker restarted), paused (idle), or
 * released by a broker shutting down; a sandbox released on purpose (Release, its lifetime, its
 * session's end) stays gone. The model is told its sandbox was replaced, except after a pause,
 * which it should notice only by the time it costs. Sandboxes with repositories or egress are not
 * revived: their remotes were opened for the process that died (the harness provisions anew).
 */
import { MhError } from "@metaharness/errors";
import { SandboxState } from "@metaharness/proto";
import { getSandbox, reviveSandbox } from "../db/sandboxes.js";
import { BUBBLEWRAP_DRIVER } from "../driver/local-sandbox.js";
import { sandboxLayer } from "../layers/rpc.js";
import { resolveSpec } from "../resources.js";
import { startLocalSandbox, type BrokerContext } from "./context.js";
import type { LiveSandbox, Revived } from "./live.js";
import { PAUSED_PREFIX, restoreInto, restoreNote } from "./workspace.js";
import type { RestoreResult } from "../workspaces/snapshots.js";

/** The reason a broker shutting down releases its sandboxes with (app.ts). */
export const SHUTDOWN_REASON = "broker shut down";

export function revivable(state: SandboxState, reason: string): boolean {
  if (state === SandboxState.SANDBOX_STATE_LOST) return true;
  return state === SandboxState.SANDBOX_STATE_RELEASED && (reason.startsWith(PAUSED_PREFIX) || reason === SHUTDOWN_REASON);
}

/** Revives sandbox `sandboxId` once, however many calls ask at the same time; undefined if it may not be. */
export function revive(ctx: BrokerContext, sandboxId: string, state: SandboxState, reason: string): Promise<Revived | undefined> {
  if (ctx.workspaces === undefined || !revivable(state, reason)) return Promise.resolve(undefined);
  const running = ctx.reviving.get(sandboxId);
  if (running !== undefined) return running;
  const attempt = reviveOnce(ctx, sandboxId, state, reason).finally(() => ctx.reviving.delete(sandboxId));
  ctx.reviving.set(sandboxId, attempt);
  return attempt;
}

async function reviveOnce(ctx: BrokerContext, sandboxId: string, state: SandboxState, reason: string): Promise<Revived | undefined> {
  // An end still under way finishes first (its row is then written).
  await ctx.live.end(sandboxId, SandboxState.SANDBOX_STATE_LOST, reason);
  const row = await getSandbox(ctx.pool, sandboxId);
  if (row === undefined || row.driver !== BUBBLEWRAP_DRIVER || row.state === SandboxState.SANDBOX_STATE_READY) return undefined;
  const spec = resolveSpec(row.resources, ctx.config);
  if (spec.repositories.length > 0 || spec.egress !== undefined) return undefined;
  const started = performance.now();
  const layer = spec.packages === undefined ? undefined : await sandboxLayer(ctx.layers, spec.packages, "resources.packages");
  const unreserve = ctx.live.reserve(ctx.config.maxSandboxes);
  try {
    const runtime = await startLocalSandbox(ctx, sandboxId, spec.limits, layer);
    let restored: RestoreResult | undefined;
    let storeError: string | undefined;
    try {
      restored = await restoreInto(ctx, runtime, { sandboxId, sessionId: row.sessionId }, { sessionId: row.sessionId });
      if (restored === undefined) {
        // Nothing was ever saved (the sandbox had no call that changed it): only files given at Provision.
        if (spec.files.length > 0) await runtime.writeFiles(spec.files);
      }
    } catch (err) {
      storeError = `its workspace could not be restored (${MhError.from(err).message}); it starts empty, and snapshots resume once the store answers`;
    }
    try {
      await reviveSandbox(ctx.pool, sandboxId, ctx.config.brokerId, runtime.limits);
    } catch (err) {
      await runtime.stop("it could not be recorded");
      throw err;
    }
    const now = Date.now();
    const live: LiveSandbox = { id: sandboxId, sessionId: row.sessionId, runtime, limits: spec.limits, createdAt: now, lastUsedAt: now };
    ctx.live.add(live);
    const durationMs = Math.round(performance.now() - started);
    const paused = state === SandboxState.SANDBOX_STATE_RELEASED && reason.startsWith(PAUSED_PREFIX);
    ctx.logger.info({ sandbox_id: sandboxId, session_id: row.sessionId, paused, duration_ms: durationMs, seq: restored?.seq }, paused ? "sandbox resumed" : "sandbox replaced");
    const what = paused ? `sandbox ${sandboxId} was resumed after its idle pause` : `sandbox ${sandboxId} was replaced: it was ${state === SandboxState.SANDBOX_STATE_LOST ? "lost" : "released"} (${reason})`;
    if (storeError !== undefined) return { live, note: "", error: `${what}; ${storeError}. This call did not run: run it again.` };
    if (restored !== undefined && restored.skipped.length > 0) {
      return { live, note: "", error: `${what}; ${restoreNote(restored)}. This call did not run: run it again.` };
    }
    return { live, note: paused ? "" : `[${what}; ${restoreNote(restored)}]\n` };
  } finally {
    unreserve();
  }
}
