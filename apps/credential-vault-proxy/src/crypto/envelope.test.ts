import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MhError } from "@metaharness/errors";
import { open, rewrap, seal } from "./envelope.js";
import { MasterKeyring, masterKeyFrom } from "./master-keys.js";

const key = () => masterKeyFrom(randomBytes(32));

describe("envelope encryption", () => {
  it("round-trips, and the ciphertext holds no plaintext", () => {
    const ring = new MasterKeyring(key(), []);
    const sealed = seal(Buffer.from("ghp_secret_value"), "vcrd_a", ring);
    expect(sealed.ciphertext.includes(Buffer.from("ghp_secret_value"))).toBe(false);
    expect(open(sealed, "vcrd_a", ring).toString()).toBe("ghp_secret_value");
  });

  it("binds a ciphertext to its credential", () => {
    const ring = new MasterKeyring(key(), []);
    const sealed = seal(Buffer.from("x"), "vcrd_a", ring);
    expect(() => open(sealed, "vcrd_b", ring)).toThrow(MhError);
  });

  it("re-wraps under a new master key without touching the ciphertext", () => {
    const old = key();
    const sealed = seal(Buffer.from("tok"), "vcrd_a", new MasterKeyring(old, []));
    const next = key();
    const rotated = rewrap(sealed, "vcrd_a", new MasterKeyring(next, [old]));
    expect(rotated.masterKeyId).toBe(next.id);
    expect(rotated.ciphertext.equals(sealed.ciphertext)).toBe(true);
    expect(open(rotated, "vcrd_a", new MasterKeyring(next, [])).toString()).toBe("tok");
    expect(() => open(sealed, "vcrd_a", new MasterKeyring(next, []))).toThrow(/not loaded/);
  });

  it("derives key ids from the key, not from a name", () => {
    const bytes = randomBytes(32);
    expect(masterKeyFrom(Buffer.from(bytes)).id).toBe(masterKeyFrom(Buffer.from(bytes)).id);
    expect(masterKeyFrom(Buffer.from(bytes)).id).not.toBe(key().id);
  });
});
