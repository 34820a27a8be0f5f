/**
 * The frame format against the real agent (agent/sandbox-agent.pl, run here with perl outside a
 * sandbox): every request frames.ts encodes is compared byte for byte with the layout written
 * out below by hand, the agent is sent it, and every reply the agent writes is compared byte for
 * byte with the same layout and then decoded. A change on either side that the other does not
 * make fails here.
 */
import { spawn, type ChildProcessByStdio } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FrameSplitter, MAX_FRAME_BYTES, decodeReply, encodeRequest } from "./frames.js";

const AGENT = fileURLToPath(new URL("../../agent/sandbox-agent.pl", import.meta.url));

// The layout as the agent's header documents it, independent of frames.ts's Writer.
const u8 = (v: number): Buffer => Buffer.from([v]);
const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v);
  return b;
};
const i32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(v);
  return b;
};
const u64 = (v: number): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(v));
  return b;
};
const str = (v: string | Buffer): Buffer => {
  const b = typeof v === "string" ? Buffer.from(v, "utf8") : v;
  return Buffer.concat([u32(b.length), b]);
};
const strs = (vs: readonly string[]): Buffer => Buffer.concat([u32(vs.length), ...vs.map(str)]);
const frame = (type: string, id: number, ...fields: Buffer[]): Buffer => {
  const payload = Buffer.concat([Buffer.from(type, "latin1"), u32(id), ...fields]);
  return Buffer.concat([u32(payload.length), payload]);
};

/** The agent's stdout, cut into whole frames (length prefix kept) as they arrive. */
class Frames {
  private buf = Buffer.alloc(0);
  private readonly waiting: ((f: Buffer) => void)[] = [];
  private readonly ready: Buffer[] = [];

  constructor(out: Readable) {
    out.on("data", (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      while (this.buf.length >= 4 && this.buf.length >= 4 + this.buf.readUInt32BE(0)) {
        const f = this.buf.subarray(0, 4 + this.buf.readUInt32BE(0));
        this.buf = this.buf.subarray(f.length);
        const w = this.waiting.shift();
        if (w !== undefined) w(f);
        else this.ready.push(f);
      }
    });
  }

  next(): Promise<Buffer> {
    const f = this.ready.shift();
    return f !== undefined ? Promise.resolve(f) : new Promise((resolve) => this.waiting.push(resolve));
  }
}

describe("the broker-agent frame format, against the real agent", () => {
  let agent: ChildProcessByStdio<Writable, Readable, null>;
  let frames: Frames;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mh-frames-"));
    agent = spawn("perl", [AGENT], { cwd: dir, stdio: ["pipe", "pipe", "inherit"] });
    frames = new Frames(agent.stdout);
  });

  afterAll(async () => {
    agent?.stdin.end();
    if (agent !== undefined && agent.exitCode === null) await new Promise((resolve) => agent.once("exit", resolve));
    await rm(dir, { recursive: true, force: true });
  });

  /** Sends `request` after checking its bytes, and returns the agent's reply frame. */
  async function exchange(request: Buffer, expected: Buffer): Promise<Buffer> {
    expect(request).toEqual(expected);
    agent.stdin.write(request);
    return frames.next();
  }

  it("says hello first: its pid and protocol version", async () => {
    const hello = await frames.next();
    expect(hello).toEqual(frame("H", 0, u32(agent.pid!), str("1")));
    expect(decodeReply(hello.subarray(4))).toEqual({ type: "hello", id: 0, pid: agent.pid, version: "1" });
  });

  it("writes a file (put) and reads it back (get), bytes intact", async () => {
    const path = join(dir, "sub", "a.bin");
    const content = Buffer.from([0, 1, 2, 0xff, 0x0a, 0xc3, 0xa9]);
    const written = await exchange(
      encodeRequest(7, { type: "put", body: { path, mode: 0o600, content } }),
      frame("P", 7, str(path), u32(0o600), str(content)),
    );
    expect(written).toEqual(frame("W", 7, u8(1), str("")));
    expect(decodeReply(written.subarray(4))).toEqual({ type: "written", id: 7, result: { ok: true, error: "" } });
    expect(await readFile(path)).toEqual(content);

    const file = await exchange(
      encodeRequest(8, { type: "get", body: { path, maxBytes: 1024, startLine: 0, endLine: 0 } }),
      frame("G", 8, str(path), u32(1024), u32(0), u32(0)),
    );
    expect(file).toEqual(frame("F", 8, u8(1), str(""), u64(content.length), str(content)));
    expect(decodeReply(file.subarray(4))).toEqual({ type: "file", id: 8, result: { ok: true, error: "", size: content.length, data: content } });
  });

  it("answers a file it cannot read with ok 0 and the reason", async () => {
    const path = join(dir, "missing");
    const file = await exchange(
      encodeRequest(9, { type: "get", body: { path, maxBytes: 10, startLine: 0, endLine: 0 } }),
      frame("G", 9, str(path), u32(10), u32(0), u32(0)),
    );
    expect(file).toEqual(frame("F", 9, u8(0), str(`${path}: No such file or directory`), u64(0), str("")));
  });

  it("runs a command and reports its exit code and output (run -> done)", async () => {
    const body = { timeoutMs: 10_000, capBytes: 1024, graceMs: 100, cwd: dir, argv: ["/bin/sh", "-c", "printf abc; exit 3"], env: ["PATH=/usr/bin:/bin"] };
    const done = await exchange(
      encodeRequest(10, { type: "run", body }),
      frame("R", 10, u32(10_000), u32(1024), u32(100), str(dir), strs(body.argv), strs(body.env)),
    );
    expect(done).toEqual(frame("D", 10, u8(0), i32(3), u8(0), u64(3), str("abc"), str(""), str("")));
    expect(decodeReply(done.subarray(4))).toEqual({
      type: "done",
      id: 10,
      result: { kind: "exited", code: 3, timedOut: false, totalBytes: 3, head: Buffer.from("abc"), tail: Buffer.alloc(0), error: "" },
    });
  });

  it("ends a run when cancelled (cancel -> its done, timed out and killed)", async () => {
    const body = { timeoutMs: 60_000, capBytes: 64, graceMs: 100, cwd: dir, argv: ["/bin/sleep", "60"], env: [] };
    agent.stdin.write(encodeRequest(11, { type: "run", body }));
    const done = await exchange(encodeRequest(12, { type: "cancel", body: { target: 11 } }), frame("K", 12, u32(11)));
    expect(done).toEqual(frame("D", 11, u8(1), i32(9), u8(1), u64(0), str(""), str(""), str("")));
    expect(decodeReply(done.subarray(4))).toMatchObject({ type: "done", id: 11, result: { kind: "signaled", code: 9, timedOut: true } });
  });

  it("answers a request type it does not know with a done naming it (not started)", async () => {
    const done = await exchange(frame("Z", 13), Buffer.from([0, 0, 0, 5, 0x5a, 0, 0, 0, 13]));
    expect(done).toEqual(frame("D", 13, u8(2), i32(-1), u8(0), u64(0), str(""), str(""), str("unknown request 'Z'")));
  });

  it("agrees on the frame size limit: the agent leaves on a larger frame, the broker's splitter refuses one", async () => {
    expect(() => new FrameSplitter().push(u32(MAX_FRAME_BYTES + 1))).toThrow(RangeError);
    const exited = new Promise<number | null>((resolve) => agent.once("exit", (code) => resolve(code)));
    agent.stdin.write(u32(MAX_FRAME_BYTES + 1));
    expect(await exited).toBe(2);
  });
});
