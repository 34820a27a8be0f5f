/**
 * Where the proxy may connect on a tenant's behalf. Every upstream (an MCP server, a token
 * endpoint, a git remote, an egress host) is a URL a tenant wrote, so without a policy a tenant
 * could make the proxy reach its own neighbours: Postgres on 127.0.0.1, the cloud metadata
 * service on 169.254.169.254, anything on the private network, and read their answers back
 * through a validation probe. The check runs when a connection is made, on the addresses the
 * name resolved to (and on an IP literal as written), so a name that resolves to a private
 * address, or starts to (DNS rebinding), is refused as well as a literal one.
 *
 * A deployment whose upstreams live on a private network says so with
 * MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS=true (tests and `mh dev` do: their servers are on
 * localhost); then nothing is refused.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { BlockList, isIP, type LookupFunction } from "node:net";
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";
import { MhError } from "@metaharness/errors";

export const ALLOW_PRIVATE_SETTING = "MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS";

/** Addresses that are not on the public internet. */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8], // "this network", including the unspecified address
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // CGNAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata services
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved and broadcast
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 96], // unspecified, loopback, and the deprecated IPv4-compatible forms
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv6");
}

/** True for an address the policy refuses (BlockList checks IPv4-mapped IPv6 as the IPv4 it maps). */
export function isPrivateAddress(address: string): boolean {
  const plain = address.replace(/^\[|\]$/g, "");
  const family = isIP(plain);
  return family !== 0 && PRIVATE.check(plain, family === 4 ? "ipv4" : "ipv6");
}

/** A connection refused by the policy; the message names the host and the setting, nothing else. */
export class EgressRefused extends MhError {
  /** `settable`: whether ALLOW_PRIVATE_SETTING would allow it (not for unrestricted egress, which is public-only). */
  constructor(host: string, settable = true) {
    super(
      "PERMISSION_DENIED",
      settable
        ? `${host} is on a private network (loopback, link-local or private address), which this credential proxy does not connect to; set ${ALLOW_PRIVATE_SETTING}=true if this deployment's upstreams live there`
        : `${host} is on a private network (loopback, link-local or private address), which unrestricted egress never reaches: it is for public addresses only`,
    );
  }
}

/** The EgressRefused somewhere in an error's cause chain (fetch wraps it in "fetch failed"). */
export function egressRefusal(err: unknown): EgressRefused | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof EgressRefused) return e;
  }
  return undefined;
}

export class EgressPolicy {
  /** For node:http(s) requests: resolves, then refuses private addresses. */
  readonly lookup: LookupFunction;
  /** fetch whose connections go through the policy (for the MCP transport and the token endpoint). */
  readonly fetch: FetchLike;
  private readonly agent: Agent;

  /** `settable`: whether refusals name ALLOW_PRIVATE_SETTING (false for the public-only policy of unrestricted egress). */
  constructor(
    readonly allowPrivateNetworks: boolean,
    private readonly settable = true,
  ) {
    this.lookup = (hostname, options, callback) => {
      dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
        if (err !== null) return callback(err, "", 0);
        if (!this.allowPrivateNetworks && addresses.some((a) => isPrivateAddress(a.address))) return callback(new EgressRefused(hostname, this.settable), "", 0);
        if (options.all === true) return callback(null, addresses);
        const first = addresses[0];
        if (first === undefined) return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 0);
        callback(null, first.address, first.family);
      });
    };
    const connect = buildConnector({ lookup: this.lookup });
    this.agent = new Agent({
      connect: (opts, callback) => {
        try {
          this.check(opts.hostname);
        } catch (err) {
          callback(err as Error, null);
          return;
        }
        connect(opts, callback);
      },
    });
    const agent = this.agent;
    // undici's own fetch with its own Agent (the global fetch's dispatcher is not ours to replace:
    // `mh dev` runs every service in one process).
    this.fetch = (url, init) => undiciFetch(url, { ...init, dispatcher: agent });
  }

  /**
   * Refuses an IP literal at once: a connection to one makes no lookup. (A name is checked on
   * the addresses it resolves to, by `lookup`.)
   */
  check(hostname: string): void {
    if (!this.allowPrivateNetworks && isPrivateAddress(hostname)) throw new EgressRefused(hostname.replace(/^\[|\]$/g, ""), this.settable);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
