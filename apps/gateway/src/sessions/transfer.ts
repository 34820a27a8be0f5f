/**
 * Handing a session's sandbox to another session (issue 29): `POST
 * /v1/sessions/{session_id}/sandbox/transfer` with `{ to_session_id, sandbox_id? }`, Meta-Harness's
 * own route (the SDK has no call for it: `client.post`), for an operator or a coordinator agent.
 * The sandbox (the session's default one, its oldest running local sandbox, unless `sandbox_id`
 * names another of its sandboxes) keeps its processes and files and becomes the other session's:
 * the broker's Transfer, which with workspace snapshots saves the workspace under the new session
 * at once, so the files follow the hand. Both sessions must be the tenant's (404), the target
 * must not run tools on workers nor be the same session (400), and the source must have a
 * running sandbox while the target has none of its own (409, so the target's next call runs in
 * the sandbox it was given rather than one it already had).
 */
import { MhError } from "@metaharness/errors";
import { SandboxState, isExternalDriver, type Sandbox } from "@metaharness/proto";
import { ApiError, invalidRequest, notFound } from "../errors/api-error.js";
import type { SandboxBrokerRpc } from "../clients.js";
import type { Router } from "../http/router.js";
import { obj, str, type JsonSchema } from "../http/json-schema.js";
import { sessionParams } from "./schemas.js";
import type { SessionRecord, SessionStore } from "./store.js";

export interface TransferBody {
  readonly to_session_id: string;
  readonly sandbox_id?: string;
}

/** What the route answers: the sandbox, who held it, who holds it now. */
export interface SandboxTransferJson {
  readonly type: "sandbox_transfer";
  readonly sandbox_id: string;
  readonly from_session_id: string;
  readonly to_session_id: string;
  readonly transferred_at: string;
}

export const transferBody: JsonSchema = obj(
  {
    to_session_id: str("The session that takes the sandbox.", { minLength: 1, maxLength: 128 }),
    sandbox_id: str("Which of the session's sandboxes; its default one (the oldest running) when omitted.", { minLength: 1, maxLength: 256 }),
  },
  ["to_session_id"],
);

export interface TransferDeps {
  readonly sessions: SessionStore;
  /** Undefined when the gateway has no sandbox broker configured. */
  readonly broker: SandboxBrokerRpc | undefined;
  now(): Date;
}

const conflict = (field: string, message: string): ApiError => new ApiError("conflict", `${field}: ${message}`);

/** The session's running local sandboxes, oldest first. */
async function running(broker: SandboxBrokerRpc, sessionId: string): Promise<Sandbox[]> {
  const { sandboxes } = await broker.listSandboxes({ sessionId, includeEnded: false });
  return sandboxes.filter((s) => s.state === SandboxState.SANDBOX_STATE_READY && !isExternalDriver(s.driver));
}

export async function transferSandbox(ctx: TransferDeps, tenant: string, fromId: string, body: TransferBody): Promise<SandboxTransferJson> {
  const from = await ctx.sessions.require(tenant, fromId);
  const to = await ctx.sessions.get(tenant, body.to_session_id);
  if (to === undefined) throw notFound("session", body.to_session_id);
  if (to.id === from.id) throw invalidRequest("to_session_id", `is the session that holds the sandbox (${from.id})`);
  if (to.environmentType === "self_hosted") {
    throw invalidRequest("to_session_id", `session ${to.id} runs its tools on its environment's workers: it takes no sandbox`);
  }
  if (to.archivedAt !== null) throw conflict("to_session_id", `session ${to.id} is archived: it runs no more tools`);
  const broker = ctx.broker;
  if (broker === undefined) throw invalidRequest("", "this gateway has no sandbox broker configured (MH_SANDBOX_BROKER_ADDR): there is no sandbox to transfer");
  const sandboxId = await pick(broker, from, body.sandbox_id);
  const theirs = await running(broker, to.id);
  if (theirs[0] !== undefined) {
    throw conflict("to_session_id", `session ${to.id} already has a running sandbox (${theirs[0].sandboxId}); its calls would go on running there`);
  }
  try {
    await broker.transfer({ sandboxId, fromSession: from.id, toSession: to.id });
  } catch (err) {
    const e = MhError.from(err);
    if (e.code === "NOT_FOUND") throw notFound("sandbox", sandboxId);
    // Ended meanwhile, held by another session now, the target terminated, or run by another broker.
    if (e.code === "FAILED_PRECONDITION") throw conflict(e.field === "to_session" ? "to_session_id" : "sandbox_id", e.message);
    throw e;
  }
  return { type: "sandbox_transfer", sandbox_id: sandboxId, from_session_id: from.id, to_session_id: to.id, transferred_at: ctx.now().toISOString() };
}

/** The sandbox to hand over: the one named (it must be the session's), else its default. */
async function pick(broker: SandboxBrokerRpc, from: SessionRecord, named: string | undefined): Promise<string> {
  if (named !== undefined) {
    const { sandboxes } = await broker.listSandboxes({ sessionId: from.id, includeEnded: true });
    const found = sandboxes.find((s) => s.sandboxId === named);
    // Another session's sandbox (another tenant's included) is not named to this caller.
    if (found === undefined) throw notFound("sandbox", named);
    if (found.state !== SandboxState.SANDBOX_STATE_READY) throw conflict("sandbox_id", `sandbox ${named} has ended (${found.reason}): there is nothing to transfer`);
    return named;
  }
  const mine = await running(broker, from.id);
  if (mine[0] === undefined) {
    throw conflict("session_id", `session ${from.id} has no running sandbox (its first sandbox tool call starts one; an idle one paused since starts again at its next call)`);
  }
  return mine[0].sandboxId;
}

export function registerTransferRoute(router: Router, ctx: TransferDeps): void {
  router.add<{ Params: { session_id: string }; Body: TransferBody }>(
    {
      method: "POST",
      url: "/v1/sessions/:session_id/sandbox/transfer",
      sdk: "beta.sessions.sandbox.transfer",
      summary: "Hand the session's sandbox (its files and processes) to another session of the tenant. Meta-Harness's own route.",
      response: "SandboxTransfer",
      errors: ["not_found", "conflict"],
      schema: { params: sessionParams, body: transferBody },
      extension: true,
    },
    async (req): Promise<SandboxTransferJson> => {
      const done = await transferSandbox(ctx, req.tenant, req.params.session_id, req.body);
      req.log.info({ session_id: done.from_session_id, to_session_id: done.to_session_id, sandbox_id: done.sandbox_id }, "sandbox transferred");
      return done;
    },
  );
}
