/**
 * Updating a session (SessionUpdateParams): its title and metadata; its agent's tools and MCP
 * servers while it is not running (the log refuses otherwise, under its lock); its budget in any
 * status but terminated (budget.ts says which changes are allowed). Whatever changed is recorded
 * in the log as one session.updated event before the gateway's record changes, so the harness
 * enforces a new budget from its next model request; a changed budget also wakes the harness, as
 * a raised budget resumes the turn the old one stopped.
 */
import type { BetaManagedAgentsBudgetLimit, BetaManagedAgentsSession, BetaManagedAgentsSessionAgent, SessionUpdateParams } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import { MhError } from "@metaharness/errors";
import { newEvent, type PayloadOf } from "@metaharness/events";
import { SessionStatus } from "@metaharness/proto";
import type { FastifyBaseLogger as Logger } from "fastify";
import { invalidRequest } from "../errors/api-error.js";
import { toAgentConfig } from "../agents/agent-config.js";
import { contextConfig } from "../agents/context-config.js";
import type { AgentStore } from "../agents/store.js";
import { patchMetadata, type Metadata } from "../http/metadata.js";
import type { PriceTable } from "../ui/browser/prices.js";
import { wake, type AppendDeps } from "./append.js";
import { budgetLimit, checkBudgetChange, listPrice } from "./budget.js";
import { logSession, viewSession, type LiveDeps } from "./live.js";
import { updateSnapshot } from "./session-agent.js";
import type { SessionRecord } from "./store.js";
import { refreshUsage } from "./usage.js";

export type SessionUpdateBody = Omit<SessionUpdateParams, "betas" | "workspace_id">;

/** What an update uses: the log (and the harness to wake), the records, the agents for their context settings, the list prices. */
export interface UpdateDeps extends AppendDeps, LiveDeps {
  readonly agents: AgentStore;
  readonly prices: PriceTable;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export async function updateSession(ctx: UpdateDeps, tenant: string, id: string, body: SessionUpdateBody, logger: Logger): Promise<BetaManagedAgentsSession> {
  const { agent, budget, vault_ids: vaultIds, title, metadata } = body;
  // The SDK documents vault_ids on update as reserved: "requests setting this field are rejected".
  if (vaultIds !== undefined) throw invalidRequest("vault_ids", "cannot be changed after a session is created (reserved for future use)");
  const current = await ctx.sessions.require(tenant, id);
  const model = current.agent.model.id;
  // Checked before anything goes to the log: a refused update changes nothing that runs.
  const patched = metadata === undefined || metadata === null ? undefined : patchMetadata(current.metadata, metadata);
  const nextBudget = budget === undefined || same(budget, current.budget) ? undefined : budget;
  if (nextBudget !== undefined) await checkBudget(ctx, current, nextBudget);
  const nextTitle = title === undefined ? undefined : title === "" ? null : title;
  let snapshot: BetaManagedAgentsSessionAgent | undefined;
  if (agent !== undefined) {
    snapshot = updateSnapshot(current.agent, agent);
    // The log decides under its lock whether the session is running (then it refuses): the
    // harness reads this configuration at the start of each turn.
    // The agent's context management (metadata keys) comes with it: context-config.ts.
    const context = contextConfig((await ctx.agents.get(tenant, snapshot.id, snapshot.version))?.body.metadata ?? {});
    const spend = { listPrice: listPrice(ctx.prices, model), budget: budgetOf(nextBudget === undefined ? current.budget : nextBudget) };
    await ctx.log.updateSession({ sessionId: current.id, putRepositories: [], removeRepositories: [], agent: toAgentConfig(snapshot, context, spend) }).catch((err: unknown) => {
      const e = MhError.from(err);
      if (e.code !== "FAILED_PRECONDITION") throw e;
      throw invalidRequest("agent", `cannot change now: ${e.message}`);
    });
  }
  const changes = changed(current, { budget: nextBudget, title: nextTitle, metadata: patched, agent: snapshot });
  if (changes !== undefined) {
    await ctx.log.emitEvents({ sessionId: current.id, events: [newEvent("session.updated", changes)] });
    if (nextBudget !== undefined) await wake(ctx, current.id, logger);
  }
  const updated = await ctx.sessions.update(
    tenant,
    current.id,
    {
      ...(nextTitle === undefined ? {} : { title: nextTitle }),
      ...(patched === undefined ? {} : { metadata: patched }),
      ...(snapshot === undefined ? {} : { agent: snapshot }),
      ...(nextBudget === undefined ? {} : { budget: nextBudget }),
    },
    ctx.now(),
  );
  return viewSession(ctx, updated);
}

function budgetOf(budget: BetaManagedAgentsBudgetLimit | null): PayloadOf<"session.usage">["budget"] {
  return budget === null ? undefined : budgetLimit(budget);
}

/** A budget changes in any status but terminated, and only as budget.ts allows. */
async function checkBudget(ctx: UpdateDeps, current: SessionRecord, next: BetaManagedAgentsBudgetLimit | null): Promise<void> {
  const live = await logSession(ctx, current.id);
  if (live.status === SessionStatus.SESSION_STATUS_TERMINATED) throw invalidRequest("budget", "the session is terminated");
  const usage = await refreshUsage(ctx.log, ctx.sessions, current, live.lastSeq);
  const model = current.agent.model.id;
  checkBudgetChange(current.budget, next, usage.listCostCents, listPrice(ctx.prices, model), model);
}

interface Requested {
  readonly budget: BetaManagedAgentsBudgetLimit | null | undefined;
  readonly title: string | null | undefined;
  readonly metadata: Metadata | undefined;
  readonly agent: BetaManagedAgentsSessionAgent | undefined;
}

/** The session.updated payload of what the update changes (each field only if it does), or undefined when nothing. */
function changed(current: SessionRecord, next: Requested): PayloadOf<"session.updated"> | undefined {
  const budget = next.budget === undefined ? undefined : { limit: budgetOf(next.budget) };
  const title = next.title === undefined || next.title === current.title ? undefined : { title: next.title ?? undefined };
  const metadata = next.metadata === undefined || same(next.metadata, current.metadata) ? undefined : next.metadata;
  const agent = next.agent === undefined || same(next.agent, current.agent) ? undefined : { ...next.agent };
  if (budget === undefined && title === undefined && metadata === undefined && agent === undefined) return undefined;
  // Metadata cleared to empty is a change the event shows by leaving the field out (SDK).
  return { budget, title, metadata: metadata ?? {}, agent };
}
