/**
 * A git smart-HTTP answer with the session's secrets taken out as it streams, without breaking
 * git's framing. Git's answers are pkt-lines (a 4-hex-digit length, then the payload), and in
 * fetches and pushes most of them are side-band packets: band 1 the pack, band 2 the progress git
 * prints as "remote: ...", band 3 a fatal error. A host that echoes the credential it was sent
 * can put it anywhere in them, and split it across packets (git joins a band's packets before it
 * prints them) and across TCP chunks. So each band's data is scrubbed as one stream (the tail that
 * could begin a secret held back until the band's next packet, a flush or the end), and packed
 * again into packets of at most git's size; every other pkt-line is scrubbed whole and sent with
 * its new length. A body that stops being pkt-lines (a v0 pack sent without side-band, or a host
 * that speaks something else) is scrubbed as plain bytes from there on. The secrets are looked for
 * in every form `secretForms` lists (as is, url-encoded, inside base64 as in Basic auth...).
 */
import { Transform } from "node:stream";
import { secretForms, type Secret } from "../crypto/secret.js";
import { replaceAll } from "../egress/scrub-stream.js";

/** The longest pkt-line, its 4-byte length included (git's LARGE_PACKET_MAX). */
export const MAX_PKT_LINE = 65520;
/** A side-band packet's data at most: the length and the band byte come first. */
const MAX_BAND_DATA = MAX_PKT_LINE - 5;
const HEX4 = /^[0-9a-fA-F]{4}$/;

export function scrubPktLines(secrets: readonly Secret[]): Transform {
  const needles = secretForms(secrets).map((form) => Buffer.from(form, "utf8"));
  const keep = Math.max(0, ...needles.map((n) => n.length - 1));
  const bands = new Map<number, HeldBack>();
  let plain: HeldBack | undefined;
  let pending: Buffer = Buffer.alloc(0);
  const out: Buffer[] = [];

  const emitBand = (band: number, data: Buffer): void => {
    for (let at = 0; at < data.length; at += MAX_BAND_DATA) {
      const part = data.subarray(at, at + MAX_BAND_DATA);
      out.push(pktHeader(part.length + 5), Buffer.of(band), part);
    }
  };
  // Before anything that is not a band packet: what the bands held back goes first, in order.
  const flushBands = (): void => {
    for (const [band, held] of bands) emitBand(band, held.end());
  };
  const toPlain = (rest: Buffer): void => {
    flushBands();
    plain = new HeldBack(needles, keep);
    out.push(plain.push(rest));
  };

  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      if (plain !== undefined) {
        cb(null, plain.push(chunk));
        return;
      }
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      let at = 0;
      while (pending.length - at >= 4) {
        const head = pending.toString("latin1", at, at + 4);
        const length = HEX4.test(head) ? Number.parseInt(head, 16) : -1;
        if (length < 0 || length === 3 || length > MAX_PKT_LINE) {
          toPlain(pending.subarray(at));
          at = pending.length;
          break;
        }
        if (length < 3) {
          // flush-pkt, delim-pkt, response-end-pkt: no payload.
          flushBands();
          out.push(pending.subarray(at, at + 4));
          at += 4;
          continue;
        }
        if (pending.length - at < length) break;
        const payload = pending.subarray(at + 4, at + length);
        at += length;
        const band = payload[0];
        if (band === 1 || band === 2 || band === 3) {
          let held = bands.get(band);
          if (held === undefined) bands.set(band, (held = new HeldBack(needles, keep)));
          emitBand(band, held.push(payload.subarray(1)));
        } else {
          flushBands();
          // A secret form shorter than "[redacted]" makes the line longer: cut at git's limit.
          const clean = replaceAll(payload, needles).subarray(0, MAX_PKT_LINE - 4);
          out.push(pktHeader(clean.length + 4), clean);
        }
      }
      pending = Buffer.from(pending.subarray(at));
      cb(null, Buffer.concat(out.splice(0)));
    },
    flush(cb) {
      // A last pkt-line cut short is passed on as bytes (scrubbed): git will say it is cut short.
      if (plain === undefined && pending.length > 0) toPlain(pending);
      else flushBands();
      if (plain !== undefined) out.push(plain.end());
      cb(null, Buffer.concat(out.splice(0)));
    },
  });
}

function pktHeader(length: number): Buffer {
  return Buffer.from(length.toString(16).padStart(4, "0"), "latin1");
}

/**
 * One stream's bytes with the secrets replaced, less the last (longest form - 1) bytes, which
 * could be the start of a secret that the next bytes complete: those wait for them (or the end).
 */
class HeldBack {
  private tail: Buffer = Buffer.alloc(0);

  constructor(
    private readonly needles: readonly Buffer[],
    private readonly keep: number,
  ) {}

  push(bytes: Buffer): Buffer {
    const all = replaceAll(this.tail.length === 0 ? bytes : Buffer.concat([this.tail, bytes]), this.needles);
    const cut = Math.max(0, all.length - this.keep);
    this.tail = Buffer.from(all.subarray(cut));
    return all.subarray(0, cut);
  }

  end(): Buffer {
    const tail = this.tail;
    this.tail = Buffer.alloc(0);
    return tail;
  }
}
