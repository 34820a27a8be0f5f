/**
 * The registry of event types. A type string "agent.mcp_tool_use" names the oneof field
 * `agent_mcp_tool_use` of `Event.payload`, which ts-proto turns into the $case "agentMcpToolUse".
 * The mapping is derived, not listed: by template-literal types at compile time, and from the
 * generated `Event.fromJSON` at module load, so a proto and a registry that disagree fail early.
 */
import { Event } from "@metaharness/proto";

/** Every event type, in the order of the oneof in event.proto. */
export const EVENT_TYPES = [
  "user.message",
  "user.interrupt",
  "user.custom_tool_result",
  "user.tool_confirmation",
  "user.tool_result",
  "agent.message",
  "agent.thinking",
  "agent.tool_use",
  "agent.tool_result",
  "agent.mcp_tool_use",
  "agent.mcp_tool_result",
  "agent.custom_tool_use",
  "agent.thread_context_compacted",
  "session.status_running",
  "session.status_idle",
  "session.status_terminated",
  "session.error",
  "session.updated",
  "session.usage",
  "span.model_request_start",
  "span.model_request_end",
  "sandbox.provisioned",
  "sandbox.released",
  "sandbox.lost",
  "system.message",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The generated union of payloads: `{ $case: "agentToolUse"; value: AgentToolUse } | ...`. */
export type EventPayload = NonNullable<Event["payload"]>;
export type PayloadCase = EventPayload["$case"];

type CamelCase<S extends string> = S extends `${infer Head}_${infer Rest}`
  ? `${Head}${Capitalize<CamelCase<Rest>>}`
  : S;

/** The proto name of the payload field: "agent.mcp_tool_use" -> "agent_mcp_tool_use". */
export type PayloadFieldOf<T extends string> = T extends `${infer Domain}.${infer Action}`
  ? `${Domain}_${Action}`
  : never;

type CaseByType = { [T in EventType]: CamelCase<PayloadFieldOf<T>> };
type ValueByCase = { [P in EventPayload as P["$case"]]: P["value"] };

/** The ts-proto $case of a type: "agent.mcp_tool_use" -> "agentMcpToolUse". */
export type PayloadCaseOf<T extends EventType> = CaseByType[T];

/** The inverse: "agentMcpToolUse" -> "agent.mcp_tool_use". */
export type EventTypeOf<C extends PayloadCase> = { [T in EventType as PayloadCaseOf<T>]: T }[C];

/** The payload message of a type: `PayloadOf<"agent.tool_use">` is `AgentToolUse`. */
export type PayloadOf<T extends EventType> = ValueByCase[PayloadCaseOf<T> & PayloadCase];

type AssertTrue<T extends true> = T;
type Unregistered = Exclude<PayloadCase, PayloadCaseOf<EventType>>;
type WithoutPayloadField = Exclude<PayloadCaseOf<EventType>, PayloadCase>;
/**
 * Fails to compile when event.proto's oneof and EVENT_TYPES disagree; the error shows which
 * $cases lack a type (`unregistered`) and which types lack a oneof field.
 */
export type RegistryInSync = AssertTrue<
  [Unregistered, WithoutPayloadField] extends [never, never]
    ? true
    : { unregistered: Unregistered; withoutPayloadField: WithoutPayloadField }
>;

const TYPE_SET: ReadonlySet<string> = new Set(EVENT_TYPES);

export function isEventType(value: unknown): value is EventType {
  return typeof value === "string" && TYPE_SET.has(value);
}

export function payloadFieldForType<T extends EventType>(type: T): PayloadFieldOf<T> {
  return type.replace(".", "_") as PayloadFieldOf<T>;
}

function camelCase(field: string): string {
  return field.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Asks the generated decoder which $case the payload field of `type` lands in. */
function caseFromGeneratedCode(type: EventType): PayloadCase {
  const field = payloadFieldForType(type);
  const payload = Event.fromJSON({ [field]: {} }).payload;
  if (payload === undefined) {
    throw new Error(
      `@metaharness/events: event type "${type}" has no payload field "${field}" in the generated Event; ` +
        "event.proto and EVENT_TYPES are out of step",
    );
  }
  if (payload.$case !== camelCase(field)) {
    throw new Error(`@metaharness/events: field "${field}" decodes to $case "${payload.$case}", not "${camelCase(field)}"`);
  }
  return payload.$case;
}

const CASE_BY_TYPE: ReadonlyMap<string, PayloadCase> = new Map(
  EVENT_TYPES.map((type) => [type, caseFromGeneratedCode(type)]),
);
const TYPE_BY_CASE: ReadonlyMap<string, EventType> = new Map(
  EVENT_TYPES.map((type) => [caseFromGeneratedCode(type), type]),
);

export function payloadCaseForType<T extends EventType>(type: T): PayloadCaseOf<T>;
export function payloadCaseForType(type: string): PayloadCase | undefined;
export function payloadCaseForType(type: string): PayloadCase | undefined {
  return CASE_BY_TYPE.get(type);
}

export function typeForPayloadCase<C extends PayloadCase>(payloadCase: C): EventTypeOf<C>;
export function typeForPayloadCase(payloadCase: string): EventType | undefined;
export function typeForPayloadCase(payloadCase: string): EventType | undefined {
  return TYPE_BY_CASE.get(payloadCase);
}
