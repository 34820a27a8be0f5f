/**
 * What a sandbox's egress endpoint may reach, decided the same way for plain HTTP requests and
 * CONNECT tunnels. A scope is what OpenEgress stored: host patterns (the allowlist, with the
 * package registries added when asked for), or ANY_PUBLIC_HOST for unrestricted networking, which
 * this deployment narrows (MH_EGRESS_UNRESTRICTED_PORTS, MH_EGRESS_DENIED_HOSTS) at every request,
 * so a narrower setting applies to endpoints already open. Unrestricted never reaches a private
 * address, whatever MH_CREDENTIAL_PROXY_ALLOW_PRIVATE_NETWORKS says: that setting is for the
 * deployment's own upstreams, which an allowlist names.
 */
import { MhError } from "@metaharness/errors";
import { hostMatches } from "../store/credential-config.js";

/** The scope of an unrestricted endpoint (never a valid host pattern, so no tenant can write it). */
export const ANY_PUBLIC_HOST = "*";

export interface UnrestrictedLimits {
  /** Ports unrestricted egress may reach; empty: this deployment gives no unrestricted egress. */
  readonly ports: readonly number[];
  /** Host patterns unrestricted egress never reaches. */
  readonly deniedHosts: readonly string[];
}

export type ScopeDecision =
  | { readonly allowed: true; /** Private addresses refused whatever the deployment allows. */ readonly publicOnly: boolean }
  | { readonly allowed: false; readonly why: string };

/**
 * `host` as a URL writes it for its scheme (no port when it is the default: "api.example.com",
 * "api.example.com:8443"); `hostname` without the port; `port` the one connected to.
 */
export function scopeAllows(scope: readonly string[], target: { host: string; hostname: string; port: number }, limits: UnrestrictedLimits): ScopeDecision {
  if (scope.includes(ANY_PUBLIC_HOST)) {
    if (!limits.ports.includes(target.port)) {
      return { allowed: false, why: `port ${target.port} is not open to unrestricted egress here (ports ${limits.ports.join(", ") || "none"})` };
    }
    if (limits.deniedHosts.some((p) => hostMatches(p, target.hostname))) return { allowed: false, why: `${target.hostname} is refused by this deployment` };
    return { allowed: true, publicOnly: true };
  }
  if (scope.some((p) => hostMatches(p, target.host))) return { allowed: true, publicOnly: false };
  return { allowed: false, why: `${target.hostname} is not an allowed host of this sandbox` };
}

/** The limits from MH_EGRESS_UNRESTRICTED_PORTS ("none", or port numbers) and MH_EGRESS_DENIED_HOSTS. */
export function unrestrictedLimits(ports: readonly string[], deniedHosts: readonly string[]): UnrestrictedLimits {
  if (ports.length === 1 && ports[0] === "none") return { ports: [], deniedHosts };
  const numbers = ports.map(Number);
  if (numbers.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) {
    throw new MhError("INVALID_ARGUMENT", `MH_EGRESS_UNRESTRICTED_PORTS must be "none" or port numbers (1-65535), not ${ports.join(",")}`, {
      field: "MH_EGRESS_UNRESTRICTED_PORTS",
    });
  }
  return { ports: numbers, deniedHosts: deniedHosts.map((h) => h.toLowerCase()) };
}
