/**
 * How the timeline shows text: content blocks as plain text, long output as its start and end
 * around a "show all" button, a tool's input as a command or as JSON, event types that may
 * break at their dots.
 */
import type { ContentBlockJson, ToolResultBlockJson } from "@metaharness/events";
import { h } from "./dom.js";
import { describeSize, excerpt, isLong, prettyJson } from "./format.js";

/** Content blocks as text; blocks that are not text are named in brackets. */
export function blocksText(blocks: ReadonlyArray<ContentBlockJson | ToolResultBlockJson>): string {
  return blocks
    .map((b) => {
      switch (b.type) {
        case "text":
          return b.text;
        case "image":
          return `[image: ${b.source.type === "base64" ? b.source.media_type : b.source.type === "url" ? b.source.url : b.source.file_id}]`;
        case "document":
          return `[document${b.title === undefined ? "" : `: ${b.title}`}]`;
        case "search_result":
          return `[search result: ${b.title} (${b.source})]\n${b.content.map((t) => t.text).join("\n")}`;
        default:
          return "[redacted]";
      }
    })
    .join("\n");
}

/** `span.model_request_start` with a line break allowed after each dot. */
export function breakable(type: string): Array<string | HTMLElement> {
  return type.split(".").flatMap((part, i) => (i === 0 ? [part] : [".", h("wbr"), part]));
}

/**
 * Text in a `<pre>`; a long one as its first and last lines around a button that shows it
 * whole (and back).
 */
export function longText(text: string, className: string): HTMLElement {
  if (!isLong(text)) return h("pre", { class: className }, text);
  const part = excerpt(text);
  const full = h("pre", { class: className, hidden: true }, text);
  const short = h(
    "div",
    { class: "excerpt" },
    h("pre", { class: `${className} excerpt__head` }, part.head),
    h("div", { class: "excerpt__gap", "aria-hidden": "true" }, `⋯ ${part.hidden} not shown ⋯`),
    h("pre", { class: `${className} excerpt__tail` }, part.tail),
  );
  const label = `Show all (${describeSize(text)})`;
  const button = h("button", { type: "button", class: "link-button", "aria-expanded": "false" }, label);
  button.addEventListener("click", () => {
    const open = full.hidden;
    full.hidden = !open;
    short.hidden = open;
    button.textContent = open ? "Show less" : label;
    button.setAttribute("aria-expanded", String(open));
  });
  return h("div", { class: "clamp" }, short, full, button);
}

/** A tool's input: a shell command as `$ command`, anything else as JSON. */
export function toolInput(name: string, input: Record<string, unknown>): HTMLElement {
  const { command, ...rest } = input;
  if (typeof command === "string") {
    const more = Object.keys(rest).length === 0 ? "" : `\n\n${prettyJson(rest)}`;
    return longText(`$ ${command}${more}`, "code code--command");
  }
  if (name !== "" && Object.keys(input).length === 0) return h("p", { class: "muted" }, "No input.");
  return longText(prettyJson(input), "code");
}
