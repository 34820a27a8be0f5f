/**
 * A layer's content address: sha256 of the normalised package lists and of the base system they
 * were built on. The base system is what a layer's files depend on: the host's Debian packages
 * (the dpkg database: the Python, Node and libraries a venv or a native module was built
 * against), the OS release, the architecture, the Go toolchain outside dpkg, and the layout this
 * code builds (LAYER_FORMAT). Any change there names new layers; old ones are simply not used.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { normalizePackages, type PackageListsInput } from "@metaharness/events";

/** Bumped whenever the layout of a layer or the way it is built changes. */
export const LAYER_FORMAT = 1;

const BASE_FILES = ["/etc/os-release", "/var/lib/dpkg/status", "/usr/local/go/VERSION"];

/** The base system's identity, computed once per broker process (the dpkg database is a few MB). */
export function baseSystemIdentity(): string {
  const hash = createHash("sha256").update(`format ${LAYER_FORMAT}\narch ${process.arch}\n`);
  for (const file of BASE_FILES) {
    let content: Buffer | string;
    try {
      content = readFileSync(file);
    } catch {
      content = "absent";
    }
    hash.update(`${file}\n`).update(createHash("sha256").update(content).digest("hex")).update("\n");
  }
  return hash.digest("hex");
}

/** The layer id of `lists` on the base system `identity`. */
export function layerId(lists: PackageListsInput, identity: string): string {
  const body = JSON.stringify({ base: identity, packages: normalizePackages(lists) });
  return createHash("sha256").update(body).digest("hex").slice(0, 40);
}
