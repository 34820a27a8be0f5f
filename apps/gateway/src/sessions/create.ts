/**
 * Creating a session: resolve the agent (one version, with overrides), the environment and the
 * vaults of this tenant, check every input before anything is written, create the session in the
 * log with the agent snapshotted as the harness's AgentConfig, the environment's config and its
 * repositories, hand the repositories' tokens to the credential vault proxy, record the gateway's
 * view, then append the initial events and wake the harness. The log's session comes first: a
 * failure between the writes leaves an empty session nobody can see, never a visible session
 * without a log or a token in the clear.
 */
import type { BetaManagedAgentsSession, SessionCreateParams } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { fromManagedAgentsParams, newSessionId } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import type { FastifyBaseLogger as Logger } from "fastify";
import { ApiError, invalidRequest, notFound } from "../errors/api-error.js";
import { toAgentConfig } from "../agents/agent-config.js";
import { contextConfig } from "../agents/context-config.js";
import { toEnvironmentSnapshot, unhonoured } from "../environments/environment-config.js";
import { handKindOf } from "../environments/hand.js";
import { checkMetadata } from "../http/metadata.js";
import { resolveResources, type ResolvedResource } from "./resources.js";
import { readReference, snapshotAgent } from "./session-agent.js";
import type { CredentialProxyRpc } from "../clients.js";
import type { AgentStore } from "../agents/store.js";
import type { Queryable } from "@metaharness/db";
import { readSessionSources, type SourcesCache } from "./sources.js";
import { NO_TOKENS, type NewSession, type ResourceTokens, type SessionRecord } from "./store.js";
import { VaultAccess } from "../vaults/access.js";
import { sessionVaultIds } from "../vaults/session-vaults.js";
import { appendUserEvents, type AppendDeps } from "./append.js";
import { requestHands, type HandsDeps } from "../work/hands.js";
import { dropVault, putToken } from "./repository-tokens.js";
import { viewSession, type LiveDeps } from "./live.js";
import { budgetLimit, checkBudgetable, listPrice } from "./budget.js";
import type { PriceTable } from "../ui/browser/prices.js";
import { workspaceFork } from "./fork.js";

export type SessionCreateBody = Omit<SessionCreateParams, "betas" | "workspace_id">;

function initialEvents(params: SessionCreateBody["initial_events"]): Event[] {
  return (params ?? []).map((json, i) => {
    const field = `initial_events[${i}]`;
    if (json.type !== "user.message") throw invalidRequest(`${field}.type`, `"${json.type}" is not supported here; initial events are user.message`);
    return fromManagedAgentsParams(json, field);
  });
}

/** What creating a session uses: the agents and environments it names, the log, the harness, hands, the vault proxy, the list prices. */
export interface CreateDeps extends AppendDeps, HandsDeps, LiveDeps {
  /** The models' list prices: a session's usage is priced with its model's, and a budget needs one. */
  readonly prices: PriceTable;
  /** The agent and environment a session names are read from it in one statement (sources.ts)... */
  readonly db: Queryable;
  /** ...unless kept here from an earlier read. */
  readonly sources: SourcesCache;
  readonly agents: AgentStore;
  /** Undefined when this deployment runs without a credential vault proxy. */
  readonly credentials: CredentialProxyRpc | undefined;
}

export async function createSession(ctx: CreateDeps, tenant: string, body: SessionCreateBody, logger: Logger): Promise<BetaManagedAgentsSession> {
  const ref = readReference(body.agent);
  const { agent, agentExists, environment } = await readSessionSources(ctx.db, ctx.sources, tenant, ref, body.environment_id);
  if (agent === undefined) {
    throw ref.version !== undefined && agentExists ? invalidRequest("agent.version", `agent ${ref.id} has no version ${ref.version}`) : notFound("agent", ref.id);
  }
  if (agent.archivedAt !== null) throw invalidRequest("agent", `agent ${agent.id} is archived; new sessions cannot use it`);
  if (environment === undefined) {
    throw new ApiError("environment_not_found", `environment_id: environment ${JSON.stringify(body.environment_id)} not found`);
  }
  if (environment.archivedAt !== null) {
    throw new ApiError("environment_archived", `environment_id: environment ${environment.id} is archived; new sessions cannot use it`);
  }
  // Stored before the gateway refused such configs: say so rather than run it as something else.
  const refused = unhonoured(environment.body.config);
  if (refused !== undefined) throw invalidRequest("environment_id", `environment ${environment.id} must be updated first: ${refused.message}`);
  const now = ctx.now();
  const snapshot = snapshotAgent(agent, ref.overrides);
  const price = listPrice(ctx.prices, snapshot.model.id);
  if (body.budget !== undefined) checkBudgetable(price, snapshot.model.id);
  const asked = checkMetadata(body.metadata ?? {});
  const forked = await workspaceFork(ctx, tenant, asked, { selfHosted: environment.body.config.type === "self_hosted" });
  const metadata = checkMetadata(forked?.metadata ?? asked);
  const resources = resolveResources(body.resources, now, { proxied: ctx.credentials !== undefined, selfHosted: environment.body.config.type === "self_hosted" });
  const events = initialEvents(body.initial_events);
  const title = body.title === undefined || body.title === "" ? null : body.title;
  const vaultIds = await sessionVaultIds(new VaultAccess(ctx.credentials), tenant, body.vault_ids);

  const sessionId = newSessionId();
  const { session } = await ctx.log.createSession({
    sessionId,
    metadata: {
      agentId: agent.id,
      agentVersion: agent.version,
      tenant,
      labels: {},
      harness: "",
      environmentId: environment.id,
      vaultIds,
      title: title ?? "",
      agent: toAgentConfig(snapshot, contextConfig(agent.body.metadata), { listPrice: price, budget: body.budget === undefined ? undefined : budgetLimit(body.budget) }),
      environment: toEnvironmentSnapshot(environment.body.config, handKindOf(environment.body.metadata)),
      repositories: resources.map((r) => r.repository),
      workspaceFork: forked?.fork,
    },
  });
  const tokens = await storeTokens(ctx, tenant, sessionId, resources, logger);
  const record = await recordSession(ctx, tenant, tokens, logger, {
    id: sessionId,
    agentId: agent.id,
    agentVersion: agent.version,
    agent: snapshot,
    environmentId: environment.id,
    environmentType: environment.body.config.type,
    title,
    metadata,
    resources: resources.map((r) => r.resource),
    vaultIds,
    budget: body.budget ?? null,
    createdAt: now,
  });
  logger.info({ session_id: sessionId, agent_id: agent.id, agent_version: agent.version, initial_events: events.length }, "session created");
  if (events.length > 0) {
    await appendUserEvents(ctx, sessionId, events, logger);
    await requestHands(ctx, tenant, record, "input", logger);
    return viewSession(ctx, record);
  }
  return viewSession(ctx, record, session);
}

/** Records the gateway's view; on failure, the tokens just stored are dropped (nothing would ever find them). */
async function recordSession(ctx: Pick<CreateDeps, "sessions" | "credentials">, tenant: string, tokens: ResourceTokens, logger: Logger, s: Omit<NewSession, "tokens">): Promise<SessionRecord> {
  try {
    return await ctx.sessions.create(tenant, { ...s, tokens });
  } catch (err) {
    await dropVault(ctx.credentials, tokens.vaultId).catch((e: unknown) => logger.warn({ err: e, session_id: s.id }, "could not drop the vault of a session that failed to start"));
    throw err;
  }
}

/** Puts each resource's token in the session's own vault; on failure, drops what was put. */
async function storeTokens(ctx: Pick<CreateDeps, "credentials">, tenant: string, sessionId: string, resources: readonly ResolvedResource[], logger: Logger): Promise<ResourceTokens> {
  let vaultId: string | null = null;
  const credentials: Record<string, string> = {};
  try {
    for (const { resource, token } of resources) {
      // resolveResources refuses repositories when there is no proxy, so it is there.
      if (token === undefined || ctx.credentials === undefined) continue;
      const stored = await putToken(ctx.credentials, vaultId, undefined, { tenant, sessionId, resourceId: resource.id, url: resource.url }, token);
      vaultId = stored.vaultId;
      credentials[resource.id] = stored.credentialId;
    }
    return vaultId === null ? NO_TOKENS : { vaultId, credentials };
  } catch (err) {
    await dropVault(ctx.credentials, vaultId).catch((e: unknown) => logger.warn({ err: e, session_id: sessionId }, "could not drop the vault of a session that failed to start"));
    throw err;
  }
}
