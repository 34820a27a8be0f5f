/**
 * The tool uses of a session's log that still wait for an answer, with their confirmations. The
 * harness decides its next step from them (apps/harness/src/state.ts), and the gateway refuses
 * an answer or a confirmation that names no waiting tool use (apps/gateway/src/events/answers.ts):
 * one reading of the log for both, so what the gateway accepts is what the harness can use.
 */
import { EvaluatedPermission, ToolConfirmationResult, type Event } from "@metaharness/proto";

export type ToolUseKind = "sandbox" | "mcp" | "custom";

export interface PendingToolUse {
  readonly event: Event;
  readonly kind: ToolUseKind;
  readonly name: string;
  readonly input: Record<string, unknown>;
  readonly sandboxId: string;
  /** undefined: no confirmation needed or none yet. */
  readonly confirmation: "allow" | "deny" | undefined;
  readonly denyMessage: string;
  readonly needsConfirmation: boolean;
  /** When the call could run: its confirmation's time if it needed one, else its own. */
  readonly readyAt: Date | undefined;
}

/** Tool uses of the log that have no result yet, in order, with their confirmations. */
export function unansweredToolUses(events: readonly Event[]): PendingToolUse[] {
  const answered = new Set<string>();
  const confirmations = new Map<string, { result: ToolConfirmationResult; denyMessage: string; at: Date | undefined }>();
  for (const e of events) {
    const p = e.payload;
    if (p?.$case === "agentToolResult") answered.add(p.value.toolUseId);
    else if (p?.$case === "agentMcpToolResult") answered.add(p.value.mcpToolUseId);
    else if (p?.$case === "userCustomToolResult") answered.add(p.value.customToolUseId);
    else if (p?.$case === "userToolResult") answered.add(p.value.toolUseId);
    else if (p?.$case === "userToolConfirmation") confirmations.set(p.value.toolUseId, { ...p.value, at: e.createdAt });
  }
  const out: PendingToolUse[] = [];
  for (const e of events) {
    const p = e.payload;
    if (answered.has(e.id)) continue;
    let kind: ToolUseKind;
    let name: string;
    let input: Record<string, unknown> | undefined;
    let sandboxId = "";
    let permission = EvaluatedPermission.EVALUATED_PERMISSION_ALLOW;
    if (p?.$case === "agentToolUse") {
      kind = "sandbox";
      ({ name, input, sandboxId } = p.value);
      permission = p.value.evaluatedPermission;
    } else if (p?.$case === "agentMcpToolUse") {
      kind = "mcp";
      ({ name, input } = p.value);
      permission = p.value.evaluatedPermission;
    } else if (p?.$case === "agentCustomToolUse") {
      kind = "custom";
      ({ name, input } = p.value);
    } else continue;
    const needsConfirmation = permission === EvaluatedPermission.EVALUATED_PERMISSION_ASK;
    const c = confirmations.get(e.id);
    out.push({
      event: e,
      kind,
      name,
      input: input ?? {},
      sandboxId,
      needsConfirmation,
      confirmation:
        c === undefined ? undefined : c.result === ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_DENY ? "deny" : "allow",
      denyMessage: c?.denyMessage ?? "",
      readyAt: needsConfirmation ? c?.at : e.createdAt,
    });
  }
  return out;
}
