/**
 * Tool routing for the default loop (tool-loop.ts): where a call the model made goes (the context
 * strategy's own tools, an MCP server through the credential proxy, the broker's sandbox, or a
 * sandbox of the environment's hand kind), and running a step's calls one after another, each in
 * a span of its own and metered, its result appended as soon as it is known. Apart from the loop,
 * which decides steps from the log: where a call goes is a question of its own, and it grows with
 * every kind of hand.
 */
import type Anthropic from "@anthropic-ai/sdk";
import { MhError } from "@metaharness/errors";
import type { Event, Session } from "@metaharness/proto";
import type { ContextLogger } from "@metaharness/service-kit/logging";
import { SpanStatusCode, withSpan } from "@metaharness/telemetry";
import type { ContextStrategy } from "../context/strategy.js";
import type { LogPort } from "../log-port.js";
import type { PendingToolUse } from "../state.js";
import { addHandRoutes, toolRoutes, type ToolRoute } from "../tools/catalog.js";
import { isSelfHosted } from "../tools/environment.js";
import type { McpPort } from "../tools/mcp.js";
import type { SandboxPort, ToolOutcome } from "../tools/sandbox.js";
import { toolResult } from "./turn-events.js";
import type { TurnMeter } from "./turn-meter.js";

/** What routing a session's tool calls needs of the loop's context. */
export interface ToolHands {
  readonly session: Session;
  readonly log: LogPort;
  readonly sandbox: SandboxPort | undefined;
  readonly mcp?: McpPort | undefined;
  readonly logger: ContextLogger;
  /** Aborted when the lease is lost or the instance shuts down. */
  readonly signal: AbortSignal;
}

export class ToolRouter {
  /** Every tool the model is offered besides the strategy's own, by name. */
  readonly routes: Map<string, ToolRoute>;
  /** In a self-hosted environment: the tools its worker runs (the loop waits for their results). */
  readonly workerTools: ReadonlySet<string>;

  constructor(
    private readonly hands: ToolHands,
    private readonly strategy: ContextStrategy,
    private readonly meter: TurnMeter,
  ) {
    const selfHosted = isSelfHosted(hands.session.metadata);
    this.routes = toolRoutes(hands.session.metadata?.agent, selfHosted ? "worker" : "broker");
    this.workerTools = new Set(selfHosted ? [...this.routes.values()].filter((r) => r.kind === "sandbox").map((r) => r.name) : []);
  }

  /** The tools a model request offers: the routed ones and the strategy's own. */
  definitions(): Anthropic.Tool[] {
    return [...[...this.routes.values()].map((r) => r.definition), ...this.strategy.ownTools];
  }

  /**
   * The environment's hand (EnvironmentConfig.hand_kind): its connected hands' own tools join the
   * model's, run on a sandbox of that kind. None connected now: the turn goes on without them (a
   * later turn asks again), and a call to one made earlier is a tool error ("unknown tool").
   */
  async addHandTools(): Promise<void> {
    const { session, sandbox, logger, signal } = this.hands;
    const kind = session.metadata?.environment?.handKind ?? "";
    if (kind === "" || sandbox === undefined) return;
    try {
      const added = addHandRoutes(this.routes, kind, await sandbox.handTools(kind, signal));
      logger.debug({ hand_kind: kind, tools: added }, "hand tools offered");
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "CANCELLED") throw e;
      logger.warn({ hand_kind: kind, code: e.code, error: e.message }, "the environment's hand tools are not available");
    }
  }

  /**
   * Runs `tools` in order, appending each one's agent.tool_result; stops at once when `signal`
   * aborts (an interrupt: the loop's next step answers what is left).
   */
  async run(tools: readonly PendingToolUse[], signal: AbortSignal, append: (...events: Event[]) => Promise<void>): Promise<void> {
    for (const tool of tools) {
      if (signal.aborted) return;
      if (tool.confirmation === "deny") {
        const why = tool.denyMessage === "" ? "" : `: ${tool.denyMessage}`;
        await append(toolResult(tool.event.id, `the user denied this tool call${why}`, true, tool.kind === "mcp" ? "mcp" : "sandbox"));
        this.meter.toolCall(this.label(tool.name), tool.kind, "denied", 0);
        continue;
      }
      try {
        // A span per call (the broker's or the proxy's is its child), so a failed tool shows in
        // the trace, not only in its agent.tool_result event.
        const attributes = { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.name, "gen_ai.tool.call.id": tool.event.id, "mh.tool.kind": tool.kind };
        const began = Date.now();
        const outcome = await withSpan(`execute_tool ${tool.name}`, attributes, async (toolSpan) => {
          const result = await this.execute(tool, signal);
          if (result.isError) {
            toolSpan.setAttribute("error.type", "tool_error");
            // Not its output: a tracing backend is not where a sandbox's output is kept.
            toolSpan.setStatus({ code: SpanStatusCode.ERROR, message: "the tool call failed (its agent.tool_result says how)" });
          }
          return result;
        });
        this.meter.toolCall(this.label(tool.name), tool.kind, outcome.isError ? "error" : "ok", Date.now() - began);
        await append(toolResult(tool.event.id, outcome.output, outcome.isError, tool.kind === "mcp" ? "mcp" : "sandbox", outcome.exitCode));
      } catch (err) {
        if (MhError.from(err).code === "CANCELLED" && signal.aborted) return; // the interrupt step answers it
        throw err;
      }
    }
  }

  /** A tool's name as a metric label: a built-in's or the strategy's own; `mcp` for any MCP tool, `unknown` for a name the model made up. */
  private label(name: string): string {
    if (this.strategy.ownTools.some((t) => t.name === name)) return name;
    const route = this.routes.get(name);
    if (route === undefined) return "unknown";
    return route.kind === "mcp" ? "mcp" : route.kind === "custom" ? "custom" : name;
  }

  private async execute(tool: PendingToolUse, signal: AbortSignal): Promise<ToolOutcome> {
    const { log, mcp, sandbox } = this.hands;
    const own = this.strategy.ownTools.find((t) => t.name === tool.name);
    if (own !== undefined && this.strategy.runOwnTool !== undefined) {
      return this.strategy.runOwnTool(tool.name, tool.input, log);
    }
    const route = this.routes.get(tool.name);
    if (route === undefined) return { output: `unknown tool "${tool.name}"`, isError: true };
    if (route.kind === "mcp") {
      if (mcp === undefined) return { output: "MCP tools need the credential proxy, which is not configured", isError: true };
      return mcp.call(route.mcpServerUrl ?? "", tool.name, tool.input, tool.event.id, signal);
    }
    if (sandbox === undefined) return { output: "no sandbox broker is configured for this harness", isError: true };
    if (route.handKind !== undefined) return sandbox.executeOnHand(route.handKind, tool.name, tool.input, tool.event.id, signal, tool.event.seq);
    return sandbox.execute(tool.name, tool.input, tool.event.id, signal, tool.event.seq);
  }
}
