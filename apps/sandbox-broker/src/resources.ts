/**
 * A Provision request's resources, checked and completed: zero means the broker's default, a
 * value outside the configured bounds is an INVALID_ARGUMENT naming every field at fault (one
 * round to fix them all), and workspace paths must stay inside the workspace.
 */
import { FieldList, MhError } from "@metaharness/errors";
import { NetworkMode, type GitRepository, type NetworkPolicy, type PackageLists, type Resources, type WorkspaceFile } from "@metaharness/proto";
import { hasPackages, isCheckoutName, normalizeRepositoryUrl, repositoryMountPath, workspacePath } from "@metaharness/events";
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
  /** Git repositories to clone through the credential proxy (mount paths normalised). */
  readonly repositories: readonly GitRepository[];
  /** What its egress may reach (ALLOWLIST or UNRESTRICTED); undefined: no network at all. */
  readonly egress: EgressScope | undefined;
  /** The environment's packages (their layer is mounted); undefined when none. */
  readonly packages: PackageLists | undefined;
  /** The resources as they are recorded and described: defaults filled in, file contents left out. */
  readonly resources: Resources;
}

/** A sandbox's egress, as the credential proxy's OpenEgress takes it. */
export interface EgressScope {
  /** Host names or *.domain patterns (lower-case); empty with unrestricted. */
  readonly allowedHosts: readonly string[];
  readonly allowPackageManagers: boolean;
  readonly unrestricted: boolean;
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
  const egress = checkNetwork(requested, prefix, problems);
  const repositories = checkRepositories(requested?.repositories ?? [], prefix, problems);
  const first = problems[0];
  if (first !== undefined) {
    throw new MhError("INVALID_ARGUMENT", problems.map((p) => `${p.field}: ${p.message}`).join("; "), {
      field: first.field,
      details: FieldList.of({ fields: problems.map((p) => p.field).join(",") }),
    });
  }
  return {
    limits,
    files,
    repositories,
    egress,
    packages: hasPackages(requested?.packages) ? requested?.packages : undefined,
    resources: {
      ...limits,
      network: networkOf(egress),
      files: files.map((f) => ({ path: f.path, mode: f.mode, content: Buffer.alloc(0) })),
      repositories: [...repositories],
      packages: hasPackages(requested?.packages) ? requested?.packages : undefined,
    },
  };
}

type Problems = Array<{ field: string; message: string }>;

/** As many as a session may have (session-log store/repositories.ts). */
export const MAX_REPOSITORIES = 64;
export const MAX_ALLOWED_HOSTS = 64;
const HOST_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9.-]{0,252})(:\d{1,5})?$/;

/** The egress a Provision asks for: undefined for NETWORK_MODE_NONE. */
function checkNetwork(requested: Resources | undefined, prefix: string, problems: Problems): EgressScope | undefined {
  const mode = requested?.network?.mode ?? NetworkMode.NETWORK_MODE_UNSPECIFIED;
  const field = `${prefix}.network`;
  if (mode === NetworkMode.NETWORK_MODE_NONE || mode === NetworkMode.NETWORK_MODE_UNSPECIFIED) return undefined;
  const hosts = (requested?.network?.allowedHosts ?? []).map((h) => h.trim().toLowerCase());
  const allowPackageManagers = requested?.network?.allowPackageManagers ?? false;
  if (mode === NetworkMode.NETWORK_MODE_UNRESTRICTED) {
    if (hosts.length > 0) problems.push({ field: `${field}.allowed_hosts`, message: "must be empty with UNRESTRICTED (which reaches every public host)" });
    return { allowedHosts: [], allowPackageManagers: false, unrestricted: true };
  }
  if (mode !== NetworkMode.NETWORK_MODE_ALLOWLIST) {
    problems.push({ field: `${field}.mode`, message: `unknown mode ${String(mode)}` });
    return undefined;
  }
  if (hosts.length > MAX_ALLOWED_HOSTS || (hosts.length === 0 && !allowPackageManagers)) {
    problems.push({ field: `${field}.allowed_hosts`, message: `ALLOWLIST needs 1 to ${MAX_ALLOWED_HOSTS} hosts (0 with allow_package_managers)` });
  }
  hosts.forEach((h, i) => {
    if (!HOST_PATTERN.test(h)) problems.push({ field: `${field}.allowed_hosts[${i}]`, message: "is not a host name or *.domain pattern" });
  });
  return { allowedHosts: hosts, allowPackageManagers, unrestricted: false };
}

/** The NetworkPolicy a sandbox is recorded and described with. */
function networkOf(egress: EgressScope | undefined): NetworkPolicy {
  if (egress === undefined) return { mode: NetworkMode.NETWORK_MODE_NONE, allowedHosts: [], allowPackageManagers: false };
  const mode = egress.unrestricted ? NetworkMode.NETWORK_MODE_UNRESTRICTED : NetworkMode.NETWORK_MODE_ALLOWLIST;
  return { mode, allowedHosts: [...egress.allowedHosts], allowPackageManagers: egress.allowPackageManagers };
}

/** checkRepositories for AddRepositories (fields "repositories[i]..."): INVALID_ARGUMENT naming the first bad one. */
export function resolveRepositories(requested: readonly GitRepository[]): GitRepository[] {
  const problems: Problems = [];
  const repositories = checkRepositories(requested, "", problems);
  for (const p of problems) p.field = p.field.replace(/^\./, "");
  const first = problems[0];
  if (first !== undefined) {
    throw new MhError("INVALID_ARGUMENT", problems.map((p) => `${p.field}: ${p.message}`).join("; "), { field: first.field });
  }
  return repositories;
}

/** Repositories with their URL checked, mount path normalised (default: the URL's last segment). */
function checkRepositories(requested: readonly GitRepository[], prefix: string, problems: Problems): GitRepository[] {
  if (requested.length > MAX_REPOSITORIES) {
    problems.push({ field: `${prefix}.repositories`, message: `at most ${MAX_REPOSITORIES} repositories` });
  }
  const seen = new Set<string>();
  return requested.map((repo, i) => {
    const field = `${prefix}.repositories[${i}]`;
    const url = normalizeRepositoryUrl(repo.url);
    if (url === undefined) problems.push({ field: `${field}.url`, message: "must be an http or https URL without user info" });
    const name = (url ?? repo.url).split("/").pop()?.replace(/\.git$/, "") ?? "";
    const path = repositoryMountPath(repo.mountPath === "" ? name : repo.mountPath);
    if (typeof path !== "string") problems.push({ field: `${field}.mount_path`, message: path.problem });
    else if (seen.has(path)) problems.push({ field: `${field}.mount_path`, message: `${path} is used twice` });
    else seen.add(path);
    if (repo.checkout !== "" && !isCheckoutName(repo.checkout)) {
      problems.push({ field: `${field}.checkout`, message: "is not a branch, tag or commit name" });
    }
    return { url: repo.url, mountPath: typeof path === "string" ? path : repo.mountPath, checkout: repo.checkout };
  });
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
