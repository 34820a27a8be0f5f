/**
 * The hands, as the harness sees them: `execute(name, input) -> string` through the sandbox broker.
 * A session's sandbox is provisioned lazily, on its first sandbox tool call, never before the
 * first model call; the model can provision more ("many hands") and name one per call. Every
 * sandbox gets the network of the session's environment (tools/environment.ts) and clones the
 * session's repositories as they are when it is provisioned (one that does not clone is left out,
 * and the broker reports it to the session as a repository_*_error). A dead sandbox, or one that
 * could not be provisioned (a network the broker cannot give), is a tool error the model sees; the
 * next call provisions a fresh one.
 */
import { MhError } from "@metaharness/errors";
import {
  SandboxState,
  type GitRepository,
  type NetworkPolicy,
  type Resources,
  type SandboxBrokerService,
  type SessionRepository,
} from "@metaharness/proto";
import type { PromiseClient } from "@metaharness/service-kit";

export type BrokerClient = PromiseClient<typeof SandboxBrokerService>;

export interface SandboxSetup {
  /** The environment's network; throws when the environment asks for one the broker cannot give. */
  network(): NetworkPolicy | undefined;
  /** The session's repositories as they are now: they may be added or removed while it runs. */
  repositories(): Promise<GitRepository[]>;
}

const NO_SETUP: SandboxSetup = { network: () => undefined, repositories: () => Promise.resolve([]) };

/** The session's repositories as the broker clones them. */
export function brokerRepositories(repositories: readonly SessionRepository[]): GitRepository[] {
  return repositories.map((r) => ({ url: r.url, mountPath: r.mountPath, checkout: r.checkout }));
}

export interface ToolOutcome {
  readonly output: string;
  readonly isError: boolean;
}

export class SandboxPort {
  private defaultSandbox: string | undefined;

  constructor(
    private readonly broker: BrokerClient,
    private readonly sessionId: string,
    /** What every sandbox of the session is provisioned with, read at each provisioning. */
    private readonly setup: SandboxSetup = NO_SETUP,
  ) {}

  async provision(resources: Partial<Resources>): Promise<string> {
    const { sandbox } = await this.broker.provision({
      sessionId: this.sessionId,
      handKind: "",
      resources: {
        cpuMillis: resources.cpuMillis ?? 0,
        memoryBytes: resources.memoryBytes ?? 0,
        diskBytes: 0,
        maxProcesses: 0,
        lifetimeSeconds: resources.lifetimeSeconds ?? 0,
        idleTimeoutSeconds: 0,
        network: this.setup.network(),
        files: [],
        repositories: await this.setup.repositories(),
      },
    });
    if (sandbox === undefined) throw new MhError("INTERNAL", "Provision returned no sandbox");
    return sandbox.sandboxId;
  }

  /**
   * Provisions the default sandbox now. Only the coupled baseline does this (MH_EAGER_SANDBOX, for
   * benchmarks): it makes the first model call wait for a container, as the old design did.
   */
  async warm(): Promise<void> {
    await this.resolveDefault();
  }

  /** The session's default sandbox: its oldest ready one, or a new one. */
  private async resolveDefault(): Promise<string> {
    if (this.defaultSandbox !== undefined) return this.defaultSandbox;
    const { sandboxes } = await this.broker.listSandboxes({ sessionId: this.sessionId, includeEnded: false });
    const ready = sandboxes.find((s) => s.state === SandboxState.SANDBOX_STATE_READY);
    this.defaultSandbox = ready?.sandboxId ?? (await this.provision({}));
    return this.defaultSandbox;
  }

  async execute(name: string, input: Record<string, unknown>, callId: string, signal: AbortSignal): Promise<ToolOutcome> {
    if (name === "provision") {
      const memoryMb = typeof input["memory_mb"] === "number" ? input["memory_mb"] : undefined;
      const id = await this.provision({
        ...(memoryMb === undefined ? {} : { memoryBytes: memoryMb * 1024 * 1024 }),
        ...(typeof input["cpu_millis"] === "number" ? { cpuMillis: input["cpu_millis"] } : {}),
        ...(typeof input["lifetime_seconds"] === "number" ? { lifetimeSeconds: input["lifetime_seconds"] } : {}),
      });
      return { output: `provisioned sandbox_id: ${id}`, isError: false };
    }
    const named = typeof input["sandbox_id"] === "string" && input["sandbox_id"] !== "" ? input["sandbox_id"] : undefined;
    const { sandbox_id: _omit, ...toolInput } = input;
    try {
      const sandboxId = named ?? (await this.resolveDefault());
      const res = await this.broker.execute(
        { sandboxId, name, input: toolInput, callId, sessionId: this.sessionId, timeoutMs: 0 },
        { signal, deadlineMs: 30 * 60_000 },
      );
      // A lost sandbox answers is_error; forget it so the next call gets a fresh one.
      if (res.isError && /\blost\b/i.test(res.output) && named === undefined) this.defaultSandbox = undefined;
      return { output: res.output, isError: res.isError };
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "CANCELLED") throw e;
      if (e.code === "NOT_FOUND" && named === undefined) this.defaultSandbox = undefined;
      return { output: `sandbox error (${e.code}): ${e.message}`, isError: true };
    }
  }
}
