/**
 * Each egress remote's own certificate authority: made when OpenEgress opens the remote, its
 * certificate handed to the broker for the sandbox's trust bundle, its private key sealed with
 * the master keyring and stored with the remote (so any proxy replica, or this one restarted, can
 * serve the sandbox's tunnels), never sent anywhere. A CA is trusted by its one sandbox only, so
 * a certificate it issues is worthless to every other sandbox and to the host.
 *
 * Server certificates all share one key pair per proxy process (as interception proxies do): what
 * a sandbox trusts is its CA's signature, and a certificate is issued per host and cached, so a
 * tunnel to a host seen before costs no signature.
 */
import { createHash, createPrivateKey, generateKeyPairSync } from "node:crypto";
import { createSecureContext, type SecureContext } from "node:tls";
import { open, seal } from "../crypto/envelope.js";
import type { MasterKeyring } from "../crypto/master-keys.js";
import type { StoredCa } from "../store/remotes.js";
import { fingerprint, selfSignedCa, serverCertificate } from "./certificates.js";

/** Issued certificates kept (per CA and host); the oldest goes first. */
const MAX_CACHED = 1024;
/** A CA outlives its remote a little: a tunnel opened just before the end may finish. */
const CA_GRACE_MS = 3600_000;

export class SandboxCas {
  private readonly serverKeys = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  private readonly serverKeyPem = this.serverKeys.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  private readonly contexts = new Map<string, SecureContext>();

  constructor(private readonly keyring: MasterKeyring) {}

  /** A new CA for a sandbox's egress remote, until a little after `expiresAt`. */
  create(sandboxId: string, expiresAt: Date): StoredCa {
    const keys = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
    const certificatePem = selfSignedCa(keys, `Meta-Harness egress CA ${sandboxId}`, new Date(expiresAt.getTime() + CA_GRACE_MS));
    const key = seal(keys.privateKey.export({ type: "pkcs8", format: "der" }), sealId(certificatePem), this.keyring);
    return { certificatePem, key };
  }

  /** What the proxy presents to the sandbox for `host`: a certificate its CA issued, and the CA. */
  contextFor(ca: StoredCa, host: string): SecureContext {
    const cacheKey = `${createHash("sha256").update(ca.certificatePem).digest("hex")}|${host}`;
    const cached = this.contexts.get(cacheKey);
    if (cached !== undefined) return cached;
    const caKey = createPrivateKey({ key: open(ca.key, sealId(ca.certificatePem), this.keyring), format: "der", type: "pkcs8" });
    const cert = serverCertificate(ca.certificatePem, caKey, this.serverKeys.publicKey, host, new Date(Date.now() + 7 * 24 * 3600_000));
    const context = createSecureContext({ key: this.serverKeyPem, cert: `${cert}${ca.certificatePem}` });
    this.contexts.set(cacheKey, context);
    if (this.contexts.size > MAX_CACHED) this.contexts.delete(this.contexts.keys().next().value!);
    return context;
  }
}

/** What the sealed key is bound to: its own CA (a key copied onto another remote does not open). */
const sealId = (certificatePem: string): string => `egress-ca:${fingerprint(certificatePem)}`;
