/**
 * What every process inside a sandbox gets, whoever starts it (the launcher's bwrap command line,
 * driver/bwrap-args.ts; a package build, layers/build-sandbox.ts) and whatever runs in it (the
 * tools, git clones, the egress relay): its namespaces and unprivileged user, where its workspace
 * and the broker's helpers are, and its environment. Below the driver, the tools, the layers and
 * the remotes, so none of them reaches into another for a path.
 */

/** The unprivileged user and group the sandbox runs as inside (outside: driver/sandbox-uids.ts). */
export const SANDBOX_UID = 65534;
export const SANDBOX_GID = 65534;
export const WORKSPACE = "/workspace";

/** The loopback HTTP proxy of ALLOWLIST sandboxes (see agent/mh-egress-relay). */
export const EGRESS_RELAY_IN_SANDBOX = "/opt/metaharness/bin/mh-egress-relay";
/** Where a sandbox sees its own run directory: the broker's unix sockets for it (git, egress). */
export const RUN_DIR_IN_SANDBOX = "/run/metaharness";

/** PATH, HOME and locale for everything the sandbox runs; nothing of the broker's own environment. */
export const SANDBOX_ENV: readonly string[] = [
  "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/metaharness/bin",
  `HOME=${WORKSPACE}`,
  "USER=sandbox",
  "LOGNAME=sandbox",
  "SHELL=/bin/bash",
  "LANG=C.UTF-8",
  "LC_ALL=C.UTF-8",
  "TERM=dumb",
  "TMPDIR=/tmp",
];

/** Every sandbox's isolation, tools' and package builds' alike (layers/build-sandbox.ts). */
export function isolationArgs(): string[] {
  return [
    "--unshare-all", // user, ipc, pid, net, uts, cgroup namespaces: no network, no host pids
    "--die-with-parent",
    "--new-session", // no TIOCSTI into the broker's terminal
    "--clearenv",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_GID),
    "--cap-drop",
    "ALL",
  ];
}
