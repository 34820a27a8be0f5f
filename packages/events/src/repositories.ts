/**
 * What makes a session's git repository usable in a sandbox, checked the same way by the session
 * log (CreateSession, UpdateSession) and the sandbox broker (Provision, AddRepositories): a
 * repository the log took but the broker refused would fail every provisioning of its session.
 */
import { posix } from "node:path";

/** A workspace path's longest length. */
export const MAX_WORKSPACE_PATH = 4096;

// A branch, tag or commit, never an option: git must not read it as `--upload-pack=...`.
const CHECKOUT = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,254}$/;

/**
 * Repository URLs in one canonical form, so that what a sandbox names (as git writes it) and what
 * Provision asked for compare equal: http(s) only, no user info, lower-case host, no default
 * port, no trailing slash, no fragment. Undefined for a URL that is not usable.
 */
export function normalizeRepositoryUrl(raw: string): string | undefined {
  if (!URL.canParse(raw)) return undefined;
  const url = new URL(raw);
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username !== "" || url.password !== "") return undefined;
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}${url.search}`;
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

/** A repository's mount path, normalised (trailing slashes dropped), or why it cannot be one. */
export function repositoryMountPath(raw: string): string | { problem: string } {
  return workspacePath(raw.replace(/\/+$/, ""));
}

/** A mount path as compared: normalised when it is one ("app/" is "app"), else as it is. */
export function mountPathKey(raw: string): string {
  const mount = repositoryMountPath(raw);
  return typeof mount === "string" ? mount : raw;
}

/** A branch, tag or commit name git cannot mistake for an option. */
export function isCheckoutName(checkout: string): boolean {
  return CHECKOUT.test(checkout);
}
