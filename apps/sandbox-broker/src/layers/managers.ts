/**
 * Which package managers this broker can build layers with, and why not the others. A build runs
 * in a sandbox that sees only the host's /usr, so a manager's tool must be there (a toolchain in
 * /root or a home directory does not count), and its registry must answer. A manager that fails
 * either check is refused up front (BuildLayer, Provision: INVALID_ARGUMENT naming it), never
 * skipped: RubyGems, for one, does not resolve on machines whose network reaches only some
 * registries. Registry probes (a DNS lookup and a TCP connect) are cached, a success for ten
 * minutes, a failure for one.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import type { PackageManager } from "@metaharness/events";

interface ManagerNeeds {
  /** Every path must exist (inside /usr: what the build sandbox sees). */
  readonly tools: readonly string[];
  /** host:port the manager fetches from. */
  readonly registry: string;
  /** Anything else the tool needs, checked once; the reason it is missing. */
  readonly extra?: () => string | undefined;
}

const PYTHON = "/usr/bin/python3";

/** The first executable of `candidates` that exists. */
export function firstTool(candidates: readonly string[]): string | undefined {
  return candidates.find((p) => existsSync(p));
}

export const GO_TOOL = firstTool(["/usr/local/go/bin/go", "/usr/bin/go", "/usr/lib/go/bin/go"]) ?? "/usr/bin/go";

const NEEDS: { readonly [M in PackageManager]: ManagerNeeds } = {
  apt: {
    tools: ["/usr/bin/apt-get", "/usr/bin/dpkg-deb", "/usr/bin/mount"],
    registry: "deb.debian.org:80",
    // The layer's Debian files are overlaid on /usr with a mount only root may make.
    extra: () => (process.getuid?.() === 0 ? undefined : "the broker must run as root to overlay the packages' files on /usr"),
  },
  cargo: { tools: ["/usr/bin/cargo"], registry: "index.crates.io:443" },
  gem: { tools: ["/usr/bin/gem"], registry: "rubygems.org:443" },
  go: { tools: [GO_TOOL], registry: "proxy.golang.org:443" },
  npm: { tools: ["/usr/bin/npm", "/usr/bin/node"], registry: "registry.npmjs.org:443" },
  pip: {
    tools: [PYTHON],
    registry: "pypi.org:443",
    extra: () =>
      spawnSync(PYTHON, ["-c", "import ensurepip, venv"], { stdio: "ignore", timeout: 10_000 }).status === 0
        ? undefined
        : "python3's venv module (Debian's python3-venv) is not installed",
  },
};

const OK_TTL_MS = 10 * 60_000;
const FAILED_TTL_MS = 60_000;
const PROBE_TIMEOUT_MS = 3_000;

export class ManagerCheck {
  private readonly probes = new Map<string, { at: number; problem: string | undefined }>();
  private readonly extras = new Map<PackageManager, string | undefined>();

  constructor(private readonly probeTimeoutMs = PROBE_TIMEOUT_MS) {}

  /** Why `manager` cannot build here; undefined when it can. */
  async problem(manager: PackageManager): Promise<string | undefined> {
    const needs = NEEDS[manager];
    const missing = needs.tools.find((t) => !existsSync(t));
    if (missing !== undefined) return `${manager} is not installed on this machine (${missing} is missing)`;
    if (!this.extras.has(manager)) this.extras.set(manager, needs.extra?.());
    const extra = this.extras.get(manager);
    if (extra !== undefined) return `${manager} cannot be used here: ${extra}`;
    const reach = await this.reach(needs.registry);
    return reach === undefined ? undefined : `this machine cannot reach ${manager}'s registry (${needs.registry}: ${reach})`;
  }

  private async reach(hostPort: string): Promise<string | undefined> {
    const cached = this.probes.get(hostPort);
    if (cached !== undefined && Date.now() - cached.at < (cached.problem === undefined ? OK_TTL_MS : FAILED_TTL_MS)) return cached.problem;
    const problem = await probe(hostPort, this.probeTimeoutMs);
    this.probes.set(hostPort, { at: Date.now(), problem });
    return problem;
  }
}

function probe(hostPort: string, timeoutMs: number): Promise<string | undefined> {
  const [host = "", port = "443"] = hostPort.split(":");
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port), timeout: timeoutMs });
    const done = (problem: string | undefined): void => {
      socket.destroy();
      resolve(problem);
    };
    socket.once("connect", () => done(undefined));
    socket.once("timeout", () => done(`no answer within ${timeoutMs} ms`));
    socket.once("error", (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}
