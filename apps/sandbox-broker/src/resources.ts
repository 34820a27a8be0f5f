/**
 * A Provision request's resources, checked and completed: zero means the broker's default, a
 * value outside the configured bounds is an INVALID_ARGUMENT naming every field at fault (one
 * round to fix them all), and workspace paths must stay inside the workspace.
 */
import { posix } from "node:path";
import { MhError } from "@metaharness/errors";
import { NetworkMode, type Resources, type WorkspaceFile } from "@metaharness/proto";
import type { SandboxBrokerConfig } from "./config.js";

export interface Limits {
  readonly cpuMillis: number;
  readonly memoryBytes: number;
  readonly diskBytes: number;
  readonly maxProcesses: number;
  readonly lifetimeSeconds: number;
  readonly idleTimeoutSeconds: number;
}

export interface SandboxSpec {
  readonly limits: Limits;
  /** Paths relative to the workspace, normalised. */
  readonly files: readonly WorkspaceFile[];
  /** The resources as they are recorded and described: defaults filled in, file contents left out. */
  readonly resources: Resources;
}

type LimitKey = keyof Limits;

const FIELDS: ReadonlyArray<{ key: LimitKey; field: string; unit: string }> = [
  { key: "cpuMillis", field: "cpu_millis", unit: "millicpus" },
  { key: "memoryBytes", field: "memory_bytes", unit: "bytes" },
  { key: "diskBytes", field: "disk_bytes", unit: "bytes" },
  { key: "maxProcesses", field: "max_processes", unit: "processes" },
  { key: "lifetimeSeconds", field: "lifetime_seconds", unit: "seconds" },
  { key: "idleTimeoutSeconds", field: "idle_timeout_seconds", unit: "seconds" },
];

/** Smallest values that still make a working sandbox. */
const MINIMUMS: Limits = {
  cpuMillis: 10,
  memoryBytes: 16 * 1024 * 1024,
  diskBytes: 1024 * 1024,
  maxProcesses: 8,
  lifetimeSeconds: 1,
  idleTimeoutSeconds: 1,
};

export const MAX_WORKSPACE_PATH = 4096;

export function defaultLimits(config: SandboxBrokerConfig): Limits {
  return {
    cpuMillis: config.defaultCpuMillis,
    memoryBytes: config.defaultMemoryBytes,
    diskBytes: config.defaultDiskBytes,
    maxProcesses: config.defaultMaxProcesses,
    lifetimeSeconds: config.defaultLifetimeSeconds,
    idleTimeoutSeconds: config.defaultIdleTimeoutSeconds,
  };
}

function maximums(config: SandboxBrokerConfig): Limits {
  return {
    cpuMillis: config.maxCpuMillis,
    memoryBytes: config.maxMemoryBytes,
    diskBytes: config.maxDiskBytes,
    maxProcesses: config.maxMaxProcesses,
    lifetimeSeconds: config.maxLifetimeSeconds,
    idleTimeoutSeconds: config.maxIdleTimeoutSeconds,
  };
}

/** Checks `requested` against the bounds; throws one INVALID_ARGUMENT listing every bad field. */
export function resolveSpec(
  requested: Resources | undefined,
  config: SandboxBrokerConfig,
  prefix = "resources",
): SandboxSpec {
  const defaults = defaultLimits(config);
  const max = maximums(config);
  const problems: Array<{ field: string; message: string }> = [];
  const limits: Record<LimitKey, number> = { ...defaults };
  for (const { key, field, unit } of FIELDS) {
    const value = requested?.[key] ?? 0;
    if (value === 0) continue;
    if (value < MINIMUMS[key] || value > max[key]) {
      problems.push({
        field: `${prefix}.${field}`,
        message: `${value} is out of bounds (allowed ${MINIMUMS[key]}..${max[key]} ${unit}; 0 for the default ${defaults[key]})`,
      });
    }
    limits[key] = value;
  }
  const files = (requested?.files ?? []).map((file, i) => {
    const path = workspacePath(file.path);
    if (typeof path !== "string") problems.push({ field: `${prefix}.files[${i}].path`, message: path.problem });
    if (file.mode > 0o7777) problems.push({ field: `${prefix}.files[${i}].mode`, message: "must be at most 0o7777" });
    return { ...file, path: typeof path === "string" ? path : file.path };
  });
  const fileBytes = files.reduce((sum, f) => sum + f.content.length, 0);
  if (fileBytes > limits.diskBytes) {
    problems.push({ field: `${prefix}.files`, message: `${fileBytes} bytes do not fit in disk_bytes ${limits.diskBytes}` });
  }
  const first = problems[0];
  if (first !== undefined) {
    throw new MhError("INVALID_ARGUMENT", problems.map((p) => `${p.field}: ${p.message}`).join("; "), {
      field: first.field,
      details: { fields: problems.map((p) => p.field).join(",") },
    });
  }
  checkNetwork(requested, prefix);
  if ((requested?.repositories.length ?? 0) > 0) {
    // Cloning needs the session's git credentials, which only the credential vault proxy may
    // hold: the clone will run inside the sandbox through the egress proxy (credential issue).
    throw new MhError("UNIMPLEMENTED", `${prefix}.repositories: git repositories are not supported yet`, {
      field: `${prefix}.repositories`,
    });
  }
  return {
    limits,
    files,
    resources: {
      ...limits,
      network: { mode: NetworkMode.NETWORK_MODE_NONE, allowedHosts: [] },
      files: files.map((f) => ({ path: f.path, mode: f.mode, content: Buffer.alloc(0) })),
      repositories: [],
    },
  };
}

function checkNetwork(requested: Resources | undefined, prefix: string): void {
  const mode = requested?.network?.mode ?? NetworkMode.NETWORK_MODE_UNSPECIFIED;
  if (mode === NetworkMode.NETWORK_MODE_ALLOWLIST) {
    // An allowlist goes through the egress proxy that injects credentials (credential issue).
    throw new MhError("FAILED_PRECONDITION", `${prefix}.network.mode: ALLOWLIST is not yet supported`, {
      field: `${prefix}.network.mode`,
    });
  }
  if (mode !== NetworkMode.NETWORK_MODE_NONE && mode !== NetworkMode.NETWORK_MODE_UNSPECIFIED) {
    throw new MhError("INVALID_ARGUMENT", `${prefix}.network.mode: unknown mode ${String(mode)}`, {
      field: `${prefix}.network.mode`,
    });
  }
}

/** A relative path that stays inside the workspace once normalised, or why not. */
export function workspacePath(raw: string): string | { problem: string } {
  if (raw === "") return { problem: "is empty" };
  if (raw.length > MAX_WORKSPACE_PATH) return { problem: `is longer than ${MAX_WORKSPACE_PATH} characters` };
  if (raw.includes("\0")) return { problem: "contains a NUL byte" };
  if (raw.startsWith("/")) return { problem: "must be relative to the workspace" };
  const normal = posix.normalize(raw);
  if (normal === "." || normal.endsWith("/")) return { problem: "names a directory, not a file" };
  if (normal === ".." || normal.startsWith("../")) return { problem: "leaves the workspace" };
  return normal;
}

/**
 * Whether a sandbox with these limits can come from the warm pool: pooled ones start with the
 * default cgroup and tmpfs limits; lifetime and idle timeout are the broker's clocks, set when
 * a pooled sandbox is handed out.
 */
export function fitsWarmPool(limits: Limits, config: SandboxBrokerConfig): boolean {
  const d = defaultLimits(config);
  return (
    limits.cpuMillis === d.cpuMillis &&
    limits.memoryBytes === d.memoryBytes &&
    limits.diskBytes === d.diskBytes &&
    limits.maxProcesses === d.maxProcesses
  );
}
