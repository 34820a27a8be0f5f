/**
 * What the embedded stack needs of the machine, made ready (or explained) before anything starts,
 * so that a missing piece is one clear sentence rather than a failed tool call later:
 * - bubblewrap missing: installed the way the test command does it (infra/sandbox/up.sh, which
 *   runs apt-get as root or through non-interactive sudo), announced in one line; when this process
 *   can be neither, the refusal names the command to run;
 * - bubblewrap present but unable to start a sandbox (no user namespaces, a container without
 *   the privileges): a sentence saying so;
 * - the gateway's port taken: said before anything else starts, not after the whole stack did.
 * Each refusal is a setup error (isSetupError), which `mh` exits with EXIT.setup.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { access, constants } from "node:fs/promises";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { MhError, SetupNeed } from "@metaharness/errors";

/** Where Debian's package puts bwrap, and where the sandbox broker looks unless MH_BWRAP_PATH says otherwise. */
export const BWRAP_PATH = "/usr/bin/bwrap";
/** What to run by hand when mh cannot install bubblewrap itself. */
export const INSTALL_COMMAND = "sudo apt-get install -y bubblewrap";
/** The test command's installer, found beside this file in a checkout (absent from an installed CLI). */
const SANDBOX_UP = fileURLToPath(new URL("../../../../infra/sandbox/up.sh", import.meta.url));
/** The detail that marks an MhError as a machine not ready for the stack. */

/** How this process can act as root: it is root, sudo works without a password, or neither. */
export type RootAccess = "root" | "sudo" | "none";

export interface SandboxSetup {
  /** The bwrap the broker will run. */
  readonly bwrapPath: string;
  /** True when MH_BWRAP_PATH named it: installing Debian's package would not put it there. */
  readonly explicitPath: boolean;
  /** Told once, before the install starts (it takes a while). */
  readonly progress: (line: string) => void;
  /** Tests say "none"; otherwise found out when needed. */
  readonly root?: RootAccess;
  /** The installer to run; tests leave it; an installed CLI has none. */
  readonly installer?: string | undefined;
}

export function setupError(message: string, what: "bubblewrap" | "port", cause?: unknown): MhError {
  return new MhError("FAILED_PRECONDITION", message, { details: SetupNeed.of({ setup: what }), ...(cause === undefined ? {} : { cause }) });
}

/** True for the refusals of this file: the machine is not ready for the stack. */
export function isSetupError(err: unknown): boolean {
  return err instanceof MhError && SetupNeed.find(err) !== undefined;
}

export function rootAccess(): RootAccess {
  if (process.getuid?.() === 0) return "root";
  return spawnSync("sudo", ["-n", "true"], { stdio: "ignore", timeout: 5_000 }).status === 0 ? "sudo" : "none";
}

/** Makes bubblewrap usable here, installing it when it can; throws a setup error saying what to do otherwise. */
export async function ensureSandboxSupport(setup: SandboxSetup): Promise<void> {
  if (!(await executable(setup.bwrapPath))) {
    if (setup.explicitPath) {
      throw setupError(`bubblewrap is not at ${setup.bwrapPath} (MH_BWRAP_PATH): install it (${INSTALL_COMMAND}) or point MH_BWRAP_PATH at its bwrap`, "bubblewrap");
    }
    const installer = "installer" in setup ? setup.installer : existsSync(SANDBOX_UP) ? SANDBOX_UP : undefined;
    const root = setup.root ?? rootAccess();
    if (installer === undefined || root === "none") {
      const why = installer === undefined ? "" : " and mh cannot install it (not root, and sudo asks for a password)";
      throw setupError(`bubblewrap is not installed (${setup.bwrapPath})${why}; the sandboxes need it: run \`${INSTALL_COMMAND}\`, then this command again`, "bubblewrap");
    }
    setup.progress(`bubblewrap is not installed: installing it (apt-get install bubblewrap${root === "sudo" ? ", through sudo" : ""}; infra/sandbox/up.sh)…`);
    await install(installer);
  }
  const smoke = trySandbox(setup.bwrapPath);
  if (smoke !== undefined) {
    throw setupError(
      `bubblewrap (${setup.bwrapPath}) is installed but cannot start a sandbox here (${smoke}): this kernel or container does not let it create the user, pid, mount and network namespaces the sandboxes need; ` +
        "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04) or run as root, and in a container give it the privileges (docker run --privileged)",
      "bubblewrap",
    );
  }
}

async function executable(path: string): Promise<boolean> {
  return access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
}

/** Runs the installer; on failure its last lines of progress say why. */
function install(installer: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [installer], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr = (stderr + text).slice(-4_000)));
    child.once("error", (err) => reject(setupError(`could not run ${installer}: ${err.message}; install bubblewrap by hand: ${INSTALL_COMMAND}`, "bubblewrap", err)));
    child.once("exit", (code) => {
      if (code === 0) return resolve();
      const last = stderr.trim().split("\n").slice(-3).join(" / ");
      reject(setupError(`installing bubblewrap failed (${installer} exited ${code}: ${last}); install it by hand: ${INSTALL_COMMAND}`, "bubblewrap"));
    });
  });
}

/** Starts one throw-away sandbox with the namespaces the broker asks for; undefined when it ran, else bwrap's complaint. */
function trySandbox(bwrap: string): string | undefined {
  const args = ["--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib"];
  const run = spawnSync(bwrap, [...args, "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "/usr/bin/true"], { encoding: "utf8", timeout: 10_000 });
  if (run.status === 0) return undefined;
  const said = (run.stderr ?? "").trim().split("\n")[0] ?? "";
  return said !== "" ? said : run.error !== undefined ? run.error.message : `exit ${String(run.status ?? run.signal)}`;
}

/** Refuses a gateway port something already listens on, before anything starts (port 0 is always free). */
export async function ensurePortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EADDRINUSE") reject(setupError(`${host}:${port} is in use: pass --port N (0: any free port)`, "port", err));
      else resolve();
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}
