/**
 * Provision: check the resources, get a runtime (a warm sandbox when the defaults were asked for,
 * else a fresh bubblewrap process, or a binding to a connected external hand), put the files into
 * the workspace, then record it. A failure at any step leaves nothing running and nothing recorded,
 * except a repository that does not clone: the sandbox is ready without it, and the failure is
 * in the response and reported to the session (remotes/clone.ts). With a key (ProvisionRequest.key)
 * the ready sandbox of the session holding it is the answer, before anything starts or, for
 * Provisions that raced, when the record is written: the one recorded first is kept, and a loser
 * stops what it started and answers with the winner's.
 */
import { MhError } from "@metaharness/errors";
import type { ProvisionRequest, ProvisionResponse, RepositoryFailure, WorkspaceFork } from "@metaharness/proto";
import { insertSandbox, readyByKey, toSandbox, type SandboxRow } from "../db/sandboxes.js";
import type { LocalSandbox } from "../driver/local-sandbox.js";
import { HandSandbox } from "../hands/hand-sandbox.js";
import { fitsWarmPool, resolveSpec, type SandboxSpec } from "../resources.js";
import type { SandboxRuntime } from "../runtime.js";
import { newSandboxId } from "../util/ids.js";
import { attachRemotes, type SandboxRemotes } from "../remotes/attach.js";
import { hasPackages, requireSessionId } from "@metaharness/events";
import { requireField, requireLiveSession, startLocalSandbox, type BrokerContext } from "./context.js";
import { sandboxLayer } from "../layers/rpc.js";
import type { LayerMount } from "../layers/mount.js";
import { secondsSince } from "@metaharness/telemetry";
import { provisionDuration } from "../metrics.js";
import { forkInto } from "./workspace.js";

interface Acquired {
  readonly id: string;
  readonly runtime: SandboxRuntime;
  readonly handId: string;
  readonly warm: boolean;
}

export async function provision(ctx: BrokerContext, req: ProvisionRequest, signal?: AbortSignal): Promise<ProvisionResponse> {
  const began = performance.now();
  const response = await provisionAny(ctx, req, signal);
  // With packages: the layer's build (or the wait for it) is part of the provision.
  const start = response.warm ? "warm" : hasPackages(req.resources?.packages) ? "packages" : "cold";
  provisionDuration.record(secondsSince(began), { start, kind: response.sandbox?.driver ?? "" });
  return response;
}

async function provisionAny(ctx: BrokerContext, req: ProvisionRequest, signal?: AbortSignal): Promise<ProvisionResponse> {
  requireSessionId(req.sessionId, "session_id");
  // A store key is made of it: only a session id's shape.
  if (req.fork !== undefined && req.fork.sessionId !== "") requireSessionId(req.fork.sessionId, "fork.session_id");
  const spec = resolveSpec(req.resources, ctx.config);
  const sessionId = await requireLiveSession(ctx, req.sessionId, "session_id");
  const key = requireKey(req.key);
  if (key !== "") {
    const held = await readyByKey(ctx.pool, sessionId, key);
    if (held !== undefined) return keptFor(held);
  }
  if (req.handKind !== "") {
    if (spec.packages !== undefined) {
      throw new MhError("INVALID_ARGUMENT", "resources.packages: an external hand has no way to mount a package layer", { field: "resources.packages" });
    }
    if (req.fork !== undefined && req.fork.sessionId !== "") {
      throw new MhError("INVALID_ARGUMENT", "fork: an external hand has no workspace to start from another session's", { field: "fork" });
    }
    return provisionOn(ctx, { sessionId, key }, spec, bindHand(ctx, req.handKind), performance.now());
  }
  // The environment's package layer first (built now if nobody asked for it yet): the wait for a
  // build holds no place under the cap.
  const layer = spec.packages === undefined ? undefined : await sandboxLayer(ctx.layers, spec.packages, "resources.packages", signal);
  // A local sandbox holds its place under the cap from now until it is live (or has failed).
  const unreserve = ctx.live.reserve(ctx.config.maxSandboxes);
  try {
    const started = performance.now();
    return await provisionOn(ctx, { sessionId, key }, spec, await localSandbox(ctx, spec, layer), started, req.fork);
  } finally {
    unreserve();
  }
}

/** ProvisionRequest.key: at most 256 characters, no NUL (Postgres cannot store it); "" for none. */
function requireKey(key: string): string {
  return key === "" ? "" : requireField(key, "key");
}

/** The answer to a Provision whose key a ready sandbox holds: that sandbox, nothing started. */
function keptFor(row: SandboxRow): ProvisionResponse {
  return { sandbox: toSandbox(row), durationMs: 0, warm: false, repositoryFailures: [] };
}

async function provisionOn(
  ctx: BrokerContext,
  { sessionId, key }: { readonly sessionId: string; readonly key: string },
  spec: SandboxSpec,
  acquired: Acquired,
  started: number,
  fork?: WorkspaceFork,
): Promise<ProvisionResponse> {
  const { id, runtime } = acquired;
  const log = ctx.logger.child({ sandbox_id: id, session_id: sessionId });
  let remotes: SandboxRemotes | undefined;
  let repositoryFailures: RepositoryFailure[] = [];
  try {
    // The fork's files first: the request's own files and repositories go on top of them.
    if (fork !== undefined) await forkInto(ctx, runtime, { sandboxId: id, sessionId }, fork);
    if (spec.files.length > 0) {
      if (!isLocal(runtime)) {
        throw new MhError("INVALID_ARGUMENT", "resources.files: an external hand has no workspace to put files in", {
          field: "resources.files",
        });
      }
      await runtime.writeFiles(spec.files);
    }
    if (spec.repositories.length > 0 || spec.egress !== undefined) {
      if (!isLocal(runtime)) {
        throw new MhError("INVALID_ARGUMENT", "resources: an external hand has no workspace for repositories or egress", { field: "resources" });
      }
      const attached = await attachRemotes(ctx, runtime, { sessionId, sandboxId: id }, spec);
      remotes = attached?.remotes;
      repositoryFailures = attached?.repositoryFailures ?? [];
    }
    const { row, inserted } = await insertSandbox(ctx.pool, {
      sandboxId: id,
      sessionId,
      brokerId: ctx.config.brokerId,
      driver: runtime.driver,
      handId: acquired.handId,
      resources: spec.resources,
      limits: runtime.limits,
      provisionKey: key,
    });
    if (!inserted) {
      // Another Provision with this key was recorded first: the session uses that sandbox.
      log.info({ kept: row.sandboxId, key }, "a racing provision with the same key won; this sandbox is stopped");
      await runtime.stop("another provision with the same key won");
      await remotes?.detach();
      return keptFor(row);
    }
    const now = Date.now();
    ctx.live.add({ id, sessionId, runtime, limits: spec.limits, createdAt: now, lastUsedAt: now, remotes });
    const durationMs = Math.round(performance.now() - started);
    ctx.events.provisioned(sessionId, id, runtime.driver, durationMs);
    for (const failure of repositoryFailures) ctx.events.repositoryFailed(sessionId, id, failure);
    log.info({ driver: runtime.driver, warm: acquired.warm, duration_ms: durationMs }, "sandbox provisioned");
    return { sandbox: toSandbox(row), durationMs, warm: acquired.warm, repositoryFailures };
  } catch (err) {
    await runtime.stop("provisioning failed");
    await remotes?.detach();
    throw err;
  }
}

export function isLocal(runtime: SandboxRuntime): runtime is LocalSandbox {
  return "writeFiles" in runtime;
}

async function localSandbox(ctx: BrokerContext, spec: SandboxSpec, layer: LayerMount | undefined): Promise<Acquired> {
  // Warm sandboxes have no layer.
  if (layer === undefined && fitsWarmPool(spec.limits, ctx.config)) {
    const pooled = ctx.warm.take();
    if (pooled !== undefined) return { id: pooled.id, runtime: pooled.runtime, handId: "", warm: true };
  }
  // A new sandbox: the pool gives up a place it holds if the cap leaves none over.
  await ctx.warm.trim();
  const id = newSandboxId();
  return { id, runtime: await startLocalSandbox(ctx, id, spec.limits, layer), handId: "", warm: false };
}

function bindHand(ctx: BrokerContext, kind: string): Acquired {
  const hand = ctx.hands.pick(kind);
  if (hand === undefined) {
    const kinds = ctx.hands.kinds();
    throw new MhError(
      "FAILED_PRECONDITION",
      `no hand of kind "${kind}" is connected${kinds.length > 0 ? ` (connected: ${kinds.join(", ")})` : ""}`,
      { field: "hand_kind" },
    );
  }
  const id = newSandboxId();
  return { id, runtime: new HandSandbox(id, hand, ctx.config.outputCapBytes), handId: hand.handId, warm: false };
}
