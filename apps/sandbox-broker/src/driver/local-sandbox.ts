/**
 * One bubblewrap sandbox: its process, its pipe to the agent, its cgroups, and the one fact that
 * matters most about it, whether it is still there. If the process dies for any reason other
 * than our own stop() (killed, out of memory, the agent broke or went silent), every call in
 * flight and every later call fails with "sandbox <id> was lost: <why>", and `lost` says why.
 */
import type { Logger } from "@metaharness/service-kit/logging";
import { MhError } from "@metaharness/errors";
import type { WorkspaceFile } from "@metaharness/proto";
import type { Limits } from "../resources.js";
import type { RuntimeCall, SandboxRuntime } from "../runtime.js";
import { AgentChannel, SandboxGoneError } from "../protocol/agent-channel.js";
import type { FileResult, GetRequest, PutRequest, RunRequest, WriteResult } from "../protocol/frames.js";
import { runTool } from "../tools/index.js";
import { mib, signalName } from "../tools/output.js";
import type { RunOutcome, SandboxOps, ToolOutcome } from "../tools/types.js";
import { Semaphore } from "../util/semaphore.js";
import type { PeerGuard } from "../auth/peer-credentials.js";
import { SANDBOX_ENV, WORKSPACE } from "../inside/view.js";
import type { Launched, Launcher } from "./launcher.js";
import type { LayerMount } from "../layers/mount.js";

export const BUBBLEWRAP_DRIVER = "bubblewrap";

export interface LocalSandboxOptions {
  readonly id: string;
  readonly limits: Limits;
  readonly launcher: Launcher;
  readonly logger: Logger;
  readonly startTimeoutMs: number;
  readonly maxConcurrentCalls: number;
  readonly maxTimeoutMs: number;
  readonly outputCapBytes: number;
  readonly maxFileBytes: number;
  /** The environment's package layer, if it has packages. */
  readonly layer?: LayerMount;
}

export class LocalSandbox implements SandboxRuntime, SandboxOps {
  readonly driver = BUBBLEWRAP_DRIVER;
  readonly lost: Promise<string>;
  private readonly channel: AgentChannel;
  private readonly semaphore: Semaphore;
  private readonly closed: Promise<void>;
  private resolveLost!: (reason: string) => void;
  private stopping: string | undefined;
  private faultReason: string | undefined;
  private dead = false;
  /** OOM kills already accounted for (by a call's result, or before a call started). */
  private oomSeen = 0;
  /** What tools' commands run with; Provision adds to it (HTTP_PROXY for ALLOWLIST egress). */
  private toolEnv: readonly string[] = SANDBOX_ENV;

  private constructor(
    private readonly opts: LocalSandboxOptions,
    private readonly launched: Launched,
  ) {
    this.semaphore = new Semaphore(opts.maxConcurrentCalls);
    this.lost = new Promise((resolve) => (this.resolveLost = resolve));
    const { child } = launched;
    this.channel = new AgentChannel({
      stdin: child.stdin,
      stdout: child.stdout,
      onFault: (reason) => void this.fail(reason),
    });
    // A spawn that fails (no /bin/sh) emits "error", then "close": the reason is kept for it.
    child.once("error", (err: Error) => this.fail(`its process could not run: ${err.message}`));
    this.closed = new Promise((resolve) => {
      child.once("close", (code: number | null, signal: NodeJS.Signals | null) => {
        void this.onExit(code, signal).finally(resolve);
      });
    });
  }

  /** Starts the process and waits for the agent's hello; throws UNAVAILABLE if it cannot start. */
  static async start(opts: LocalSandboxOptions): Promise<LocalSandbox> {
    const launched = await opts.launcher.launch(opts.id, opts.limits, opts.layer);
    const sandbox = new LocalSandbox(opts, launched);
    if (opts.layer !== undefined) sandbox.addToolEnv(opts.layer.env);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sandbox.channel.ready,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no hello within ${opts.startTimeoutMs} ms`)), opts.startTimeoutMs);
        }),
      ]);
      return sandbox;
    } catch (err) {
      await sandbox.stop("it failed to start");
      const why = launched.stderr() || (err instanceof Error ? err.message : String(err));
      throw new MhError("UNAVAILABLE", `sandbox ${opts.id} could not start: ${why}`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  get limits(): string {
    return this.opts.launcher.limitsDescription;
  }

  get pid(): number | undefined {
    return this.launched.child.pid;
  }

  /** Adds variables to what tools' commands run with (never a secret: the sandbox reads them). */
  addToolEnv(vars: readonly string[]): void {
    this.toolEnv = [...this.toolEnv, ...vars];
  }

  /** Its run directory on the host (the sandbox's /run/metaharness), for the broker's sockets. */
  get runDir(): string {
    return this.launched.runDir;
  }

  /** Who may connect to the broker's sockets for it: its own host uid. */
  get socketGuard(): PeerGuard | undefined {
    return this.launched.guard;
  }

  get inFlight(): number {
    return this.semaphore.busy;
  }

  execute(call: RuntimeCall): Promise<ToolOutcome> {
    const { name, input, timeoutMs, signal } = call;
    return this.semaphore.run(() =>
      runTool(name, input, {
        ops: this,
        timeoutMs,
        maxTimeoutMs: this.opts.maxTimeoutMs,
        outputCapBytes: this.opts.outputCapBytes,
        maxFileBytes: this.opts.maxFileBytes,
        memoryBytes: this.opts.limits.memoryBytes,
        env: this.toolEnv,
        ...(signal === undefined ? {} : { signal }),
      }),
    );
  }

  /** Writes Provision's files into the workspace; throws INVALID_ARGUMENT naming the file. */
  async writeFiles(files: readonly WorkspaceFile[]): Promise<void> {
    const results = await Promise.all(
      files.map((f) => this.channel.put({ path: `${WORKSPACE}/${f.path}`, mode: f.mode, content: f.content })),
    );
    results.forEach((r, i) => {
      if (!r.ok) throw new MhError("INVALID_ARGUMENT", `resources.files[${i}]: ${r.error}`, { field: `resources.files[${i}]` });
    });
  }

  async run(req: RunRequest, signal?: AbortSignal): Promise<RunOutcome> {
    const before = await this.oomKills();
    const result = await this.channel.run(req, signal);
    const after = await this.oomKills();
    this.oomSeen = Math.max(this.oomSeen, after);
    return { ...result, oomKilled: after > before };
  }

  get(req: GetRequest): Promise<FileResult> {
    return this.channel.get(req);
  }

  put(req: PutRequest): Promise<WriteResult> {
    return this.channel.put(req);
  }

  async stop(reason: string): Promise<void> {
    if (!this.dead && this.stopping === undefined) {
      this.stopping = reason;
      this.channel.close(`sandbox ${this.opts.id} was released: ${reason}`);
      this.launched.child.kill("SIGKILL");
    }
    await this.closed;
  }

  private async oomKills(): Promise<number> {
    return (await this.launched.cgroup?.oomKills()) ?? 0;
  }

  /** The agent misbehaved: kill the sandbox; its exit then reports `reason` as why it was lost. */
  private fail(reason: string): void {
    if (this.dead || this.stopping !== undefined) return;
    this.faultReason ??= reason;
    this.launched.child.kill("SIGKILL");
  }

  private async onExit(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    this.dead = true;
    if (this.stopping === undefined) {
      const oomKilled = (await this.oomKills()) > this.oomSeen;
      const reason = this.faultReason ?? this.exitReason(code, signal, oomKilled);
      // First fail the calls (so none waits on a dead pipe), then clean up.
      this.channel.close(`sandbox ${this.opts.id} was lost: ${reason}`);
      this.opts.logger.warn({ sandbox_id: this.opts.id, reason, code, signal }, "sandbox lost");
      this.resolveLost(reason);
    }
    // Its pid namespace is empty by now: its cgroups, run directory and host uid can go.
    await this.launched.cleanup();
  }

  private exitReason(code: number | null, signal: NodeJS.Signals | null, oomKilled: boolean): string {
    if (oomKilled) return `out of memory (its limit is ${mib(this.opts.limits.memoryBytes)})`;
    if (signal !== null) return `killed by signal ${signal}`;
    // bwrap reports a sandboxed process killed by signal N as exit code 128 + N.
    if (code !== null && code > 128 && code < 160) return `killed by signal ${signalName(code - 128)}`;
    const stderr = this.launched.stderr();
    return `its process exited with code ${code ?? "?"}${stderr === "" ? "" : ` (${stderr})`}`;
  }
}

export { SandboxGoneError };
