/**
 * What the embedded stack needs of the machine, checked before anything starts so that a
 * missing piece is one clear sentence rather than a failed tool call later.
 */
import { access, constants } from "node:fs/promises";
import { MhError } from "@metaharness/errors";

export const BWRAP_PATH = "/usr/bin/bwrap";

export async function checkSandboxSupport(bwrap = BWRAP_PATH): Promise<void> {
  try {
    await access(bwrap, constants.X_OK);
  } catch {
    throw new MhError(
      "FAILED_PRECONDITION",
      `bubblewrap is not installed (${bwrap}); the sandboxes need it: sudo apt-get install bubblewrap`,
    );
  }
}
