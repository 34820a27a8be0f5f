/**
 * Environment package layers: each set of package lists is built once, into a content-addressed
 * read-only directory (key.ts, store.ts) that every sandbox asking for those lists mounts
 * (mount.ts). A build starts when BuildLayer asks (an environment was created or updated) or,
 * failing that, at the first Provision that needs it; Provision waits for it, so a session waits
 * only at its first tool call. One build per layer at a time, at most MH_LAYER_BUILDS_AT_ONCE in
 * all; steps run one manager after another in the build sandbox (build-sandbox.ts), the whole
 * build within MH_LAYER_BUILD_TIMEOUT_MS and MH_LAYER_MAX_BYTES. A failure is kept on disk with
 * the failing manager and its output, and refused at Provision until BuildLayer tries again.
 */
import { existsSync } from "node:fs";
import { mkdir, rmdir, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { FieldList, LayerRef, MhError } from "@metaharness/errors";
import { hasPackages, normalizePackages, packageProblems, PACKAGE_MANAGERS, type PackageManager } from "@metaharness/events";
import { LayerState, type Layer, type PackageLists } from "@metaharness/proto";
import type { Logger } from "@metaharness/service-kit/logging";
import { SANDBOX_GID, SANDBOX_UID } from "../inside/view.js";
import { Semaphore } from "../util/semaphore.js";
import { runStep, treeBytes } from "./build-sandbox.js";
import { baseSystemIdentity, layerId } from "./key.js";
import { ManagerCheck } from "./managers.js";
import { overlay, unmount } from "./mount.js";
import { STEP_ORDER, stepFor } from "./steps.js";
import { LayerStore, type LayerFailure, type LayerInfo } from "./store.js";

export interface LayersOptions {
  readonly dir: string;
  readonly brokerId: string;
  readonly bwrapPath: string;
  readonly buildTimeoutMs: number;
  readonly maxBytes: number;
  readonly buildsAtOnce: number;
  readonly logger: Logger;
}

/** The part of a failure Provision and the API show: the step's last lines. */
const OUTPUT_SHOWN = 4000;

export class Layers {
  private readonly store: LayerStore;
  private readonly identity = baseSystemIdentity();
  private readonly check = new ManagerCheck();
  private readonly building = new Map<string, Promise<void>>();
  private readonly semaphore: Semaphore;
  private readonly stopping = new AbortController();

  /** Our passwd and group for the build sandboxes (open() writes them). */
  private etcDir = "";

  constructor(private readonly opts: LayersOptions) {
    this.store = new LayerStore(opts.dir, opts.brokerId);
    this.semaphore = new Semaphore(opts.buildsAtOnce);
  }

  async open(): Promise<void> {
    await this.store.open();
    const etc = join(this.opts.dir, "staging", `${this.opts.brokerId}-etc`);
    await mkdir(etc, { recursive: true });
    await writeFile(join(etc, "passwd"), `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${SANDBOX_UID}:${SANDBOX_GID}:sandbox:/scratch/home:/bin/sh\n`);
    await writeFile(join(etc, "group"), `root:x:0:\nsandbox:x:${SANDBOX_GID}:\n`);
    this.etcDir = etc;
  }

  /** Checks `lists` (names, and managers this machine can use); throws INVALID_ARGUMENT naming `<prefix>.<manager>...`. */
  async require(lists: PackageLists, prefix: string): Promise<void> {
    const problems = packageProblems(lists).map((p) => ({ field: `${prefix}.${p.field}`, message: p.message }));
    for (const manager of PACKAGE_MANAGERS) {
      if (lists[manager].length === 0) continue;
      const problem = await this.check.problem(manager);
      if (problem !== undefined) problems.push({ field: `${prefix}.${manager}`, message: problem });
    }
    const first = problems[0];
    if (first !== undefined) {
      throw new MhError("INVALID_ARGUMENT", problems.map((p) => `${p.field}: ${p.message}`).join("; "), {
        field: first.field,
        details: FieldList.of({ fields: problems.map((p) => p.field).join(",") }),
      });
    }
  }

  /** The layer's state; starts nothing. */
  async describe(lists: PackageLists): Promise<Layer> {
    const id = layerId(lists, this.identity);
    if (this.building.has(id)) return layer(id, LayerState.LAYER_STATE_BUILDING);
    const info = await this.store.ready(id);
    if (info !== undefined) return { ...layer(id, LayerState.LAYER_STATE_READY), sizeBytes: info.sizeBytes, buildMs: info.buildMs };
    const failure = await this.store.failure(id);
    if (failure !== undefined) return failedLayer(id, failure);
    return layer(id, LayerState.LAYER_STATE_ABSENT);
  }

  /** Starts building unless built or building (a failed one only with `retryFailed`); the state after. */
  async build(lists: PackageLists, retryFailed: boolean): Promise<Layer> {
    await this.require(lists, "packages");
    const id = layerId(lists, this.identity);
    if (retryFailed && !this.building.has(id)) await this.store.clearFailure(id);
    const now = await this.describe(lists);
    if (now.state === LayerState.LAYER_STATE_ABSENT) {
      this.start(id, lists);
      return layer(id, LayerState.LAYER_STATE_BUILDING);
    }
    return now;
  }

  /**
   * The built layer of `lists`, for a sandbox: built first if absent, waited for if building.
   * A failed build is FAILED_PRECONDITION naming `<prefix>.<manager>` with its output.
   */
  async ready(lists: PackageLists, prefix: string, signal?: AbortSignal): Promise<LayerInfo & { path: string }> {
    await this.require(lists, prefix);
    const id = layerId(lists, this.identity);
    for (;;) {
      const state = await this.describe(lists);
      if (state.state === LayerState.LAYER_STATE_READY) {
        const info = await this.store.ready(id);
        if (info !== undefined) return { ...info, path: this.store.path(id) };
      }
      if (state.state === LayerState.LAYER_STATE_FAILED) {
        const field = (PACKAGE_MANAGERS as readonly string[]).includes(state.manager) ? `${prefix}.${state.manager}` : prefix;
        throw new MhError("FAILED_PRECONDITION", `${field}: the environment's packages failed to build: ${state.output}`, { field, details: LayerRef.of({ layer_id: id }) });
      }
      if (state.state === LayerState.LAYER_STATE_ABSENT) this.start(id, lists);
      await waitOrAbort(this.building.get(id), signal);
    }
  }

  /** Where the layer's Debian files are overlaid on /usr (mount.ts). */
  mountPoint(id: string): string {
    return this.store.mountPoint(id);
  }

  /** Cancels the builds under way (their staging is removed at the next start). */
  stop(): Promise<void> {
    this.stopping.abort();
    return Promise.allSettled([...this.building.values()]).then(() => undefined);
  }

  private start(id: string, lists: PackageLists): void {
    if (this.building.has(id)) return;
    const run = this.semaphore.run(() => this.run(id, lists)).finally(() => this.building.delete(id));
    this.building.set(id, run);
  }

  private async run(id: string, lists: PackageLists): Promise<void> {
    const log = this.opts.logger.child({ layer_id: id });
    const started = performance.now();
    const deadline = Date.now() + this.opts.buildTimeoutMs;
    const normal = normalizePackages(lists);
    const staged = await this.store.stage(id);
    const fail = async (manager: string, output: string): Promise<void> => {
      // A build the broker's shutdown cut short did not fail: the next start builds it again.
      if (this.stopping.signal.aborted) return this.store.discard(staged);
      const failure: LayerFailure = { manager, output, buildMs: Math.round(performance.now() - started), failedAt: new Date().toISOString() };
      await this.store.recordFailure(id, failure);
      await this.store.discard(staged);
      log.warn({ manager, output: output.slice(-1000) }, "layer build failed");
    };
    try {
      log.info({ packages: normal }, "building layer");
      const managers: PackageManager[] = [];
      // After apt, the later steps see its packages where they belong (a pip package building
      // against a Debian library): the same overlay of /usr a sandbox gets.
      let usr: string | undefined;
      try {
        for (const manager of STEP_ORDER) {
          if (normal[manager].length === 0) continue;
          const timeoutMs = Math.min(Math.max(1, deadline - Date.now()), this.opts.buildTimeoutMs);
          const limits = { bwrapPath: this.opts.bwrapPath, timeoutMs, maxBytes: this.opts.maxBytes, etcDir: this.etcDir, ...(usr === undefined ? {} : { usr }) };
          const stepStarted = performance.now();
          const outcome = await runStep(stepFor(manager, normal[manager]), staged.layer, staged.scratch, limits, this.stopping.signal);
          log.info({ manager, ok: outcome.ok, duration_ms: Math.round(performance.now() - stepStarted) }, "layer build step ended");
          if (!outcome.ok) {
            const kind = outcome.why.includes("size limit") ? "size" : manager;
            return await fail(kind, `${manager}: ${outcome.why}\n${outcome.output.slice(-OUTPUT_SHOWN)}`);
          }
          managers.push(manager);
          const aptUsr = join(staged.layer, "apt", "usr");
          if (manager === "apt" && existsSync(aptUsr)) {
            // Outside the staging tree, which a failed build removes.
            usr = this.store.mountPoint(`${basename(staged.dir)}-build`);
            await overlay(aptUsr, usr);
          }
        }
      } finally {
        if (usr !== undefined) {
          unmount(usr);
          await rmdir(usr).catch(() => undefined);
        }
      }
      const sizeBytes = await treeBytes(staged.layer);
      if (sizeBytes > this.opts.maxBytes) {
        return await fail("size", `the layer is ${sizeBytes} bytes, over its size limit of ${this.opts.maxBytes} (MH_LAYER_MAX_BYTES)`);
      }
      const buildMs = Math.round(performance.now() - started);
      await this.store.commit(staged, { id, sizeBytes, buildMs, builtAt: new Date().toISOString(), managers });
      log.info({ size_bytes: sizeBytes, build_ms: buildMs }, "layer built");
    } catch (err) {
      await fail("build", `the broker could not build the layer: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

export function wantsLayer(lists: PackageLists | undefined): lists is PackageLists {
  return hasPackages(lists);
}

function layer(id: string, state: LayerState): Layer {
  return { layerId: id, state, manager: "", output: "", sizeBytes: 0, buildMs: 0 };
}

function failedLayer(id: string, failure: LayerFailure): Layer {
  return { ...layer(id, LayerState.LAYER_STATE_FAILED), manager: failure.manager, output: failure.output, buildMs: failure.buildMs };
}

function waitOrAbort(build: Promise<void> | undefined, signal: AbortSignal | undefined): Promise<void> {
  if (build === undefined) return Promise.resolve();
  if (signal === undefined) return build;
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new MhError("CANCELLED", "the call was cancelled while its layer was building"));
    const onAbort = (): void => reject(new MhError("CANCELLED", "the call was cancelled while its layer was building"));
    signal.addEventListener("abort", onAbort, { once: true });
    void build.finally(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}
