/**
 * Small builders for events used across tests.
 */
import { newEvent } from "@metaharness/events";
import type { Event } from "@metaharness/proto";

export function userMessage(text: string, id?: string): Event {
  return newEvent("user.message", { content: [{ block: { $case: "text", value: { text } } }] }, id ? { id } : {});
}

export function agentMessage(text: string, id?: string): Event {
  return newEvent("agent.message", { content: [{ block: { $case: "text", value: { text } } }] }, id ? { id } : {});
}

export function textOf(event: Event | undefined): string {
  const p = event?.payload;
  if (p?.$case === "userMessage" || p?.$case === "agentMessage" || p?.$case === "agentToolResult") {
    const b = p.value.content[0]?.block;
    if (b?.$case === "text") return b.value.text;
  }
  return "";
}
