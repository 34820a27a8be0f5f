/**
 * The page's SSE framing, against what the gateway writes and what the spec allows: messages
 * split anywhere across chunks, CRLF and lone CR, comments, multi-line data.
 */
import { describe, expect, it } from "vitest";
import { SseParser, type SseMessage } from "./sse.js";

function parseChunks(chunks: readonly string[]): SseMessage[] {
  const parser = new SseParser();
  return chunks.flatMap((c) => parser.push(c));
}

const STREAM = 'id: 4\nevent: agent.message\ndata: {"seq":4}\n\nevent: ping\ndata: {"type":"ping"}\n\n';

describe("SseParser", () => {
  it("reads the gateway's frames: id, event and data", () => {
    expect(parseChunks([STREAM])).toEqual([
      { id: "4", event: "agent.message", data: '{"seq":4}' },
      { id: undefined, event: "ping", data: '{"type":"ping"}' },
    ]);
  });

  it("gives the same messages however the stream is cut", () => {
    const whole = parseChunks([STREAM]);
    for (let cut = 1; cut < STREAM.length; cut++) {
      expect(parseChunks([STREAM.slice(0, cut), STREAM.slice(cut)])).toEqual(whole);
    }
    expect(parseChunks([...STREAM])).toEqual(whole);
  });

  it("takes CRLF and lone CR line ends, also across chunks", () => {
    const crlf = STREAM.replaceAll("\n", "\r\n");
    expect(parseChunks([crlf])).toEqual(parseChunks([STREAM]));
    const cut = crlf.indexOf("\r\n") + 1;
    expect(parseChunks([crlf.slice(0, cut), crlf.slice(cut)])).toEqual(parseChunks([STREAM]));
    expect(parseChunks([STREAM.replaceAll("\n", "\r")])).toEqual(parseChunks([STREAM]));
  });

  it("skips comments, joins data lines, and names event-less frames `message`", () => {
    expect(parseChunks([": keep-alive\n\ndata: a\ndata:b\n\n"])).toEqual([{ id: undefined, event: "message", data: "a\nb" }]);
  });

  it("keeps an unfinished message for the next chunk", () => {
    const parser = new SseParser();
    expect(parser.push("event: x\ndata: 1")).toEqual([]);
    expect(parser.push("\n\n")).toEqual([{ id: undefined, event: "x", data: "1" }]);
  });
});
