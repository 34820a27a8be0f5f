/**
 * The workspace store in a local directory (MH_WORKSPACE_STORE=dir:<path>, the default): one file
 * per key. A write goes to a temporary name and is renamed into place, so a broker killed mid-write
 * leaves no half object under a real key (the temporaries, ".tmp-*", are removed at open). No
 * fsync: a broker killed with -9 loses nothing the kernel already has; a machine that loses power
 * may lose the last snapshots, and restores the last good one.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import { MhError } from "@metaharness/errors";
import type { BlobStore, StoredObject } from "./blob-store.js";

export class DirStore implements BlobStore {
  readonly description: string;

  constructor(private readonly root: string) {
    this.description = `dir:${root}`;
  }

  async open(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    const stale = (await this.walk(this.root)).filter((f) => f.split(sep).pop()!.startsWith(".tmp-"));
    await Promise.all(stale.map((f) => rm(f, { force: true })));
  }

  async put(key: string, body: Buffer): Promise<void> {
    const path = this.path(key);
    const tmp = join(dirname(path), `.tmp-${randomBytes(6).toString("hex")}`);
    try {
      await writeFile(tmp, body).catch(async (err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
        await mkdir(dirname(path), { recursive: true });
        await writeFile(tmp, body);
      });
      await rename(tmp, path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw unavailable(this.description, err);
    }
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      return await readFile(this.path(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw unavailable(this.description, err);
    }
  }

  async has(key: string): Promise<boolean> {
    try {
      await stat(this.path(key));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw unavailable(this.description, err);
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    // Keys are paths: list the deepest folder the prefix names, then filter.
    const slash = prefix.lastIndexOf("/");
    const base = slash < 0 ? this.root : this.path(prefix.slice(0, slash));
    const files = await this.walk(base);
    const out: StoredObject[] = [];
    for (const file of files) {
      const key = relative(this.root, file).split(sep).join("/");
      if (!key.startsWith(prefix) || key.split("/").pop()!.startsWith(".tmp-")) continue;
      const s = await stat(file).catch(() => undefined);
      if (s !== undefined) out.push({ key, size: s.size, modifiedAt: s.mtime });
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(keys: readonly string[]): Promise<void> {
    try {
      await Promise.all(keys.map((k) => rm(this.path(k), { force: true })));
    } catch (err) {
      throw unavailable(this.description, err);
    }
  }

  private path(key: string): string {
    if (key === "" || key.split("/").some((part) => part === "" || part === "." || part === "..")) {
      throw new MhError("INVALID_ARGUMENT", `not a store key: ${JSON.stringify(key)}`);
    }
    return join(this.root, ...key.split("/"));
  }

  private async walk(dir: string): Promise<string[]> {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw unavailable(this.description, err);
    }
    const nested = await Promise.all(
      entries.map((e) => (e.isDirectory() ? this.walk(join(dir, e.name)) : Promise.resolve(e.isFile() ? [join(dir, e.name)] : []))),
    );
    return nested.flat();
  }
}

export function unavailable(description: string, err: unknown): MhError {
  if (err instanceof MhError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new MhError("UNAVAILABLE", `the workspace store ${description} failed: ${message}`, { cause: err });
}
