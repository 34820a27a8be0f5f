/**
 * The agent and environment `mh run` uses unless told otherwise: created once per deployment and
 * found again by name and by the metadata the CLI marks them with, so runs do not pile up
 * copies. A different model or system prompt is another agent (found again the same way).
 */
import type Anthropic from "@anthropic-ai/sdk";

export const CLI_MARK = "mh.cli";
export const DEFAULT_AGENT_NAME = "mh-default";
export const DEFAULT_ENVIRONMENT_NAME = "mh-default";
/** A model the real API serves; the offline model answers any name. */
export const DEFAULT_MODEL = "claude-sonnet-5-5";
export const DEFAULT_SYSTEM = "You are a capable software engineer working in a sandbox. Be brief.";

export interface AgentSpec {
  readonly name: string;
  readonly model: string;
  readonly system: string;
}

/** The id of an agent with this name, model and system prompt that the CLI made, or a new one. */
export async function ensureAgent(client: Anthropic, spec: AgentSpec): Promise<string> {
  for await (const agent of client.beta.agents.list({ limit: 100 })) {
    if (agent.name === spec.name && agent.metadata[CLI_MARK] === "1" && agent.model.id === spec.model && agent.system === spec.system) {
      return agent.id;
    }
  }
  const created = await client.beta.agents.create({
    name: spec.name,
    model: spec.model,
    system: spec.system,
    tools: [{ type: "agent_toolset_20260401" }],
    metadata: { [CLI_MARK]: "1" },
  });
  return created.id;
}

/** The id of the CLI's environment of this name, or a new one. */
export async function ensureEnvironment(client: Anthropic, name = DEFAULT_ENVIRONMENT_NAME): Promise<string> {
  for await (const env of client.beta.environments.list({ limit: 100 })) {
    if (env.name === name && env.archived_at === null && env.metadata[CLI_MARK] === "1") return env.id;
  }
  const created = await client.beta.environments.create({ name, metadata: { [CLI_MARK]: "1" } });
  return created.id;
}
