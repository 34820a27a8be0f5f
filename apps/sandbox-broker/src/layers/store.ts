/**
 * The layers on disk, under MH_LAYER_DIR:
 *   <id>/                    a built layer (never changed again; sandboxes bind it read-only),
 *                            with layer.json saying what it holds
 *   failed/<id>.json         why the last build of <id> failed
 *   staging/<broker>/<id>-*  builds under way; renamed to <id>/ when complete, so a half-built
 *                            layer is never at a path a sandbox mounts
 *   mounts/<id>              where <id>'s Debian files are overlaid on the host's /usr
 * A broker removes only its own staging directories at start (a build its previous process left
 * unfinished); several brokers may share the directory, and the first rename of a layer wins.
 */
import { randomBytes } from "node:crypto";
import { chmod, chown, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { PackageManager } from "@metaharness/events";
import { SANDBOX_GID, SANDBOX_UID } from "../inside/view.js";

export interface LayerInfo {
  readonly id: string;
  readonly sizeBytes: number;
  readonly buildMs: number;
  readonly builtAt: string;
  /** The managers that put something in it (each has its own directory). */
  readonly managers: readonly PackageManager[];
}

export interface LayerFailure {
  /** The step that failed ("apt", "pip", ...), or "size". */
  readonly manager: string;
  readonly output: string;
  readonly buildMs: number;
  readonly failedAt: string;
}

export class LayerStore {
  constructor(
    readonly root: string,
    private readonly brokerId: string,
  ) {}

  path(id: string): string {
    return join(this.root, id);
  }

  mountPoint(id: string): string {
    return join(this.root, "mounts", id);
  }

  /** Makes the directories and removes this broker's unfinished builds. */
  async open(): Promise<void> {
    await mkdir(join(this.root, "failed"), { recursive: true });
    await mkdir(join(this.root, "mounts"), { recursive: true });
    await rm(this.stagingBase(), { recursive: true, force: true });
    await mkdir(this.stagingBase(), { recursive: true });
    await chmod(this.root, 0o755);
  }

  async ready(id: string): Promise<LayerInfo | undefined> {
    return readJson<LayerInfo>(join(this.path(id), "layer.json"));
  }

  async failure(id: string): Promise<LayerFailure | undefined> {
    return readJson<LayerFailure>(this.failurePath(id));
  }

  async recordFailure(id: string, failure: LayerFailure): Promise<void> {
    await writeFile(this.failurePath(id), JSON.stringify(failure));
  }

  async clearFailure(id: string): Promise<void> {
    await rm(this.failurePath(id), { force: true });
  }

  /**
   * A fresh staging directory for a build of `id`, with `scratch` beside the layer's own tree
   * for downloads and caches. Owned by the sandbox user when the broker is root: the build runs
   * as that user and may write nowhere else.
   */
  async stage(id: string): Promise<{ dir: string; layer: string; scratch: string }> {
    const dir = join(this.stagingBase(), `${id}-${randomBytes(4).toString("hex")}`);
    const layer = join(dir, "layer");
    const scratch = join(dir, "scratch");
    for (const d of [dir, layer, scratch]) {
      await mkdir(d, { mode: 0o755 });
      if (process.getuid?.() === 0) await chown(d, SANDBOX_UID, SANDBOX_GID);
    }
    return { dir, layer, scratch };
  }

  /** Puts a complete build in place: its info first, then one rename. False if another won the race. */
  async commit(staged: { dir: string; layer: string }, info: LayerInfo): Promise<boolean> {
    await writeFile(join(staged.layer, "layer.json"), JSON.stringify(info), { mode: 0o644 });
    await chmod(staged.layer, 0o755);
    try {
      await rename(staged.layer, this.path(info.id));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOTEMPTY" || (err as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw err;
    } finally {
      await rm(staged.dir, { recursive: true, force: true });
    }
  }

  async discard(staged: { dir: string }): Promise<void> {
    await rm(staged.dir, { recursive: true, force: true });
  }

  private stagingBase(): string {
    return join(this.root, "staging", this.brokerId);
  }

  private failurePath(id: string): string {
    return join(this.root, "failed", `${id}.json`);
  }
}

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
