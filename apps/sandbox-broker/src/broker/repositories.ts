/**
 * AddRepositories: a repository added to a session while its sandbox runs is cloned into that
 * sandbox, through the credential proxy as at Provision (remotes/attach.ts). Repositories tried
 * in this sandbox before (by mount path) are skipped, so the harness can pass the session's whole
 * list before each tool call; one that failed is tried again once MH_REPOSITORY_RETRY_MS has
 * passed (doubling after each failure), and each way it fails is reported once, as at Provision.
 */
import { MhError } from "@metaharness/errors";
import { SandboxState, type AddRepositoriesRequest, type AddRepositoriesResponse } from "@metaharness/proto";
import { getSandbox, notFound, runByAnotherBroker } from "../db/sandboxes.js";
import { SandboxRemotes } from "../remotes/attach.js";
import { resolveRepositories } from "../resources.js";
import { requireField, type BrokerContext } from "./context.js";
import { endedMessage } from "./live.js";
import { isLocal } from "./provision.js";

export async function addRepositories(ctx: BrokerContext, req: AddRepositoriesRequest): Promise<AddRepositoriesResponse> {
  const sandboxId = requireField(req.sandboxId, "sandbox_id");
  const sessionId = requireField(req.sessionId, "session_id");
  const repositories = resolveRepositories(req.repositories);
  const live = ctx.live.get(sandboxId);
  if (live === undefined) {
    const row = await getSandbox(ctx.pool, sandboxId);
    if (row === undefined || row.sessionId !== sessionId) throw notFound(sandboxId);
    if (row.state === SandboxState.SANDBOX_STATE_READY && row.brokerId !== ctx.config.brokerId) {
      throw runByAnotherBroker(sandboxId, row.brokerId);
    }
    throw new MhError("FAILED_PRECONDITION", endedMessage(sandboxId, row.state, row.reason), { field: "sandbox_id" });
  }
  // Another session's sandbox is not found: its existence is not this caller's business.
  if (live.sessionId !== sessionId) throw notFound(sandboxId);
  if (live.ended !== undefined) throw new MhError("FAILED_PRECONDITION", endedMessage(sandboxId, live.ended.state, live.ended.reason), { field: "sandbox_id" });
  if (!isLocal(live.runtime)) {
    throw new MhError("FAILED_PRECONDITION", `sandbox ${sandboxId} is an external hand: it has no workspace for repositories`, {
      field: "sandbox_id",
    });
  }
  if (repositories.length === 0) return { added: [], repositoryFailures: [] };
  live.remotes ??= SandboxRemotes.forSandbox(ctx, live.runtime, { sessionId, sandboxId }, live.limits.lifetimeSeconds);
  const { added, failures } = await live.remotes.addRepositories(repositories);
  for (const failure of failures) ctx.events.repositoryFailed(sessionId, sandboxId, failure);
  return { added, repositoryFailures: failures };
}
