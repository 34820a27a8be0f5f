/**
 * Release, ListSandboxes, DescribeSandbox and Transfer: reads come from Postgres (the record that
 * outlives processes), overlaid with the live clock of sandboxes this process runs.
 *
 * Who may do what: a sandbox is held by one session. Execute and Release with another session's
 * id are PERMISSION_DENIED. Transfer is a compare-and-set on the holder: from_session must be the
 * holder, else FAILED_PRECONDITION naming the actual holder (like expected_seq in the session log);
 * repeating a transfer that already happened succeeds. With workspace snapshots, a transferred
 * sandbox's workspace is saved under its new session at once: it follows the hand.
 */
import { checkNoNul } from "@metaharness/service-kit/grpc";
import { MhError } from "@metaharness/errors";
import {
  SandboxState,
  type DescribeSandboxRequest,
  type DescribeSandboxResponse,
  type ListSandboxesRequest,
  type ListSandboxesResponse,
  type ReleaseRequest,
  type ReleaseResponse,
  type Sandbox,
  type TransferRequest,
  type TransferResponse,
} from "@metaharness/proto";
import { getSandbox, listSandboxes, notFound, toSandbox, transferSandbox, type SandboxRow } from "../db/sandboxes.js";
import { requireField, requireLiveSession, type BrokerContext } from "./context.js";
import { handOverWorkspace } from "./workspace.js";

/** The recorded sandbox, with what this process knows sooner: its last use, and an end under way. */
function view(ctx: BrokerContext, row: SandboxRow): Sandbox {
  const sandbox = toSandbox(row);
  const live = ctx.live.get(row.sandboxId);
  if (live === undefined) return sandbox;
  const ended = live.ended === undefined ? {} : { state: live.ended.state, reason: live.ended.reason };
  return { ...sandbox, lastUsedAt: new Date(live.lastUsedAt), ...ended };
}

export async function release(ctx: BrokerContext, req: ReleaseRequest): Promise<ReleaseResponse> {
  const sandboxId = requireField(req.sandboxId, "sandbox_id");
  const live = ctx.live.get(sandboxId);
  const row = live === undefined ? await getSandbox(ctx.pool, sandboxId) : undefined;
  if (live === undefined && row === undefined) throw notFound(sandboxId);
  const holder = live?.sessionId ?? row?.sessionId ?? "";
  if (req.sessionId !== "" && req.sessionId !== holder) {
    throw new MhError("PERMISSION_DENIED", `sandbox ${sandboxId} is held by another session, not ${req.sessionId}`, {
      field: "session_id",
    });
  }
  if (live !== undefined) {
    await ctx.live.end(sandboxId, SandboxState.SANDBOX_STATE_RELEASED, `released by session ${req.sessionId || holder}`);
    return {};
  }
  if (row?.state === SandboxState.SANDBOX_STATE_READY && row.brokerId !== ctx.config.brokerId) {
    throw new MhError("FAILED_PRECONDITION", `sandbox ${sandboxId} is run by broker ${row.brokerId}; release it there`);
  }
  return {}; // ended already: releasing again changes nothing
}

/** A session's sandboxes, oldest first; an empty session_id lists every session's (an operator's view), at most 1000. */
export async function list(ctx: BrokerContext, req: ListSandboxesRequest): Promise<ListSandboxesResponse> {
  checkNoNul(req, "");
  const rows = await listSandboxes(ctx.pool, req.sessionId, req.includeEnded);
  return { sandboxes: rows.map((r) => view(ctx, r)) };
}

export async function describe(ctx: BrokerContext, req: DescribeSandboxRequest): Promise<DescribeSandboxResponse> {
  const sandboxId = requireField(req.sandboxId, "sandbox_id");
  const row = await getSandbox(ctx.pool, sandboxId);
  if (row === undefined) throw notFound(sandboxId);
  return { sandbox: view(ctx, row) };
}

export async function transfer(ctx: BrokerContext, req: TransferRequest): Promise<TransferResponse> {
  const sandboxId = requireField(req.sandboxId, "sandbox_id");
  const from = requireField(req.fromSession, "from_session");
  const to = await requireLiveSession(ctx, req.toSession, "to_session");
  const row = await transferSandbox(ctx.pool, sandboxId, from, to, ctx.config.brokerId);
  const live = ctx.live.get(sandboxId);
  if (live !== undefined) {
    const was = live.sessionId;
    live.sessionId = to;
    // Its git and egress remotes act with the previous session's credentials: they end here. The
    // files stay; repositories the new session adds get remotes of its own (AddRepositories).
    const remotes = live.remotes;
    live.remotes = undefined;
    await remotes?.detach();
    // A repeated transfer (already done) saves nothing again.
    if (was !== to) await handOverWorkspace(ctx, live);
  }
  ctx.logger.info({ sandbox_id: sandboxId, session_id: to, from_session: from }, "sandbox transferred");
  return { sandbox: view(ctx, row) };
}
