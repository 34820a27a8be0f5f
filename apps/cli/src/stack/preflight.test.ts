/**
 * What the embedded stack asks of the machine, checked before anything starts: bubblewrap missing
 * (installed when mh can act as root, else the command to run, as a setup error: exit 7), present
 * but unable to start a sandbox (a sentence saying why), and the gateway's port taken (said at once).
 * The install itself is what infra/sandbox/up.sh does for the test command, proven by this
 * machine's setup; here the installer is named, or none.
 */
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EXIT } from "../exit-codes.js";
import { BWRAP_PATH, ensurePortFree, ensureSandboxSupport, INSTALL_COMMAND, isSetupError } from "./preflight.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function script(body: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "mh-preflight-"));
  dirs.push(dir);
  const path = join(dir, "tool");
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

async function refusal(run: Promise<unknown>): Promise<Error> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  expect(isSetupError(err)).toBe(true);
  return err as Error;
}

describe("bubblewrap", () => {
  it("names the command to run when it is missing and mh cannot act as root", async () => {
    const progress: string[] = [];
    const missing = join(tmpdir(), "mh-no-such-dir", "bwrap");
    const err = await refusal(ensureSandboxSupport({ bwrapPath: missing, explicitPath: false, progress: (l) => progress.push(l), root: "none", installer: await script("exit 0") }));
    expect(err.message).toBe(
      `bubblewrap is not installed (${missing}) and mh cannot install it (not root, and sudo asks for a password); the sandboxes need it: run \`${INSTALL_COMMAND}\`, then this command again`,
    );
    expect(progress).toEqual([]);
    expect(EXIT.setup).toBe(7);
  });

  it("names the command when there is no installer (an installed CLI), and what MH_BWRAP_PATH names", async () => {
    const missing = join(tmpdir(), "mh-no-such-dir", "bwrap");
    const none = await refusal(ensureSandboxSupport({ bwrapPath: missing, explicitPath: false, progress: () => undefined, root: "root", installer: undefined }));
    expect(none.message).toContain(`run \`${INSTALL_COMMAND}\``);
    const named = await refusal(ensureSandboxSupport({ bwrapPath: missing, explicitPath: true, progress: () => undefined, root: "root" }));
    expect(named.message).toBe(`bubblewrap is not at ${missing} (MH_BWRAP_PATH): install it (${INSTALL_COMMAND}) or point MH_BWRAP_PATH at its bwrap`);
  });

  it("runs the installer as root, in one progress line, and says why when it fails", async () => {
    const missing = join(tmpdir(), "mh-no-such-dir", "bwrap");
    const progress: string[] = [];
    const failing = await script('echo "[sandbox] apt-get install bubblewrap (this takes a while once)" >&2; echo "[sandbox] ERROR: apt-get update failed" >&2; exit 1');
    const err = await refusal(ensureSandboxSupport({ bwrapPath: missing, explicitPath: false, progress: (l) => progress.push(l), root: "root", installer: failing }));
    expect(progress).toEqual(["bubblewrap is not installed: installing it (apt-get install bubblewrap; infra/sandbox/up.sh)…"]);
    expect(err.message).toContain(`exited 1: [sandbox] apt-get install bubblewrap (this takes a while once) / [sandbox] ERROR: apt-get update failed); install it by hand: ${INSTALL_COMMAND}`);
  });

  it("says so when bwrap is there but cannot start a sandbox", async () => {
    // What bwrap prints where user namespaces are refused (a container without the privileges).
    const refused = await script('echo "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2; exit 1');
    const err = await refusal(ensureSandboxSupport({ bwrapPath: refused, explicitPath: true, progress: () => undefined }));
    expect(err.message).toMatch(/^bubblewrap \(.*\) is installed but cannot start a sandbox here \(bwrap: No permissions to creating new namespace, .*\): this kernel or container does not let it create the user, pid, mount and network namespaces/);
    expect(err.message).toContain("docker run --privileged");
  });

  it("passes with this machine's bwrap", async () => {
    await ensureSandboxSupport({ bwrapPath: BWRAP_PATH, explicitPath: false, progress: () => undefined });
  });
});

describe("the gateway's port", () => {
  it("is refused at once when taken, and 0 is always free", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const err = await refusal(ensurePortFree("127.0.0.1", port));
      expect(err.message).toBe(`127.0.0.1:${port} is in use: pass --port N (0: any free port)`);
      await ensurePortFree("127.0.0.1", 0);
    } finally {
      taken.close();
    }
  });
});
