/**
 * Validation of content blocks (content.proto). Which kinds of block a list may hold follows the
 * Managed Agents event objects, so every stored event renders as the SDK's types: agent messages
 * hold text and redacted blocks, user messages also images and documents, tool results text,
 * images, documents and search results.
 */
import type { ContentBlock, MediaSource } from "@metaharness/proto";
import { invalidArgument } from "@metaharness/errors";
import { requireString } from "./check.js";

export type BlockKind = NonNullable<ContentBlock["block"]>["$case"];

export const USER_MESSAGE_BLOCKS: ReadonlySet<BlockKind> = new Set(["text", "image", "document", "redacted"]);
export const AGENT_MESSAGE_BLOCKS: ReadonlySet<BlockKind> = new Set(["text", "redacted"]);
export const TOOL_RESULT_BLOCKS: ReadonlySet<BlockKind> = new Set(["text", "image", "document", "searchResult"]);
export const SYSTEM_MESSAGE_BLOCKS: ReadonlySet<BlockKind> = new Set(["text"]);

const IMAGE_SOURCES: ReadonlySet<string> = new Set(["base64", "url", "file"]);
const DOCUMENT_SOURCES: ReadonlySet<string> = new Set(["base64", "text", "url", "file"]);

export interface ContentRules {
  readonly allowed: ReadonlySet<BlockKind>;
  readonly nonEmpty: boolean;
}

/** `field` is the list's path, e.g. "event.payload.user_message.content". */
export function validateContent(content: readonly ContentBlock[], field: string, rules: ContentRules): void {
  if (rules.nonEmpty && content.length === 0) throw invalidArgument(field, "must hold at least one block");
  content.forEach((block, i) => validateBlock(block, `${field}[${i}]`, rules.allowed));
}

function validateBlock(block: ContentBlock, field: string, allowed: ReadonlySet<BlockKind>): void {
  const inner = block.block;
  if (inner === undefined) throw invalidArgument(field, "is an empty content block: set text, image, document, search_result or redacted");
  if (!allowed.has(inner.$case)) {
    throw invalidArgument(field, `a ${inner.$case} block is not allowed here (allowed: ${[...allowed].join(", ")})`);
  }
  switch (inner.$case) {
    case "text":
      if (inner.value.text === "") throw invalidArgument(`${field}.text`, "must not be empty");
      return;
    case "image":
      validateSource(inner.value.source, `${field}.image.source`, IMAGE_SOURCES);
      return;
    case "document":
      validateSource(inner.value.source, `${field}.document.source`, DOCUMENT_SOURCES);
      return;
    case "searchResult":
      requireString(inner.value.source, `${field}.search_result.source`);
      requireString(inner.value.title, `${field}.search_result.title`);
      if (inner.value.content.length === 0) throw invalidArgument(`${field}.search_result.content`, "must hold at least one text block");
      inner.value.content.forEach((t, i) => {
        if (t.text === "") throw invalidArgument(`${field}.search_result.content[${i}].text`, "must not be empty");
      });
      return;
    case "redacted":
      return;
  }
}

/** Exactly the field that `type` names is set: data (with media_type), url or file_id. */
function validateSource(source: MediaSource | undefined, field: string, types: ReadonlySet<string>): void {
  if (source === undefined) throw invalidArgument(field, "is required");
  if (!types.has(source.type)) {
    throw invalidArgument(`${field}.type`, `must be one of ${[...types].join(", ")}, not "${source.type}"`);
  }
  const set: Record<"data" | "url" | "file_id", string> = { data: source.data, url: source.url, file_id: source.fileId };
  const wanted = source.type === "url" ? "url" : source.type === "file" ? "file_id" : "data";
  requireString(set[wanted], `${field}.${wanted}`);
  for (const [name, value] of Object.entries(set)) {
    if (name !== wanted && value !== "") {
      throw invalidArgument(`${field}.${name}`, `must be empty when type is "${source.type}"`);
    }
  }
  if (source.type === "base64") requireString(source.mediaType, `${field}.media_type`);
  if (source.type === "text" && source.mediaType !== "" && source.mediaType !== "text/plain") {
    throw invalidArgument(`${field}.media_type`, 'must be "text/plain" when type is "text"');
  }
  if ((source.type === "url" || source.type === "file") && source.mediaType !== "") {
    throw invalidArgument(`${field}.media_type`, `must be empty when type is "${source.type}"`);
  }
}
