/**
 * Answers and confirmations sent to a session must name a tool use that waits for them. A
 * `user.custom_tool_result`, `user.tool_result` or `user.tool_confirmation` naming an unknown
 * tool use, one of another kind, or one already answered (or confirmed) would be a tool_result
 * the model never asked for: the next model request fails ("unexpected tool_use_id") and so does
 * every one after it. Such an event is refused (400, naming the field) and nothing is stored.
 *
 * The SDK names tool uses by the ids it was served (json/sdk.ts's publicEventId); each accepted
 * answer is stored with the log's own id of its tool use, and under an id derived from it
 * (`<tool use>.result`, `.confirmation`), so two answers racing past this check are one answer
 * in the log (the second is deduplicated) rather than two.
 */
import { isValidEventId, publicEventId, unansweredToolUses, type PendingToolUse, type ToolUseKind } from "@metaharness/events";
import type { Event } from "@metaharness/proto";
import { invalidRequest } from "../errors/api-error.js";
import type { SessionLogRpc } from "../clients.js";
import { readWholeLog } from "./log-scan.js";

/** What unansweredToolUses reads: the tool uses, their answers and confirmations. */
const TOOL_EVENTS = [
  "agent.tool_use",
  "agent.mcp_tool_use",
  "agent.custom_tool_use",
  "agent.tool_result",
  "agent.mcp_tool_result",
  "user.custom_tool_result",
  "user.tool_result",
  "user.tool_confirmation",
];

const NAMES_A_TOOL_USE: ReadonlySet<string> = new Set(["user.custom_tool_result", "user.tool_result", "user.tool_confirmation"]);

export function namesToolUses(events: readonly Event[]): boolean {
  return events.some((e) => NAMES_A_TOOL_USE.has(e.type));
}

/** Per type: the field naming the tool use, its payload key, the kind it must name. */
interface Rule {
  readonly field: "custom_tool_use_id" | "tool_use_id";
  readonly key: "customToolUseId" | "toolUseId";
  readonly suffix: "result" | "confirmation";
  /** The kind of tool use an answer must name; undefined: a confirmation (any that asks). */
  readonly kind: ToolUseKind | undefined;
}

const RULES: Readonly<Record<string, Rule>> = {
  userCustomToolResult: { field: "custom_tool_use_id", key: "customToolUseId", suffix: "result", kind: "custom" },
  userToolResult: { field: "tool_use_id", key: "toolUseId", suffix: "result", kind: "sandbox" },
  userToolConfirmation: { field: "tool_use_id", key: "toolUseId", suffix: "confirmation", kind: undefined },
};

/** Why `use` cannot take this event, or undefined when it can. */
function refusal(rule: Rule, use: PendingToolUse, confirmed: boolean): string | undefined {
  if (rule.kind !== undefined) {
    return use.kind === rule.kind ? undefined : `names an ${kindName(use.kind)} event, not an ${kindName(rule.kind)}`;
  }
  if (!use.needsConfirmation) return 'names a tool use that does not ask for confirmation (its evaluated_permission is not "ask")';
  return confirmed ? "names a tool use that was already confirmed or denied" : undefined;
}

function kindName(kind: ToolUseKind): string {
  return kind === "custom" ? "agent.custom_tool_use" : kind === "mcp" ? "agent.mcp_tool_use" : "agent.tool_use";
}

/**
 * `events` with the tool uses they name resolved to the log's ids, or a 400 naming the first
 * event that names no waiting tool use. Events that name none pass unchanged.
 */
export async function resolveAnswers(log: SessionLogRpc, sessionId: string, events: readonly Event[]): Promise<Event[]> {
  if (!namesToolUses(events)) return [...events];
  const pending = unansweredToolUses(await readWholeLog(log, sessionId, TOOL_EVENTS));
  const byServedId = new Map<string, PendingToolUse>();
  for (const use of pending) {
    byServedId.set(publicEventId(sessionId, use.event.id), use);
    byServedId.set(use.event.id, use);
  }
  const answered = new Set<string>();
  const confirmed = new Set(pending.filter((u) => u.confirmation !== undefined).map((u) => u.event.id));
  return events.map((event, i) => {
    const payload = event.payload;
    const rule = payload === undefined ? undefined : RULES[payload.$case];
    if (payload === undefined || rule === undefined) return event;
    const value = payload.value as unknown as Record<string, unknown>;
    const named = String(value[rule.key]);
    const field = `events[${i}].${rule.field}`;
    const use = byServedId.get(named);
    if (use === undefined || answered.has(use.event.id)) {
      throw invalidRequest(field, `${JSON.stringify(named)} names no tool use of this session that waits for an answer (unknown, or already answered)`);
    }
    const why = refusal(rule, use, confirmed.has(use.event.id));
    if (why !== undefined) throw invalidRequest(field, `${JSON.stringify(named)} ${why}`);
    if (rule.suffix === "result") answered.add(use.event.id);
    else confirmed.add(use.event.id);
    const id = `${use.event.id}.${rule.suffix}`;
    // The same payload, naming the tool use by the log's id.
    const renamed = { ...payload, value: { ...value, [rule.key]: use.event.id } } as unknown as Event["payload"];
    return { ...event, payload: renamed, id: isValidEventId(id) ? id : event.id };
  });
}
