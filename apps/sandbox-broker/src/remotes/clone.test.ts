import { RepositoryFailureKind } from "@metaharness/proto";
import { describe, expect, it } from "vitest";
import { cloneFailureKind } from "./clone.js";

// git's own words, as git 2.39 prints them through the mh:: helper and the credential proxy.
const at = "'http://127.0.0.1:40000/687474703a2f2f6769742e6578616d706c652e636f6d2f6f72672f6170702e676974/'";

describe("cloneFailureKind", () => {
  it("tells the proxy's word for a rejected credential from a refused access", () => {
    expect(
      cloneFailureKind(`cloning x failed (exit code 128): remote: the repository host rejected the credentials (HTTP 401) / fatal: unable to access ${at}: The requested URL returned error: 403`),
    ).toBe(RepositoryFailureKind.REPOSITORY_FAILURE_KIND_AUTHENTICATION);
    expect(cloneFailureKind(`cloning x failed (exit code 128): fatal: unable to access ${at}: The requested URL returned error: 403`)).toBe(
      RepositoryFailureKind.REPOSITORY_FAILURE_KIND_FORBIDDEN,
    );
  });

  it("names a missing repository, and anything else a clone error", () => {
    expect(cloneFailureKind(`cloning x failed (exit code 128): fatal: repository ${at} not found`)).toBe(
      RepositoryFailureKind.REPOSITORY_FAILURE_KIND_NOT_FOUND,
    );
    expect(cloneFailureKind(`cloning x failed (exit code 128): fatal: unable to access ${at}: The requested URL returned error: 502`)).toBe(
      RepositoryFailureKind.REPOSITORY_FAILURE_KIND_CLONE,
    );
    expect(cloneFailureKind("cloning x failed (timed out after 60000 ms)")).toBe(RepositoryFailureKind.REPOSITORY_FAILURE_KIND_CLONE);
  });
});
