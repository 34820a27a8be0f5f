/**
 * A server-sent events parser for streams read with fetch (EventSource cannot send the API key
 * as a header). Feed it text as it arrives; it returns the complete messages, keeping a partial
 * one for the next chunk. The framing of the WHATWG spec: `field: value` lines, a blank line ends
 * a message, `:` starts a comment, CRLF, LF and CR all end lines.
 */

export interface SseMessage {
  /** `message` when the frame had no `event:` line. */
  readonly event: string;
  readonly data: string;
  /** The `id:` of the frame, if it had one. */
  readonly id: string | undefined;
}

/** A line longer than this without an end is a broken stream, not something to buffer forever. */
export const MAX_PENDING_CHARS = 16 * 1024 * 1024;

export class SseParser {
  private pending = "";
  private event = "";
  private data: string[] = [];
  private id: string | undefined;
  /** A chunk ended with CR: a LF at the start of the next one belongs to it. */
  private skipLf = false;

  push(chunk: string): SseMessage[] {
    let text = chunk;
    if (this.skipLf && text.startsWith("\n")) text = text.slice(1);
    this.skipLf = text.endsWith("\r");
    this.pending += text;
    const out: SseMessage[] = [];
    const lines = this.pending.split(/\r\n|\r|\n/);
    this.pending = lines.pop() ?? "";
    if (this.pending.length > MAX_PENDING_CHARS) throw new Error(`an event stream line exceeds ${MAX_PENDING_CHARS} characters`);
    for (const line of lines) {
      const message = this.line(line);
      if (message !== undefined) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | undefined {
    if (line === "") {
      if (this.data.length === 0 && this.event === "") return undefined;
      const message = { event: this.event === "" ? "message" : this.event, data: this.data.join("\n"), id: this.id };
      this.event = "";
      this.data = [];
      this.id = undefined;
      return message;
    }
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id" && !value.includes("\0")) this.id = value;
    return undefined;
  }
}
