/**
 * Content blocks as the HTTP API spells them: a `type` tag per block and per media source, in
 * place of the protobuf oneofs. Rendering only; parsing client JSON is in content-params.ts.
 */
import type { ContentBlock, MediaSource } from "@metaharness/proto";
import type {
  AgentMessageBlockJson,
  ContentBlockJson,
  DocumentSourceJson,
  ImageSourceJson,
  TextBlockJson,
  ToolResultBlockJson,
  UserMessageBlockJson,
} from "./types.js";

/** user.message content; search results are refused on append, so nothing is dropped in practice. */
export function renderUserMessageContent(content: readonly ContentBlock[]): UserMessageBlockJson[] {
  return renderContent(content).filter((b): b is UserMessageBlockJson => b.type !== "search_result");
}

/** agent.message content; other kinds are refused on append, so nothing is dropped in practice. */
export function renderAgentMessageContent(content: readonly ContentBlock[]): AgentMessageBlockJson[] {
  return renderContent(content).filter((b): b is AgentMessageBlockJson => b.type === "text" || b.type === "redacted");
}

/** system.message content: text only (validation refuses other blocks there). */
export function renderSystemContent(content: readonly ContentBlock[]): TextBlockJson[] {
  return renderContent(content).filter((b): b is TextBlockJson => b.type === "text");
}

/** Tool result content; redacted blocks are refused on append, so nothing is dropped in practice. */
export function renderToolResultContent(content: readonly ContentBlock[]): ToolResultBlockJson[] {
  return renderContent(content).filter((b): b is ToolResultBlockJson => b.type !== "redacted");
}

export function renderContent(content: readonly ContentBlock[]): ContentBlockJson[] {
  return content.flatMap((block): ContentBlockJson[] => {
    const inner = block.block;
    switch (inner?.$case) {
      case "text":
        return [{ type: "text", text: inner.value.text }];
      case "image":
        return [{ type: "image", source: renderImageSource(inner.value.source) }];
      case "document": {
        const { title, context } = inner.value;
        return [
          {
            type: "document",
            source: renderDocumentSource(inner.value.source),
            ...(title === "" ? {} : { title }),
            ...(context === "" ? {} : { context }),
          },
        ];
      }
      case "searchResult": {
        const { source, title, content: texts, citationsEnabled } = inner.value;
        const content = texts.map((t) => ({ type: "text" as const, text: t.text }));
        return [{ type: "search_result", source, title, content, citations: { enabled: citationsEnabled } }];
      }
      case "redacted":
        return [{ type: "redacted" }];
      case undefined:
        // An empty block (refused on append) has nothing to show.
        return [];
    }
  });
}

function renderImageSource(source: MediaSource | undefined): ImageSourceJson {
  switch (source?.type) {
    case "url":
      return { type: "url", url: source.url };
    case "file":
      return { type: "file", file_id: source.fileId };
    default:
      return { type: "base64", media_type: source?.mediaType ?? "", data: source?.data ?? "" };
  }
}

function renderDocumentSource(source: MediaSource | undefined): DocumentSourceJson {
  return source?.type === "text"
    ? { type: "text", media_type: "text/plain", data: source.data }
    : renderImageSource(source);
}
