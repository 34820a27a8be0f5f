/**
 * The hands, as the harness sees them: `execute(name, input) -> string` through the sandbox broker.
 * A session's sandbox is provisioned lazily, on its first sandbox tool call, never before the
 * first model call; the model can provision more ("many hands") and name one per call. Every
 * sandbox gets the network of the session's environment (tools/environment.ts) and clones the
 * session's repositories (one that does not clone is left out, and the broker reports it to the
 * session as a repository_*_error); before each call, repositories added to the session since
 * are cloned into the sandbox that runs it (AddRepositories). A dead sandbox, or one that
 * could not be provisioned (a network the broker cannot give), is a tool error the model sees; the
 * next call provisions a fresh one. A broker that is not there (UNAVAILABLE: restarting) is asked
 * again for BROKER_RETRY_MS before that becomes a tool error.
 */
import { MhError, retry, retryPolicy, type RetryPolicy } from "@metaharness/errors";
import { mountPathKey as mountKey } from "@metaharness/events";
import {
  SandboxState,
  externalDriver,
  isExternalDriver,
  type GitRepository,
  type HandTool,
  type NetworkPolicy,
  type PackageLists,
  type Resources,
  type SandboxBrokerService,
  type SessionRepository,
  type WorkspaceFork,
} from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit/grpc";

export type BrokerClient = PromiseClient<typeof SandboxBrokerService>;

export interface SandboxSetup {
  /** The environment's network; throws when the environment asks for one the broker cannot give. */
  network(): NetworkPolicy | undefined;
  /** The session's repositories as they are now: they may be added or removed while it runs. */
  repositories(): Promise<GitRepository[]>;
  /** The environment's packages, whose layer the broker mounts (building it first if it must). */
  packages?(): PackageLists | undefined;
  /** The workspace every sandbox of a forked session starts from (SessionMetadata.workspace_fork). */
  fork?(): WorkspaceFork | undefined;
}

/** A sandbox call (a tool, or cloning repositories for one) may run this long. */
const CALL_DEADLINE_MS = 30 * 60_000;

/**
 * How long a broker that does not answer (UNAVAILABLE, as while it restarts) is asked again before
 * the call is a tool error. Safe to repeat: execute is idempotent by call id (the broker's call
 * ledger), listing reads, and a sandbox provisioned by a broker that then went away is lost with
 * it (a restarted broker marks its sandboxes lost), so the repeat makes the one the session uses.
 */
export const BROKER_RETRY_MS = 20_000;

const BROKER_POLICY = retryPolicy({ initialIntervalMs: 100, maxIntervalMs: 2_000, maxAttempts: Number.POSITIVE_INFINITY, retryableCodes: new Set(["UNAVAILABLE"]) });

/** ProvisionRequest.key of the session's default sandbox, and the prefix of its sandbox on a hand kind. */
const DEFAULT_KEY = "default";
const HAND_KEY = "hand:";

const NO_SETUP: SandboxSetup = { network: () => undefined, repositories: () => Promise.resolve([]) };

/** The session's repositories as the broker clones them. */
export function brokerRepositories(repositories: readonly SessionRepository[]): GitRepository[] {
  return repositories.map((r) => ({ url: r.url, mountPath: r.mountPath, checkout: r.checkout }));
}

export interface ToolOutcome {
  readonly output: string;
  readonly isError: boolean;
  /** How the command ended, for a tool that runs one (bash); kept in agent.tool_result. */
  readonly exitCode?: number;
}

export class SandboxPort {
  private defaultSandbox: string | undefined;
  /** Per hand kind, the session's sandbox on a hand of that kind. */
  private readonly handSandboxes = new Map<string, string>();
  /** Per sandbox, the session's repositories it was last given (see syncRepositories). */
  private readonly given = new Map<string, string>();
  /** Per sandbox, the mount paths whose repository failed there and that the broker will try again. */
  private readonly failing = new Map<string, Set<string>>();
  private readonly retryPolicy: RetryPolicy;

  constructor(
    private readonly broker: BrokerClient,
    private readonly sessionId: string,
    /** What every sandbox of the session is provisioned with, read at each provisioning. */
    private readonly setup: SandboxSetup = NO_SETUP,
    brokerRetryMs = BROKER_RETRY_MS,
  ) {
    this.retryPolicy = retryPolicy({ ...BROKER_POLICY, maxElapsedMs: brokerRetryMs });
  }

  /** A broker call, asked again while the broker is unavailable (BROKER_RETRY_MS). */
  private call<T>(fn: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    return retry(this.retryPolicy, fn, signal === undefined ? {} : { signal });
  }

  /**
   * A sandbox of the session under `key` (ProvisionRequest.key): the ready one holding it, or a new
   * one. Two harnesses that both saw none (one of them late, its lease already taken over) get the
   * same sandbox, so the session's calls stay in one workspace.
   */
  async provision(key: string, resources: Partial<Resources>, signal?: AbortSignal, handKind = ""): Promise<string> {
    const repositories = handKind === "" ? await this.setup.repositories() : [];
    // Waits for the environment's package layer if it is still building: the deadline is a tool call's.
    const request = {
      sessionId: this.sessionId,
      key,
      handKind,
      resources: handKind !== "" ? undefined : {
        cpuMillis: resources.cpuMillis ?? 0,
        memoryBytes: resources.memoryBytes ?? 0,
        diskBytes: 0,
        maxProcesses: 0,
        lifetimeSeconds: resources.lifetimeSeconds ?? 0,
        idleTimeoutSeconds: 0,
        network: this.setup.network(),
        files: [],
        repositories,
        packages: this.setup.packages?.(),
      },
      fork: handKind === "" ? this.setup.fork?.() : undefined,
    };
    const { sandbox, repositoryFailures } = await this.call(
      () => this.broker.provision(request, { deadlineMs: CALL_DEADLINE_MS, ...(signal === undefined ? {} : { signal }) }),
      signal,
    );
    if (sandbox === undefined) throw new MhError("INTERNAL", "Provision returned no sandbox");
    this.given.set(sandbox.sandboxId, repositoriesKey(repositories));
    if (repositoryFailures.length > 0) this.failing.set(sandbox.sandboxId, new Set(repositoryFailures.map((f) => mountKey(f.mountPath))));
    return sandbox.sandboxId;
  }

  /**
   * Gives a running sandbox the repositories added to the session since it was last given them
   * (the broker clones only those it has not tried, by mount path), and another chance to those
   * that failed there (the broker tries them again once MH_REPOSITORY_RETRY_MS has passed). One
   * GetSession per call; the broker is asked only when the list changed or a listed repository is
   * missing from the sandbox. Best effort: a clone that fails is reported to the session by the
   * broker; if the call itself fails the tool still runs, and the next call asks again. Clones can
   * take minutes, so the deadline is the tool call's own.
   */
  private async syncRepositories(sandboxId: string, signal: AbortSignal): Promise<void> {
    const repositories = await this.setup.repositories();
    const key = repositoriesKey(repositories);
    // The broker reports mount paths normalised ("app/" as "app"): compare them so.
    const listed = new Set(repositories.map((r) => mountKey(r.mountPath)));
    const failing = [...(this.failing.get(sandboxId) ?? [])].filter((m) => listed.has(mountKey(m)));
    if (this.given.get(sandboxId) === key && failing.length === 0) return;
    const still = new Set(failing.map(mountKey));
    if (repositories.length > 0) {
      try {
        const res = await this.broker.addRepositories({ sandboxId, sessionId: this.sessionId, repositories }, { signal, deadlineMs: CALL_DEADLINE_MS });
        for (const r of res.added) still.delete(mountKey(r.mountPath));
        for (const f of res.repositoryFailures) still.add(mountKey(f.mountPath));
      } catch (err) {
        if (MhError.from(err).code === "CANCELLED") throw err;
        return;
      }
    }
    this.given.set(sandboxId, key);
    if (still.size > 0) this.failing.set(sandboxId, still);
    else this.failing.delete(sandboxId);
  }

  /**
   * Provisions the default sandbox now, the way the first tool call would (package layer,
   * repositories, the sandbox's agent process). Only the coupled configuration does this
   * (MH_EAGER_SANDBOX, for benchmarks): it makes the first model call wait for the whole
   * environment, as a container-per-session design does.
   */
  async warm(): Promise<void> {
    await this.resolveDefault();
  }

  /**
   * Forgets which sandboxes are the session's, so that the next call asks the broker again, as a
   * port made for a fresh wake does: for a loop that kept the session past a turn (a sandbox may
   * have been transferred to it or away meanwhile).
   */
  forget(): void {
    this.defaultSandbox = undefined;
    this.handSandboxes.clear();
  }

  /** The session's default sandbox: its oldest ready one, or a new one. */
  private async resolveDefault(signal?: AbortSignal): Promise<string> {
    if (this.defaultSandbox !== undefined) return this.defaultSandbox;
    const { sandboxes } = await this.call(() => this.broker.listSandboxes({ sessionId: this.sessionId, includeEnded: false }), signal);
    const ready = sandboxes.find((s) => s.state === SandboxState.SANDBOX_STATE_READY && !isExternalDriver(s.driver));
    this.defaultSandbox = ready?.sandboxId ?? (await this.provision(DEFAULT_KEY, {}, signal));
    return this.defaultSandbox;
  }

  /** The tools the connected hands of `kind` offer (SandboxBroker.ListHandTools). */
  async handTools(kind: string, signal?: AbortSignal): Promise<HandTool[]> {
    return (await this.call(() => this.broker.listHandTools({ kind }, signal === undefined ? {} : { signal }), signal)).tools;
  }

  /** The session's sandbox on a hand of `kind`: its oldest ready one, or a new one. */
  private async resolveHand(kind: string, signal: AbortSignal): Promise<string> {
    const known = this.handSandboxes.get(kind);
    if (known !== undefined) return known;
    const { sandboxes } = await this.call(() => this.broker.listSandboxes({ sessionId: this.sessionId, includeEnded: false }), signal);
    const ready = sandboxes.find((s) => s.state === SandboxState.SANDBOX_STATE_READY && s.driver === externalDriver(kind));
    const id = ready?.sandboxId ?? (await this.provision(`${HAND_KEY}${kind}`, {}, signal, kind));
    this.handSandboxes.set(kind, id);
    return id;
  }

  /** Runs a hand's own tool on the session's sandbox of that hand kind, provisioned at the first call. */
  async executeOnHand(kind: string, name: string, input: Record<string, unknown>, callId: string, signal: AbortSignal, eventSeq = 0): Promise<ToolOutcome> {
    try {
      const sandboxId = await this.resolveHand(kind, signal);
      const res = await this.call(
        () => this.broker.execute({ sandboxId, name, input, callId, sessionId: this.sessionId, timeoutMs: 0, eventSeq }, { signal, deadlineMs: CALL_DEADLINE_MS }),
        signal,
      );
      // A lost hand sandbox answers is_error; the next call binds a hand of the kind anew.
      if (res.isError && /\blost\b/i.test(res.output)) this.handSandboxes.delete(kind);
      return { output: res.output, isError: res.isError };
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "CANCELLED") throw e;
      if (e.code === "NOT_FOUND") this.handSandboxes.delete(kind);
      return { output: `hand error (${e.code}): ${e.message}`, isError: true };
    }
  }

  /**
   * Runs a tool; `eventSeq` is its agent.tool_use event's seq (0: unknown), kept with the workspace
   * snapshot after it. The default sandbox handed to another session since (Transfer: the broker
   * refuses it to this one, before running anything) is forgotten and the call runs in a new one,
   * its result saying so: the files went with the sandbox.
   */
  async execute(name: string, input: Record<string, unknown>, callId: string, signal: AbortSignal, eventSeq = 0): Promise<ToolOutcome> {
    const { handedOver, ...outcome } = await this.executeOnce(name, input, callId, signal, eventSeq);
    const gone = this.defaultSandbox;
    if (handedOver !== true || gone === undefined) return outcome;
    this.defaultSandbox = undefined;
    const { handedOver: _again, ...again } = await this.executeOnce(name, input, callId, signal, eventSeq);
    return { ...again, output: `[sandbox ${gone} was handed to another session, with its files; this call ran in a new sandbox]\n${again.output}` };
  }

  private async executeOnce(name: string, input: Record<string, unknown>, callId: string, signal: AbortSignal, eventSeq: number): Promise<ToolOutcome & { handedOver?: boolean }> {
    if (name === "provision") return this.provisionTool(input, callId, signal);
    const named = typeof input["sandbox_id"] === "string" && input["sandbox_id"] !== "" ? input["sandbox_id"] : undefined;
    const { sandbox_id: _omit, ...toolInput } = input;
    try {
      const sandboxId = named ?? (await this.resolveDefault(signal));
      await this.syncRepositories(sandboxId, signal);
      const res = await this.call(
        () => this.broker.execute({ sandboxId, name, input: toolInput, callId, sessionId: this.sessionId, timeoutMs: 0, eventSeq }, { signal, deadlineMs: CALL_DEADLINE_MS }),
        signal,
      );
      // A lost sandbox answers is_error; forget it so the next call gets a fresh one.
      if (res.isError && /\blost\b/i.test(res.output) && named === undefined) this.defaultSandbox = undefined;
      return { output: res.output, isError: res.isError, ...(name === "bash" ? { exitCode: res.exitCode } : {}) };
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "CANCELLED") throw e;
      if (e.code === "NOT_FOUND" && named === undefined) this.defaultSandbox = undefined;
      const handedOver = e.code === "PERMISSION_DENIED" && named === undefined;
      return { output: `sandbox error (${e.code}): ${e.message}`, isError: true, ...(handedOver ? { handedOver } : {}) };
    }
  }

  /**
   * The model's `provision` tool: a sandbox it names in later calls, keyed by the call's tool_use
   * id (a repeat gets the sandbox the first made). A failure is a tool error.
   */
  private async provisionTool(input: Record<string, unknown>, callId: string, signal: AbortSignal): Promise<ToolOutcome> {
    const memoryMb = typeof input["memory_mb"] === "number" ? input["memory_mb"] : undefined;
    try {
      const id = await this.provision(
        callId,
        {
          ...(memoryMb === undefined ? {} : { memoryBytes: memoryMb * 1024 * 1024 }),
          ...(typeof input["cpu_millis"] === "number" ? { cpuMillis: input["cpu_millis"] } : {}),
          ...(typeof input["lifetime_seconds"] === "number" ? { lifetimeSeconds: input["lifetime_seconds"] } : {}),
        },
        signal,
      );
      return { output: `provisioned sandbox_id: ${id}`, isError: false };
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "CANCELLED") throw e;
      return { output: `sandbox error (${e.code}): ${e.message}`, isError: true };
    }
  }
}

/** What identifies a list of repositories for syncRepositories: mount paths, URLs and checkouts. */
function repositoriesKey(repositories: readonly GitRepository[]): string {
  return repositories.map((r) => `${r.mountPath}\u0000${r.url}\u0000${r.checkout}`).join("\n");
}

