/**
 * A TCP connection to a host that the egress policy has checked: the name is resolved once, every
 * address it resolved to is checked, and the connection is made to a checked address, never to
 * the name (which a second lookup could answer differently: DNS rebinding). Each call resolves
 * anew, so a name that starts to resolve to a private address is refused from then on.
 */
import { lookup } from "node:dns/promises";
import { connect, isIP, type Socket } from "node:net";
import { EgressRefused, isPrivateAddress } from "./egress-policy.js";

export interface DialOptions {
  /** Whether private, loopback and link-local addresses may be reached (see EgressPolicy). */
  readonly allowPrivate: boolean;
  readonly timeoutMs: number;
  /** Whether a refusal names the setting that would allow it (not for unrestricted egress). */
  readonly settable?: boolean;
}

export async function dialChecked(host: string, port: number, opts: DialOptions): Promise<Socket> {
  const plain = host.replace(/^\[|\]$/g, "");
  const literal = isIP(plain);
  const addresses = literal !== 0 ? [{ address: plain, family: literal }] : await lookup(plain, { all: true, verbatim: true });
  if (addresses.length === 0) throw Object.assign(new Error(`${plain} has no address`), { code: "ENOTFOUND" });
  if (!opts.allowPrivate && addresses.some((a) => isPrivateAddress(a.address))) throw new EgressRefused(plain, opts.settable ?? true);
  let last: unknown;
  for (const a of addresses) {
    try {
      return await connectTo(a.address, port, opts.timeoutMs);
    } catch (err) {
      last = err;
    }
  }
  throw last;
}

function connectTo(address: string, port: number, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: address, port });
    const timer = setTimeout(() => socket.destroy(Object.assign(new Error(`connecting to ${address}:${port} timed out`), { code: "ETIMEDOUT" })), timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(socket);
    });
    socket.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}
