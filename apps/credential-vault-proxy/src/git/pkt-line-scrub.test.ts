import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { Secret, secretForms } from "../crypto/secret.js";
import { scrubPktLines } from "./pkt-line-scrub.js";

const TOKEN = "ghs_pktline0123456789abcdef";
const BASIC = Buffer.from(`x-access-token:${TOKEN}`).toString("base64");
const pkt = (payload: Buffer | string): Buffer => {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  return Buffer.concat([Buffer.from((body.length + 4).toString(16).padStart(4, "0")), body]);
};
const FLUSH = Buffer.from("0000");
const band = (n: number, data: Buffer | string): Buffer => pkt(Buffer.concat([Buffer.of(n), typeof data === "string" ? Buffer.from(data) : data]));

/** The pkt-lines of `body`: text lines, and each band's data joined (as git reads them). */
function parse(body: Buffer): { lines: string[]; bands: Map<number, Buffer>; rest: Buffer } {
  const lines: string[] = [];
  const bands = new Map<number, Buffer>();
  let at = 0;
  while (at + 4 <= body.length) {
    const head = body.toString("latin1", at, at + 4);
    if (!/^[0-9a-f]{4}$/.test(head)) break;
    const length = Number.parseInt(head, 16);
    if (length < 4) {
      lines.push(head);
      at += 4;
      continue;
    }
    expect(length).toBeLessThanOrEqual(65520);
    const payload = body.subarray(at + 4, at + length);
    expect(payload.length).toBe(length - 4);
    const b = payload[0];
    if (b === 1 || b === 2 || b === 3) bands.set(b, Buffer.concat([bands.get(b) ?? Buffer.alloc(0), payload.subarray(1)]));
    else lines.push(payload.toString("latin1"));
    at += length;
  }
  return { lines, bands, rest: body.subarray(at) };
}

async function through(chunks: Buffer[]): Promise<Buffer> {
  return buffer(Readable.from(chunks).pipe(scrubPktLines([new Secret(TOKEN)])));
}

function splits(body: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < body.length; i += size) chunks.push(body.subarray(i, i + size));
  return chunks;
}

const noSecret = (out: Buffer): void => {
  for (const form of [TOKEN, BASIC, ...secretForms([new Secret(TOKEN)])]) expect(out.includes(Buffer.from(form)), form).toBe(false);
};

describe("scrubPktLines", () => {
  const pack = Buffer.concat([Buffer.from("PACK"), Buffer.from([0, 0, 0, 2, 0, 0, 0, 1, 0x9f, 0x0b]), Buffer.alloc(300, 7)]);
  const half = TOKEN.length >> 1;
  const body = Buffer.concat([
    pkt("# service=git-upload-pack\n"),
    FLUSH,
    pkt(`${"a".repeat(40)} HEAD\0agent=echo/${TOKEN}\n`),
    FLUSH,
    pkt("NAK\n"),
    band(2, `you sent Basic ${BASIC}\n`),
    band(2, `and ${TOKEN.slice(0, half)}`),
    band(1, pack.subarray(0, 100)),
    band(2, `${TOKEN.slice(half)} split across two packets\n`),
    band(1, pack.subarray(100)),
    FLUSH,
  ]);

  it("takes the token out of text lines and of each band's joined data, however TCP splits the body", async () => {
    for (const size of [1, 2, 3, 5, 7, 13, 64, 100, 1000, body.length]) {
      const out = await through(splits(body, size));
      noSecret(out);
      const { lines, bands, rest } = parse(out);
      expect(rest.length, `size ${size}`).toBe(0);
      expect(lines).toEqual(["# service=git-upload-pack\n", "0000", `${"a".repeat(40)} HEAD\0agent=echo/[redacted]\n`, "0000", "NAK\n", "0000"]);
      expect(bands.get(1)).toEqual(pack);
      const progress = bands.get(2)!.toString("latin1");
      expect(progress).toContain("and [redacted] split across two packets\n");
      expect(progress).toMatch(/^you sent Basic \S*\[redacted\]\S*\n/);
    }
  });

  it("scrubs a body that is not pkt-lines (a pack without side-band) as plain bytes", async () => {
    const raw = Buffer.concat([pkt("NAK\n"), Buffer.from(`PACK...${TOKEN}...`)]);
    for (const size of [1, 4, 9, raw.length]) {
      const out = await through(splits(raw, size));
      expect(out.toString("latin1")).toBe("0008NAK\nPACK...[redacted]...");
    }
  });

  it("keeps band packets within git's size when held-back bytes join a full packet", async () => {
    const big = Buffer.alloc(65515, 0x41);
    const out = await through([band(1, big), band(1, big), FLUSH]);
    const { bands, rest } = parse(out);
    expect(rest.length).toBe(0);
    expect(bands.get(1)).toEqual(Buffer.concat([big, big]));
  });
});
