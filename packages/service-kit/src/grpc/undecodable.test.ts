/**
 * Every method of every service refuses a request whose bytes do not decode as protobuf, even
 * where the generated decoder skips them without a word (an over-long varint in an unknown field).
 */
import { CredentialVaultProxyService, HarnessService, SandboxBrokerService, SessionLogService } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { decodingSafely, UndecodableRequest } from "./undecodable.js";

/** Field 15 as a varint of 11 bytes (ten continuation bytes, then 0x01). */
const OVERLONG = Buffer.from([0x78, ...Array<number>(10).fill(0x80), 0x01]);

describe("decodingSafely", () => {
  for (const definition of [SessionLogService, HarnessService, SandboxBrokerService, CredentialVaultProxyService]) {
    for (const [name, method] of Object.entries(decodingSafely(definition))) {
      it(`${method.path} refuses an over-long varint in an unknown field`, () => {
        const decoded: unknown = method.requestDeserialize(OVERLONG);
        expect(decoded, name).toBeInstanceOf(UndecodableRequest);
        expect((decoded as UndecodableRequest).reason).toMatch(/varint longer than 10 bytes/);
      });
    }
  }
});
