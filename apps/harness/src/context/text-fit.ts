/**
 * The windowed strategy's last resort: when even the smallest safe window is over budget (one
 * huge message or tool result), the longest texts of the window are cut to a common length, the
 * largest that fits, each marked with what was cut. The log keeps them whole; read_session_events
 * shows them (in pages of its own bound).
 */
import type Anthropic from "@anthropic-ai/sdk";

/** Texts are never cut below this many characters. */
export const MIN_TEXT_CHARS = 200;

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} characters cut to fit the context window]`;
}

type Block = Anthropic.ContentBlockParam;
type Inner = Exclude<NonNullable<Anthropic.ToolResultBlockParam["content"]>, string>[number];

/**
 * `block` with `f` applied to each text it carries: text blocks, tool results (as a string, or
 * their text, search result and plain-text document blocks), search results and plain-text
 * documents. Images and other sources are left as they are.
 */
function mapTexts<B extends Block | Inner>(block: B, f: (text: string) => string): B {
  switch (block.type) {
    case "text":
      return { ...block, text: f(block.text) };
    case "search_result":
      return { ...block, content: block.content.map((c) => ({ ...c, text: f(c.text) })) };
    case "document":
      return block.source.type === "text" ? { ...block, source: { ...block.source, data: f(block.source.data) } } : block;
    case "tool_result": {
      const content = block.content;
      if (typeof content === "string") return { ...block, content: f(content) };
      if (Array.isArray(content)) return { ...block, content: content.map((c) => mapTexts(c, f)) };
      return block;
    }
    default:
      return block;
  }
}

function capAll(messages: readonly Anthropic.MessageParam[], max: number): Anthropic.MessageParam[] {
  // As in replay.ts: the spread keeps the role, which TypeScript cannot tie to the new content.
  return messages.map(
    (m) =>
      (typeof m.content === "string"
        ? { ...m, content: cut(m.content, max) }
        : { ...m, content: m.content.map((b) => mapTexts(b, (t) => cut(t, max))) }) as Anthropic.MessageParam,
  );
}

function longest(messages: readonly Anthropic.MessageParam[]): number {
  let n = 0;
  const see = (t: string): string => {
    n = Math.max(n, t.length);
    return t;
  };
  for (const m of messages) {
    if (typeof m.content === "string") see(m.content);
    else for (const b of m.content) mapTexts(b, see);
  }
  return n;
}

/** The messages with every text cut to the largest length for which `fits` holds (or the minimum). */
export function fitTexts(
  messages: readonly Anthropic.MessageParam[],
  fits: (m: Anthropic.MessageParam[]) => boolean,
): Anthropic.MessageParam[] {
  let lo = MIN_TEXT_CHARS;
  let hi = longest(messages);
  if (hi <= lo) return [...messages];
  let best = capAll(messages, lo);
  if (!fits(best)) return best;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const candidate = capAll(messages, mid);
    if (fits(candidate)) {
      best = candidate;
      lo = mid;
    } else hi = mid - 1;
  }
  return best;
}
