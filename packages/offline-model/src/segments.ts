/**
 * A request as the prompt cache sees it: the ordered blocks of its prompt (tools, then system, then
 * each message's content blocks), each with an estimated token count (~4 characters a token) and
 * the cache breakpoint it carries, if any. The key of a block leaves out `cache_control`, so moving
 * a breakpoint does not change the prefix it marks.
 */
import { stableStringify } from "./ids.js";
import type { CacheControl, MessagesRequest } from "./wire.js";

export const CHARS_PER_TOKEN = 4;

export function estimateTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

export interface Segment {
  /** Canonical text of the block and its place (section, message index and role). */
  readonly key: string;
  readonly tokens: number;
  /** The block's cache_control TTL when it is a breakpoint. */
  readonly breakpoint: "5m" | "1h" | undefined;
}

function segment(place: string, block: object): Segment {
  const { cache_control: control, ...rest } = block as { readonly cache_control?: CacheControl | null };
  const body = stableStringify(rest);
  const breakpoint = control === undefined || control === null ? undefined : (control.ttl ?? "5m");
  return { key: `${place}\n${body}`, tokens: estimateTokens(body.length), breakpoint };
}

export function segmentsOf(request: MessagesRequest): Segment[] {
  const out: Segment[] = [];
  for (const tool of request.tools ?? []) out.push(segment("tools", tool));
  const system = request.system;
  if (typeof system === "string") out.push(segment("system", { type: "text", text: system }));
  else for (const block of system ?? []) out.push(segment("system", block));
  request.messages.forEach((message, i) => {
    const place = `messages.${i}.${message.role}`;
    if (typeof message.content === "string") out.push(segment(place, { type: "text", text: message.content }));
    else for (const block of message.content) out.push(segment(place, block));
  });
  return out;
}

export function totalTokens(segments: readonly Segment[]): number {
  return segments.reduce((n, s) => n + s.tokens, 0);
}
