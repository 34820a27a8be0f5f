/** The request body limit stays within what one gRPC call to the session log carries. */
import { MAX_EVENT_BYTES } from "@metaharness/service-kit/grpc";
import { describe, expect, it } from "vitest";
import { loadConfig } from "./config.js";

const base = { MH_SESSION_LOG_TOKEN_FILE: "/log.token", MH_HARNESS_TOKEN_FILE: "/harness.token" };

describe("MH_GATEWAY_BODY_LIMIT_BYTES", () => {
  it("takes up to 16 MiB less 64 KiB and refuses more, naming the variable", () => {
    const most = MAX_EVENT_BYTES;
    expect(loadConfig({ ...base, MH_GATEWAY_BODY_LIMIT_BYTES: String(most) }).bodyLimitBytes).toBe(most);
    expect(() => loadConfig({ ...base, MH_GATEWAY_BODY_LIMIT_BYTES: String(most + 1) })).toThrow(/MH_GATEWAY_BODY_LIMIT_BYTES/);
  });
});
