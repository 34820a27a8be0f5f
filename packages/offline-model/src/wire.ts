/**
 * The Messages API wire shapes this server reads and writes, written down once. Requests are typed
 * only after `validateRequest` has checked them; responses mirror the official SDK's `Message`,
 * `Usage` and stream event types field for field (a type test keeps them in step), so the SDK's
 * accumulator builds the same snapshot from our SSE as from the real API's.
 */

export interface CacheControl {
  readonly type: "ephemeral";
  readonly ttl?: "5m" | "1h";
}

export interface TextBlockParam {
  readonly type: "text";
  readonly text: string;
  readonly cache_control?: CacheControl | null;
}

export interface ToolUseBlockParam {
  readonly type: "tool_use";
  readonly id: string;
  readonly name: string;
  readonly input: Readonly<Record<string, unknown>>;
  readonly cache_control?: CacheControl | null;
}

export interface ToolResultBlockParam {
  readonly type: "tool_result";
  readonly tool_use_id: string;
  readonly content?: string | readonly ContentBlockParam[];
  readonly is_error?: boolean;
  readonly cache_control?: CacheControl | null;
}

export interface ThinkingBlockParam {
  readonly type: "thinking";
  readonly thinking: string;
  readonly signature: string;
}

export interface RedactedThinkingBlockParam {
  readonly type: "redacted_thinking";
  readonly data: string;
}

/** Block types accepted as they are: their content does not change what the offline model says. */
export const PASSTHROUGH_BLOCK_TYPES = [
  "image",
  "document",
  "search_result",
  "server_tool_use",
  "web_search_tool_result",
  "web_fetch_tool_result",
  "code_execution_tool_result",
  "bash_code_execution_tool_result",
  "text_editor_code_execution_tool_result",
  "tool_search_tool_result",
  "tool_reference",
  "container_upload",
  "mcp_tool_use",
  "mcp_tool_result",
] as const;

export interface PassthroughBlockParam {
  readonly type: (typeof PASSTHROUGH_BLOCK_TYPES)[number];
  readonly cache_control?: CacheControl | null;
  readonly [field: string]: unknown;
}

export type ContentBlockParam =
  | TextBlockParam
  | ToolUseBlockParam
  | ToolResultBlockParam
  | ThinkingBlockParam
  | RedactedThinkingBlockParam
  | PassthroughBlockParam;

export interface MessageParam {
  readonly role: "user" | "assistant";
  readonly content: string | readonly ContentBlockParam[];
}

export interface ToolParam {
  readonly name: string;
  /** Absent or "custom" for a client tool; a versioned name (`bash_20250124`) for a server tool. */
  readonly type?: string | null;
  readonly description?: string;
  readonly input_schema?: Readonly<Record<string, unknown>>;
  readonly cache_control?: CacheControl | null;
}

export type ThinkingConfig =
  | { readonly type: "enabled"; readonly budget_tokens: number; readonly display?: "summarized" | "omitted" | null }
  | { readonly type: "adaptive"; readonly display?: "summarized" | "omitted" | null }
  | { readonly type: "disabled" };

export type ToolChoice =
  | { readonly type: "auto" | "any" | "none"; readonly disable_parallel_tool_use?: boolean }
  | { readonly type: "tool"; readonly name: string; readonly disable_parallel_tool_use?: boolean };

/** A request body that passed validation. Fields we do not interpret are kept but not typed. */
export interface MessagesRequest {
  readonly model: string;
  readonly max_tokens: number;
  readonly messages: readonly MessageParam[];
  readonly system?: string | readonly TextBlockParam[];
  readonly tools?: readonly ToolParam[];
  readonly tool_choice?: ToolChoice;
  readonly thinking?: ThinkingConfig;
  readonly stop_sequences?: readonly string[];
  readonly stream?: boolean;
  readonly [field: string]: unknown;
}

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

export interface TextBlock {
  readonly type: "text";
  readonly text: string;
  readonly citations: null;
}

export interface ToolUseBlock {
  readonly type: "tool_use";
  readonly id: string;
  readonly name: string;
  readonly input: Readonly<Record<string, unknown>>;
  readonly caller: { readonly type: "direct" };
}

export interface ThinkingBlock {
  readonly type: "thinking";
  readonly thinking: string;
  readonly signature: string;
}

export type ContentBlock = TextBlock | ToolUseBlock | ThinkingBlock;

export interface Usage {
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly cache_creation_input_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly cache_creation: { readonly ephemeral_5m_input_tokens: number; readonly ephemeral_1h_input_tokens: number };
  readonly output_tokens_details: { readonly thinking_tokens: number } | null;
  readonly server_tool_use: null;
  readonly service_tier: "standard";
  readonly inference_geo: null;
  readonly speed: null;
}

export interface Message {
  readonly id: string;
  readonly type: "message";
  readonly role: "assistant";
  readonly model: string;
  readonly content: ContentBlock[];
  readonly stop_reason: StopReason | null;
  readonly stop_sequence: string | null;
  readonly stop_details: null;
  readonly container: null;
  readonly diagnostics: null;
  readonly usage: Usage;
}

export type ContentDelta =
  | { readonly type: "text_delta"; readonly text: string }
  | { readonly type: "input_json_delta"; readonly partial_json: string }
  | { readonly type: "thinking_delta"; readonly thinking: string }
  | { readonly type: "signature_delta"; readonly signature: string };

export type StreamEvent =
  | { readonly type: "message_start"; readonly message: Message }
  | { readonly type: "content_block_start"; readonly index: number; readonly content_block: ContentBlock }
  | { readonly type: "content_block_delta"; readonly index: number; readonly delta: ContentDelta }
  | { readonly type: "content_block_stop"; readonly index: number }
  | {
      readonly type: "message_delta";
      readonly delta: {
        readonly stop_reason: StopReason;
        readonly stop_sequence: string | null;
        readonly stop_details: null;
        readonly container: null;
      };
      readonly usage: Omit<Usage, "cache_creation" | "service_tier" | "inference_geo" | "speed">;
    }
  | { readonly type: "message_stop" }
  | { readonly type: "ping" };
