/**
 * Session resources from create params to the objects the API returns. GitHub repositories are
 * recorded (url, checkout, mount path) for the sandbox broker to clone; their tokens belong in the
 * credential vault proxy, so a token in the request is refused rather than stored in the clear.
 * Files and memory stores need APIs this gateway does not serve yet and are refused.
 */
import type {
  BetaManagedAgentsFileResourceParams,
  BetaManagedAgentsGitHubRepositoryResourceParams,
  BetaManagedAgentsMemoryStoreResourceParam,
} from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { BetaManagedAgentsGitHubRepositoryResource } from "@anthropic-ai/sdk/resources/beta/sessions/resources";
import { invalidRequest } from "../errors/api-error.js";
import { RESOURCE_ID_PREFIX, newId } from "../ids.js";

export type ResourceParams =
  | BetaManagedAgentsGitHubRepositoryResourceParams
  | BetaManagedAgentsFileResourceParams
  | BetaManagedAgentsMemoryStoreResourceParam;

/** What sessions of this gateway can hold. */
export type SessionResource = BetaManagedAgentsGitHubRepositoryResource;

function repoName(url: URL): string {
  const last = url.pathname.split("/").filter((s) => s !== "").pop() ?? "repository";
  return last.replace(/\.git$/, "") || "repository";
}

function github(p: BetaManagedAgentsGitHubRepositoryResourceParams, field: string, now: Date): SessionResource {
  if (p.authorization_token !== undefined) {
    throw invalidRequest(
      `${field}.authorization_token`,
      "is not accepted: repository tokens are held by the credential vault proxy, which this gateway does not reach yet; use a public repository",
    );
  }
  let url: URL | undefined;
  try {
    url = new URL(p.url);
  } catch {
    url = undefined;
  }
  // Host paths (file:) and other schemes stay out until the sandbox broker decides what a
  // session may clone.
  if (url === undefined || !["https:", "http:"].includes(url.protocol)) {
    throw invalidRequest(`${field}.url`, "must be an https URL of a git repository");
  }
  const mountPath = p.mount_path ?? `/workspace/${repoName(url)}`;
  if (!mountPath.startsWith("/") || mountPath.split("/").includes("..")) {
    throw invalidRequest(`${field}.mount_path`, "must be an absolute path without ..");
  }
  const at = now.toISOString();
  return {
    id: newId(RESOURCE_ID_PREFIX),
    type: "github_repository",
    url: p.url,
    mount_path: mountPath,
    ...(p.checkout === undefined ? {} : { checkout: p.checkout }),
    created_at: at,
    updated_at: at,
  };
}

export function resolveResources(params: readonly ResourceParams[] | undefined, now: Date, field = "resources"): SessionResource[] {
  const out: SessionResource[] = [];
  const mounts = new Set<string>();
  for (const [i, p] of (params ?? []).entries()) {
    const at = `${field}[${i}]`;
    if (p.type === "file") throw invalidRequest(`${at}.type`, "file resources need the Files API, which this gateway does not serve yet");
    if (p.type === "memory_store") throw invalidRequest(`${at}.type`, "memory stores are not supported by this gateway yet");
    const resource = github(p, at, now);
    if (mounts.has(resource.mount_path)) throw invalidRequest(`${at}.mount_path`, `"${resource.mount_path}" is already used`);
    mounts.add(resource.mount_path);
    out.push(resource);
  }
  return out;
}
