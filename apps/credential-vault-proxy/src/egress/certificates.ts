/**
 * The X.509 certificates of egress interception: a sandbox's own certificate authority, and the
 * server certificates it issues for the hosts the proxy intercepts. ECDSA P-256 with SHA-256,
 * keys made and signatures computed by node:crypto (native, well under a millisecond each); the
 * DER structures come from @peculiar/asn1-x509, the ASN.1 schemas of RFC 5280 (the layer under
 * @peculiar/x509, without its dependency container, which needs a global Reflect polyfill that
 * `mh dev` would load into every service of its process). node:crypto can read certificates
 * (X509Certificate) but not write them.
 */
import { createHash, randomBytes, sign, X509Certificate, type KeyObject } from "node:crypto";
import { isIP } from "node:net";
import { AsnConvert, OctetString } from "@peculiar/asn1-schema";
import {
  AlgorithmIdentifier,
  AttributeTypeAndValue,
  AuthorityKeyIdentifier,
  AttributeValue,
  BasicConstraints,
  Certificate,
  ExtendedKeyUsage,
  Extension,
  Extensions,
  GeneralName,
  KeyIdentifier,
  KeyUsage,
  KeyUsageFlags,
  Name,
  RelativeDistinguishedName,
  SubjectAlternativeName,
  SubjectKeyIdentifier,
  SubjectPublicKeyInfo,
  TBSCertificate,
  Validity,
  Version,
  id_ce_authorityKeyIdentifier,
  id_ce_basicConstraints,
  id_ce_extKeyUsage,
  id_ce_keyUsage,
  id_ce_subjectAltName,
  id_ce_subjectKeyIdentifier,
  id_kp_serverAuth,
} from "@peculiar/asn1-x509";

const ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2";
const COMMON_NAME = "2.5.4.3";
/** Allowance for a sandbox clock a little behind the proxy's. */
const BACKDATE_MS = 5 * 60_000;

/** A self-signed CA that may sign server certificates only (path length 0). */
export function selfSignedCa(keys: { privateKey: KeyObject; publicKey: KeyObject }, commonName: string, notAfter: Date): string {
  const name = nameOf(commonName);
  return signed(keys.privateKey, {
    issuer: name,
    subject: name,
    publicKey: keys.publicKey,
    notAfter,
    extensions: [
      extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: true, pathLenConstraint: 0 })),
      extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.keyCertSign | KeyUsageFlags.cRLSign)),
      extension(id_ce_subjectKeyIdentifier, false, new SubjectKeyIdentifier(keyId(keys.publicKey))),
    ],
  });
}

/** A server certificate for `host` (a DNS name or an IP address), issued by `caPem`'s key. */
export function serverCertificate(caPem: string, caKey: KeyObject, publicKey: KeyObject, host: string, notAfter: Date): string {
  const ca = AsnConvert.parse(new X509Certificate(caPem).raw, Certificate);
  const san = isIP(host) !== 0 ? new GeneralName({ iPAddress: host }) : new GeneralName({ dNSName: host });
  const caEnd = ca.tbsCertificate.validity.notAfter.getTime();
  return signed(caKey, {
    issuer: ca.tbsCertificate.subject,
    subject: nameOf(host),
    publicKey,
    notAfter: notAfter < caEnd ? notAfter : caEnd,
    extensions: [
      extension(id_ce_basicConstraints, true, new BasicConstraints({ cA: false })),
      extension(id_ce_keyUsage, true, new KeyUsage(KeyUsageFlags.digitalSignature)),
      extension(id_ce_extKeyUsage, false, new ExtendedKeyUsage([id_kp_serverAuth])),
      extension(id_ce_subjectAltName, false, new SubjectAlternativeName([san])),
      extension(id_ce_subjectKeyIdentifier, false, new SubjectKeyIdentifier(keyId(publicKey))),
      // Strict verifiers (OpenSSL's -x509_strict, Python 3.13's default) want both identifiers.
      extension(id_ce_authorityKeyIdentifier, false, new AuthorityKeyIdentifier({ keyIdentifier: new KeyIdentifier(keyId(new X509Certificate(caPem).publicKey)) })),
    ],
  });
}

/** SHA-256 of a certificate's DER, hex: names a CA where its key is sealed (the seal's binding). */
export function fingerprint(pem: string): string {
  return createHash("sha256").update(new X509Certificate(pem).raw).digest("hex");
}

function signed(signer: KeyObject, c: { issuer: Name; subject: Name; publicKey: KeyObject; notAfter: Date; extensions: Extension[] }): string {
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x01; // positive and non-zero, as RFC 5280 asks
  const algorithm = new AlgorithmIdentifier({ algorithm: ECDSA_WITH_SHA256 });
  const tbs = new TBSCertificate({
    version: Version.v3,
    serialNumber: toArrayBuffer(serial),
    signature: algorithm,
    issuer: c.issuer,
    validity: new Validity({ notBefore: new Date(Date.now() - BACKDATE_MS), notAfter: c.notAfter }),
    subject: c.subject,
    subjectPublicKeyInfo: AsnConvert.parse(c.publicKey.export({ type: "spki", format: "der" }), SubjectPublicKeyInfo),
    extensions: new Extensions(c.extensions),
  });
  const tbsDer = Buffer.from(AsnConvert.serialize(tbs));
  const signature = sign("sha256", tbsDer, { key: signer, dsaEncoding: "der" });
  const der = Buffer.from(AsnConvert.serialize(new Certificate({ tbsCertificate: tbs, signatureAlgorithm: algorithm, signatureValue: toArrayBuffer(signature) })));
  const lines = der.toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
}

/** RFC 5280's method 1: SHA-1 of the subjectPublicKey bits. */
function keyId(key: KeyObject): ArrayBuffer {
  const spki = AsnConvert.parse(key.export({ type: "spki", format: "der" }), SubjectPublicKeyInfo);
  return toArrayBuffer(createHash("sha1").update(Buffer.from(spki.subjectPublicKey)).digest());
}

function nameOf(commonName: string): Name {
  return new Name([new RelativeDistinguishedName([new AttributeTypeAndValue({ type: COMMON_NAME, value: new AttributeValue({ utf8String: commonName }) })])]);
}

function extension(id: string, critical: boolean, value: object): Extension {
  return new Extension({ extnID: id, critical, extnValue: new OctetString(AsnConvert.serialize(value)) });
}

function toArrayBuffer(b: Buffer): ArrayBuffer {
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}
