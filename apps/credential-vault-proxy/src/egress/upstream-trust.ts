/**
 * The roots egress verifies upstream servers against: the system's store (MH_EGRESS_TRUST_FILE,
 * Debian's bundle by default, so an operator's own roots count as they do for every other
 * program on the machine), or Node's bundled roots where the file is absent, plus an optional
 * extra root (MH_EGRESS_EXTRA_TRUST_FILE: tests whose upstream has its own CA).
 */
import { readFile } from "node:fs/promises";
import { rootCertificates } from "node:tls";
import { MhError } from "@metaharness/errors";

export async function upstreamTrust(trustFile: string, extraFile: string | undefined): Promise<string> {
  const system = await readFile(trustFile, "utf8").catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return rootCertificates.join("\n");
    throw new MhError("FAILED_PRECONDITION", `MH_EGRESS_TRUST_FILE ${trustFile} cannot be read: ${err.message}`, { field: "MH_EGRESS_TRUST_FILE" });
  });
  if (extraFile === undefined) return system;
  const extra = await readFile(extraFile, "utf8").catch((err: Error) => {
    throw new MhError("FAILED_PRECONDITION", `MH_EGRESS_EXTRA_TRUST_FILE ${extraFile} cannot be read: ${err.message}`, { field: "MH_EGRESS_EXTRA_TRUST_FILE" });
  });
  return `${system.trimEnd()}\n${extra}`;
}
