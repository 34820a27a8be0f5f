/**
 * What the log says an external agent's session must do next. It is state.ts's nextStep with one
 * difference: an external agent's turn is one span (span.model_request_start .. _end) that may hold
 * tool calls and their results, which the agent has already seen. So only user input counts as
 * new: a message, or a result the client sent, after the start of the last completed turn or
 * after the last idle. Input that arrived during a turn therefore gets a turn of its own.
 */
import { completedRequests, nextStep, type NextStep } from "../../state.js";
import type { Limits } from "../../budget.js";
import type { Event } from "@metaharness/proto";

export function awaitsAgent(events: readonly Event[]): boolean {
  const completed = completedRequests(events);
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    const c = e.payload?.$case;
    if (c === "sessionStatusIdle") return false;
    if (c === "spanModelRequestStart" && completed.has(e.id)) return false;
    if (c === "userMessage" || c === "userCustomToolResult" || c === "userToolResult") return true;
  }
  return false;
}

export function externalStep(events: readonly Event[], limits: Limits): NextStep {
  const step = nextStep(events, limits);
  if ((step.kind === "call-model" || step.kind === "budget") && !awaitsAgent(events)) return { kind: "done" };
  return step;
}
