/**
 * The wire format between the broker and the in-sandbox agent (agent/sandbox-agent.pl):
 * length-prefixed binary frames, so file contents and command output cross the pipe as bytes,
 * without JSON escaping or base64. This is the broker's one definition of it; the agent's header
 * describes the same layout, and frames.test.ts runs the real agent and checks the exact bytes
 * both ways, so the two cannot drift apart unnoticed.
 *
 * A frame is a u32 big-endian length, then the payload: a u8 type, a u32 request id, then the
 * type's fields (u32/i32 big-endian, u64 big-endian, str = u32 length + bytes, strs = u32 count
 * + that many str).
 */

/** Larger frames mean a confused or hostile agent; the channel is then torn down (the agent's $MAX_FRAME). */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;

/** The type byte of each request, broker -> agent. */
export const REQUEST_TYPE = { run: "R", get: "G", put: "P", cancel: "K" } as const;
/** The type byte of each reply, agent -> broker. */
export const REPLY_TYPE = { hello: "H", done: "D", file: "F", written: "W" } as const;

export interface RunRequest {
  readonly timeoutMs: number;
  /** Output bytes kept: the first half and the last half of what the command writes. */
  readonly capBytes: number;
  /** After the command exits, how long what it started may keep the output open. */
  readonly graceMs: number;
  readonly cwd: string;
  readonly argv: readonly string[];
  readonly env: readonly string[];
}

export interface GetRequest {
  readonly path: string;
  readonly maxBytes: number;
  /** 1-based, inclusive; 0 reads the whole file. */
  readonly startLine: number;
  readonly endLine: number;
}

export interface PutRequest {
  readonly path: string;
  /** 0 keeps the mode of an existing file (0644 for a new one). */
  readonly mode: number;
  readonly content: Buffer;
}

export type AgentRequest =
  | { readonly type: "run"; readonly body: RunRequest }
  | { readonly type: "get"; readonly body: GetRequest }
  | { readonly type: "put"; readonly body: PutRequest }
  /** Kill the process group of run request `target` (its reply still comes, as a timeout). */
  | { readonly type: "cancel"; readonly body: { readonly target: number } };

export interface RunResult {
  readonly kind: "exited" | "signaled" | "not_started";
  /** Exit code, or signal number when signaled. */
  readonly code: number;
  readonly timedOut: boolean;
  /** Bytes the command wrote, all of them, whether kept or not. */
  readonly totalBytes: number;
  readonly head: Buffer;
  readonly tail: Buffer;
  readonly error: string;
}

export interface FileResult {
  readonly ok: boolean;
  readonly error: string;
  readonly size: number;
  readonly data: Buffer;
}

export interface WriteResult {
  readonly ok: boolean;
  readonly error: string;
}

export type AgentReply =
  | { readonly type: "hello"; readonly id: 0; readonly pid: number; readonly version: string }
  | { readonly type: "done"; readonly id: number; readonly result: RunResult }
  | { readonly type: "file"; readonly id: number; readonly result: FileResult }
  | { readonly type: "written"; readonly id: number; readonly result: WriteResult };

class Writer {
  private readonly parts: Buffer[] = [];

  u8(v: number): this {
    this.parts.push(Buffer.from([v]));
    return this;
  }
  type(t: string): this {
    return this.u8(t.charCodeAt(0));
  }
  u32(v: number): this {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32BE(v >>> 0);
    this.parts.push(b);
    return this;
  }
  bytes(v: Buffer | string): this {
    const b = typeof v === "string" ? Buffer.from(v, "utf8") : v;
    this.u32(b.length);
    this.parts.push(b);
    return this;
  }
  list(vs: readonly string[]): this {
    this.u32(vs.length);
    for (const v of vs) this.bytes(v);
    return this;
  }
  frame(): Buffer {
    const payload = Buffer.concat(this.parts);
    const len = Buffer.allocUnsafe(4);
    len.writeUInt32BE(payload.length);
    return Buffer.concat([len, payload]);
  }
}

/** One request frame, length prefix included. */
export function encodeRequest(id: number, req: AgentRequest): Buffer {
  switch (req.type) {
    case "run": {
      const r = req.body;
      return new Writer()
        .type(REQUEST_TYPE.run)
        .u32(id)
        .u32(r.timeoutMs)
        .u32(r.capBytes)
        .u32(r.graceMs)
        .bytes(r.cwd)
        .list(r.argv)
        .list(r.env)
        .frame();
    }
    case "get": {
      const r = req.body;
      return new Writer().type(REQUEST_TYPE.get).u32(id).bytes(r.path).u32(r.maxBytes).u32(r.startLine).u32(r.endLine).frame();
    }
    case "put": {
      const r = req.body;
      return new Writer().type(REQUEST_TYPE.put).u32(id).bytes(r.path).u32(r.mode).bytes(r.content).frame();
    }
    case "cancel":
      return new Writer().type(REQUEST_TYPE.cancel).u32(id).u32(req.body.target).frame();
  }
}

/** Reads fields in order from a payload; throws RangeError past its end. */
class Reader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}

  u8(): number {
    const v = this.buf.readUInt8(this.pos);
    this.pos += 1;
    return v;
  }
  u32(): number {
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  i32(): number {
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  u64(): number {
    const v = Number(this.buf.readBigUInt64BE(this.pos));
    this.pos += 8;
    return v;
  }
  bytes(): Buffer {
    const len = this.u32();
    if (this.pos + len > this.buf.length) throw new RangeError("field runs past the end of the frame");
    const v = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return v;
  }
}

const RUN_KINDS = ["exited", "signaled", "not_started"] as const;

/** Decodes one reply payload (without its length prefix). */
export function decodeReply(payload: Buffer): AgentReply {
  const type = String.fromCharCode(payload.readUInt8(0));
  const r = new Reader(payload.subarray(1));
  const id = r.u32();
  switch (type) {
    case REPLY_TYPE.hello:
      return { type: "hello", id: 0, pid: r.u32(), version: r.bytes().toString("utf8") };
    case REPLY_TYPE.done: {
      const kind = RUN_KINDS[r.u8()] ?? "not_started";
      const code = r.i32();
      const timedOut = r.u8() === 1;
      const totalBytes = r.u64();
      const head = r.bytes();
      const tail = r.bytes();
      const error = r.bytes().toString("utf8");
      return { type: "done", id, result: { kind, code, timedOut, totalBytes, head, tail, error } };
    }
    case REPLY_TYPE.file: {
      const ok = r.u8() === 1;
      const error = r.bytes().toString("utf8");
      const size = r.u64();
      return { type: "file", id, result: { ok, error, size, data: r.bytes() } };
    }
    case REPLY_TYPE.written: {
      const ok = r.u8() === 1;
      return { type: "written", id, result: { ok, error: r.bytes().toString("utf8") } };
    }
    default:
      throw new RangeError(`unknown reply type ${JSON.stringify(type)}`);
  }
}

/** Splits a byte stream into frame payloads; keeps a partial frame for the next chunk. */
export class FrameSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes needed before another frame can be complete (joins chunks only then). */
  private need = 4;

  /** The complete payloads in `chunk` (plus what was pending). Throws on an oversized frame. */
  push(chunk: Buffer): Buffer[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < this.need) return [];
    let buf = this.pending.length === 1 ? chunk : Buffer.concat(this.pending, this.pendingBytes);
    const out: Buffer[] = [];
    this.need = 4;
    while (buf.length >= 4) {
      const len = buf.readUInt32BE(0);
      if (len > MAX_FRAME_BYTES || len < 5) throw new RangeError(`bad frame length ${len}`);
      if (buf.length < 4 + len) {
        this.need = 4 + len;
        break;
      }
      out.push(buf.subarray(4, 4 + len));
      buf = buf.subarray(4 + len);
    }
    this.pending = buf.length > 0 ? [buf] : [];
    this.pendingBytes = buf.length;
    return out;
  }
}
