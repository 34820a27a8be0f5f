/**
 * Content blocks from client JSON into content.proto. Checks the shape in the JSON's own terms
 * (`content[0].source.data`); what a block must contain (non-empty text, which kinds a list may
 * hold) is left to the payload validators, which name the same fields.
 */
import type { ContentBlock, MediaSource, SearchResultBlock } from "@metaharness/proto";
import { invalidArgument } from "@metaharness/errors";
import { asObject, onlyKeys, optionalString, requiredString, type JsonObject } from "./read.js";

/**
 * Fields of the Messages API's image and document blocks that the Sessions API has not, accepted
 * and not kept: the SDK's session tool runner passes a tool's Messages-API blocks on as they are.
 */
const MESSAGES_API_ONLY = ["cache_control", "citations"] as const;

export function parseContent(items: readonly unknown[], field: string): ContentBlock[] {
  return items.map((item, i) => parseBlock(item, `${field}[${i}]`));
}

function parseBlock(item: unknown, field: string): ContentBlock {
  const block = asObject(item, field);
  const type = requiredString(block, "type", field);
  switch (type) {
    case "text":
      onlyKeys(block, ["type", "text"], field);
      return { block: { $case: "text", value: { text: requiredString(block, "text", field) } } };
    case "image":
      onlyKeys(block, ["type", "source", ...MESSAGES_API_ONLY], field);
      return { block: { $case: "image", value: { source: parseSource(block, field, ["base64", "url", "file"]) } } };
    case "document":
      onlyKeys(block, ["type", "source", "title", "context", ...MESSAGES_API_ONLY], field);
      return {
        block: {
          $case: "document",
          value: {
            source: parseSource(block, field, ["base64", "text", "url", "file"]),
            title: optionalString(block, "title", field),
            context: optionalString(block, "context", field),
          },
        },
      };
    case "search_result":
      return { block: { $case: "searchResult", value: parseSearchResult(block, field) } };
    case "redacted":
      onlyKeys(block, ["type"], field);
      return { block: { $case: "redacted", value: {} } };
    default:
      throw invalidArgument(`${field}.type`, `must be text, image, document, search_result or redacted, not "${type}"`);
  }
}

/** `citations` may be left out (not citable), as the Messages API allows. */
function parseSearchResult(block: JsonObject, field: string): SearchResultBlock {
  onlyKeys(block, ["type", "source", "title", "content", "citations"], field);
  const items = block.content;
  if (!Array.isArray(items)) throw invalidArgument(`${field}.content`, "must be a list of text blocks");
  const content = items.map((item, i) => {
    const text = asObject(item, `${field}.content[${i}]`);
    onlyKeys(text, ["type", "text"], `${field}.content[${i}]`);
    if (requiredString(text, "type", `${field}.content[${i}]`) !== "text") {
      throw invalidArgument(`${field}.content[${i}].type`, 'must be "text"');
    }
    return { text: requiredString(text, "text", `${field}.content[${i}]`) };
  });
  let citationsEnabled = false;
  if (block.citations !== undefined && block.citations !== null) {
    const citations = asObject(block.citations, `${field}.citations`);
    onlyKeys(citations, ["enabled"], `${field}.citations`);
    if (typeof citations.enabled !== "boolean") throw invalidArgument(`${field}.citations.enabled`, "must be true or false");
    citationsEnabled = citations.enabled;
  }
  return { source: requiredString(block, "source", field), title: requiredString(block, "title", field), content, citationsEnabled };
}

function parseSource(block: JsonObject, blockField: string, types: readonly string[]): MediaSource {
  const field = `${blockField}.source`;
  const source = asObject(block.source, field);
  const type = requiredString(source, "type", field);
  const empty: MediaSource = { type, mediaType: "", data: "", url: "", fileId: "" };
  switch (types.includes(type) ? type : undefined) {
    case "base64":
      onlyKeys(source, ["type", "media_type", "data"], field);
      return { ...empty, mediaType: nonEmpty(source, "media_type", field), data: nonEmpty(source, "data", field) };
    case "text":
      onlyKeys(source, ["type", "media_type", "data"], field);
      if (source.media_type !== undefined && source.media_type !== "text/plain") {
        throw invalidArgument(`${field}.media_type`, 'must be "text/plain"');
      }
      return { ...empty, mediaType: "text/plain", data: nonEmpty(source, "data", field) };
    case "url":
      onlyKeys(source, ["type", "url"], field);
      return { ...empty, url: nonEmpty(source, "url", field) };
    case "file":
      onlyKeys(source, ["type", "file_id"], field);
      return { ...empty, fileId: nonEmpty(source, "file_id", field) };
    default:
      throw invalidArgument(`${field}.type`, `must be one of ${types.join(", ")}, not "${type}"`);
  }
}

function nonEmpty(object: JsonObject, key: string, field: string): string {
  const value = requiredString(object, key, field);
  if (value === "") throw invalidArgument(`${field}.${key}`, "must not be empty");
  return value;
}
