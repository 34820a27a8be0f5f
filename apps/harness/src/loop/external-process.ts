/**
 * The "external-process" harness: any program, in any language, can be a session's brain, while
 * Meta-Harness keeps what a brain must not own: the log, the lease and the hands. The program
 * speaks line-delimited JSON on stdin/stdout (protocol version 1):
 *
 *   harness -> agent
 *     {"type":"start","protocol":1,"session_id":"sesn_…","agent":"echo","system":"…","tools":[…]}
 *         once, first. `tools` are the sandbox tools it may call (Messages API tool definitions).
 *     {"type":"events","events":[…]}
 *         starts a turn. The log's events the agent has not been sent yet, as the Managed Agents
 *         API renders them (id, type, seq, …): the whole history in the first turn of a process,
 *         then what was appended since (the agent's own output included, as recorded).
 *     {"type":"tool_result","id":"<the agent's id>","tool_use_id":"sevt_…","content":"…","is_error":false}
 *         the answer to one "tool" line.
 *     EOF on stdin: no more turns; exit.
 *   agent -> harness
 *     {"type":"emit","event":{"type":"agent.message","content":[{"type":"text","text":"…"}]}}
 *     {"type":"emit","event":{"type":"agent.thinking","thinking":"…"}}
 *         recorded in the log at once (under the lease).
 *     {"type":"tool","id":"c1","name":"bash","input":{"command":"ls"}}
 *         runs a sandbox tool through the broker; recorded as agent.tool_use + agent.tool_result.
 *     {"type":"idle","stop_reason":"end_turn","usage":{"input_tokens":0,"output_tokens":0}}
 *         ends the turn (usage counts against the session's token budget).
 *     stderr is free text; its tail is quoted when the process fails.
 *
 * Which program: the operator lists them by name (MH_EXTERNAL_AGENTS), the session picks one with
 * its `mh.external.agent` label (external/config.ts); a session never names a command. A process
 * is started on the first turn of a wake and gets EOF when the session goes idle: it is
 * disposable, its memory is the log. A turn is one span (span.model_request_start/_end): the
 * agent is "the model". Everything is decided from the log (turn-state.ts), so a crash of the
 * harness loses nothing: the next instance starts a fresh process and sends it the whole
 * history; a tool call whose outcome is unknown is reported as interrupted, never replayed. A
 * process that exits, prints garbage or stays silent too long ends the turn with session.error
 * and idle; it is killed when the lease is lost or the turn is interrupted.
 */
import { MhError } from "@metaharness/errors";
import { ConfigError } from "@metaharness/service-kit/config";
import { newEvent, toManagedAgentsJson } from "@metaharness/events";
import { EvaluatedPermission, type Event } from "@metaharness/proto";
import { lastStatus, neverRan, userInputAfter, type NextStep } from "../state.js";
import { limitsOf } from "../budget.js";
import { toolRoutes, type ToolRoute } from "../tools/catalog.js";
import { isSelfHosted } from "../tools/environment.js";
import type { ToolOutcome } from "../tools/sandbox.js";
import { AgentProcess } from "./external/agent-process.js";
import { AGENT_LABEL, DEFAULT_AGENT, agentEnv, loadExternalConfig, type ExternalConfig } from "./external/config.js";
import { AgentProcessError } from "./external/errors.js";
import { PROTOCOL_VERSION, type AgentLine } from "./external/protocol.js";
import { externalStep } from "./external/turn-state.js";
import { SessionEvents } from "./session-events.js";
import type { HarnessLoop, LoopContext } from "./harness-loop.js";
import { RetryStatus, StopReasonType, idle, running, sessionError, toolResult } from "./turn-events.js";

export const EXTERNAL_PROCESS = "external-process";
const UNKNOWN_OUTCOME = "interrupted: the harness stopped before this call finished; its outcome is unknown";
const NO_BROKER: ToolOutcome = { output: "no sandbox broker is configured for this harness", isError: true };

/** `config` defaults to the environment, read when a session's agent starts (see external/config.ts). */
export function createExternalProcessLoop(config: () => ExternalConfig = () => loadExternalConfig()): HarnessLoop {
  return { name: EXTERNAL_PROCESS, run: (ctx) => new ExternalDriver(ctx, config).run() };
}

export const externalProcessLoop: HarnessLoop = createExternalProcessLoop();

class ExternalDriver {
  private view: SessionEvents | undefined;
  private agent: AgentProcess | undefined;
  /** The last seq the current process was sent. */
  private sentSeq = 0;
  private turn: AbortController | undefined;
  private readonly routes: Map<string, ToolRoute>;
  private readonly agentName: string;

  private config: ExternalConfig | undefined;

  constructor(
    private readonly ctx: LoopContext,
    private readonly loadConfig: () => ExternalConfig,
  ) {
    this.routes = toolRoutes(ctx.session.metadata?.agent);
    this.agentName = ctx.session.metadata?.labels[AGENT_LABEL] || DEFAULT_AGENT;
  }

  async run(): Promise<void> {
    const limits = limitsOf(this.ctx.session.metadata?.agent);
    this.view = await SessionEvents.open(this.ctx, () => this.turn?.abort(new MhError("CANCELLED", "interrupted")), limits);
    await this.view.inputLanding(this.ctx.awaitInputMs, this.ctx.signal);
    try {
      while (!this.ctx.signal.aborted) {
        // Decided on the log up to `seen`: a step that ends the turn appends only if nothing came since.
        const seen = this.lastSeq();
        if (!(await this.perform(externalStep(this.events, limits), seen))) return;
      }
    } finally {
      this.view.close();
      await this.stopAgent(this.ctx.signal.aborted);
    }
  }

  private get events(): Event[] {
    return this.view?.events ?? [];
  }

  private lastSeq(): number {
    return this.view?.lastSeq() ?? 0;
  }

  private async append(...events: Event[]): Promise<void> {
    if (this.view === undefined) throw new MhError("INTERNAL", "append before the session's events were read");
    await this.view.append(...events);
  }

  /**
   * Appends events that end the turn only if the log still ends at `seen`: an idle landing after
   * input the decision did not see would mark it answered, and with the lease still held no Wake
   * comes for it (the gateway skips it) nor a sweep (the session awaits no harness). False, with
   * the view brought up to date, when something came since: the caller decides again.
   */
  private async appendAt(seen: number, ...events: Event[]): Promise<boolean> {
    if (this.view === undefined) throw new MhError("INTERNAL", "append before the session's events were read");
    return this.view.appendAt(seen, ...events);
  }

  private async stopAgent(now: boolean): Promise<void> {
    const agent = this.agent;
    this.agent = undefined;
    this.sentSeq = 0;
    await agent?.stop({ now });
  }

  /** Performs one step, decided on the log up to `seen`; false when the session has nothing more to do for now. */
  private async perform(step: NextStep, seen: number): Promise<boolean> {
    const status = lastStatus(this.events);
    switch (step.kind) {
      case "stop":
        return false;
      case "done":
        if (neverRan(this.events)) return false;
        if (status?.payload?.$case !== "sessionStatusIdle") return !(await this.appendAt(seen, idle(StopReasonType.STOP_REASON_TYPE_END_TURN)));
        if (userInputAfter(this.events, status)) {
          return !(await this.appendAt(seen, idle(status.payload.value.stopReason?.type ?? StopReasonType.STOP_REASON_TYPE_END_TURN)));
        }
        return false;
      case "wait": {
        const ids = status?.payload?.$case === "sessionStatusIdle" ? status.payload.value.stopReason?.eventIds ?? [] : [];
        if (ids.join() !== step.eventIds.join() || userInputAfter(this.events, status)) {
          return !(await this.appendAt(seen, idle(StopReasonType.STOP_REASON_TYPE_REQUIRES_ACTION, step.eventIds)));
        }
        return false;
      }
      case "budget":
        await this.appendAt(seen, idle(StopReasonType.STOP_REASON_TYPE_BUDGET_REACHED));
        return true;
      case "interrupt":
        await this.stopAgent(true);
        await this.appendAt(
          seen,
          ...step.unanswered.map((t) => toolResult(t.event.id, "interrupted by the user before it finished", true)),
          idle(StopReasonType.STOP_REASON_TYPE_INTERRUPTED),
        );
        return true;
      case "run-tools":
      case "await-hands": // never: this loop names no worker tools (it refuses self-hosted sessions' calls)
        // Only a crash leaves a call of this loop unanswered: its outcome is unknown, so say so.
        await this.append(...step.tools.map((t) => toolResult(t.event.id, UNKNOWN_OUTCOME, true)));
        return true;
      case "call-model":
        if (status?.payload?.$case !== "sessionStatusRunning") await this.append(running());
        await this.runTurn();
        return true;
    }
  }

  /** One turn of the agent, recorded as one span; an agent failure ends it with session.error. */
  private async runTurn(): Promise<void> {
    const start = newEvent("span.model_request_start", { model: `external:${this.agentName}` });
    await this.append(start);
    this.turn = new AbortController();
    const signal = AbortSignal.any([this.turn.signal, this.ctx.signal]);
    const end = (isError: boolean, stopReason = "", usage = { inputTokens: 0, outputTokens: 0 }): Event =>
      newEvent("span.model_request_end", {
        modelRequestStartId: start.id,
        isError,
        modelUsage: { ...usage, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 },
        stopReason,
      });
    try {
      const { agent, timeoutMs } = await this.startedAgent(signal);
      // Up to what is known now: input merged while the line is written goes with the next turn.
      const upTo = this.lastSeq();
      const fresh = this.events.filter((e) => e.seq > this.sentSeq && e.seq <= upTo);
      await agent.send({ type: "events", events: fresh.map((e) => toManagedAgentsJson(e)) }, signal, timeoutMs);
      this.sentSeq = upTo;
      for (;;) {
        const line = await agent.next(signal, timeoutMs);
        if (line.type === "idle") return await this.append(end(false, line.stopReason, line.usage));
        await this.handle(agent, line, signal, timeoutMs);
      }
    } catch (err) {
      if (this.ctx.signal.aborted) throw err;
      if (err instanceof AgentProcessError) {
        const sessionId = this.ctx.log.sessionId;
        this.ctx.logger.warn({ err: err.message, kind: err.kind, sessionId }, "external agent failed; ending the turn");
        await this.stopAgent(true);
        return await this.append(
          end(true),
          sessionError(`external_agent_${err.kind}`, err.message, RetryStatus.RETRY_STATUS_EXHAUSTED),
          idle(StopReasonType.STOP_REASON_TYPE_RETRIES_EXHAUSTED),
        );
      }
      if (MhError.from(err).code !== "CANCELLED" || !signal.aborted) throw err;
      // An interrupt: the process is mid-turn, so it goes; the next step records the interrupt.
      await this.stopAgent(true);
      await this.append(end(true));
    } finally {
      this.turn = undefined;
    }
  }

  private async handle(agent: AgentProcess, line: Exclude<AgentLine, { type: "idle" }>, signal: AbortSignal, timeoutMs: number): Promise<void> {
    if (line.type === "emit") return this.append(line.event);
    const refused = this.refusal(line.name);
    const use = newEvent("agent.tool_use", {
      name: line.name,
      input: line.input,
      evaluatedPermission:
        refused === undefined ? EvaluatedPermission.EVALUATED_PERMISSION_ALLOW : EvaluatedPermission.EVALUATED_PERMISSION_DENY,
      sandboxId: "",
    });
    await this.append(use);
    const sandbox = this.ctx.sandbox;
    const outcome: ToolOutcome =
      refused ?? (sandbox === undefined ? NO_BROKER : await sandbox.execute(line.name, line.input, use.id, signal));
    await this.append(toolResult(use.id, outcome.output, outcome.isError));
    const answer = { type: "tool_result", id: line.id, tool_use_id: use.id, content: outcome.output, is_error: outcome.isError } as const;
    await agent.send(answer, signal, timeoutMs);
  }

  /** Why a tool call is not run, or undefined when it goes to the sandbox. */
  private refusal(name: string): ToolOutcome | undefined {
    if (isSelfHosted(this.ctx.session.metadata)) {
      return { output: "the external-process harness cannot hand tool calls to a self-hosted environment's workers", isError: true };
    }
    const route = this.routes.get(name);
    if (route === undefined || route.kind !== "sandbox") {
      return { output: `unknown tool "${name}": an external agent may call the session's sandbox tools`, isError: true };
    }
    if (route.ask) {
      return { output: `"${name}" needs the user's confirmation, which the external-process harness does not support yet`, isError: true };
    }
    return undefined;
  }

  /** The operator's configuration; a bad one fails the turn like any agent that cannot start. */
  private configured(): ExternalConfig {
    try {
      return (this.config ??= this.loadConfig());
    } catch (err) {
      if (err instanceof ConfigError) throw new AgentProcessError("config", err.message, { cause: err });
      throw err;
    }
  }

  /** The session's agent process, started (and greeted) on the first turn that needs it. */
  private async startedAgent(signal: AbortSignal): Promise<{ agent: AgentProcess; timeoutMs: number }> {
    const config = this.configured();
    const timeoutMs = config.silenceTimeoutMs;
    if (this.agent !== undefined) return { agent: this.agent, timeoutMs };
    const argv = config.agents.get(this.agentName);
    if (argv === undefined) {
      throw new AgentProcessError("config", `no external agent named "${this.agentName}" is configured (MH_EXTERNAL_AGENTS)`);
    }
    const sessionId = this.ctx.log.sessionId;
    this.agent = new AgentProcess({ argv, env: agentEnv(config, sessionId), maxLineBytes: config.maxLineBytes });
    this.sentSeq = 0;
    this.ctx.logger.info({ agent: this.agentName, pid: this.agent.pid }, "started the external agent");
    const tools = [...this.routes.values()].filter((r) => r.kind === "sandbox" && !r.ask).map((r) => r.definition);
    const system = this.ctx.session.metadata?.agent?.system ?? "";
    const start = { type: "start", protocol: PROTOCOL_VERSION, session_id: sessionId, agent: this.agentName, system, tools } as const;
    await this.agent.send(start, signal, timeoutMs);
    return { agent: this.agent, timeoutMs };
  }
}
