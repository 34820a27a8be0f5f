/**
 * Session resources from request params to what each side keeps: the object the API returns,
 * the session log's SessionRepository (what sandboxes clone) and the authorization token, which
 * goes only to the credential vault proxy (sessions/repository-tokens.ts): it is never part of
 * the resource, the record or the log. Files and memory stores need APIs this gateway does not
 * serve yet and are refused.
 */
import { posix } from "node:path";
import type {
  BetaManagedAgentsFileResourceParams,
  BetaManagedAgentsGitHubRepositoryResourceParams,
  BetaManagedAgentsMemoryStoreResourceParam,
} from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { BetaManagedAgentsGitHubRepositoryResource } from "@anthropic-ai/sdk/resources/beta/sessions/resources";
import type { SessionRepository } from "@metaharness/proto";
import { ApiError, invalidRequest } from "../errors/api-error.js";
import { RESOURCE_ID_PREFIX, newId } from "../ids.js";

export type ResourceParams =
  | BetaManagedAgentsGitHubRepositoryResourceParams
  | BetaManagedAgentsFileResourceParams
  | BetaManagedAgentsMemoryStoreResourceParam;

/** What sessions of this gateway can hold. */
export type SessionResource = BetaManagedAgentsGitHubRepositoryResource;

/** A resource to add: its API object, what the log keeps, and the token for the proxy, if any. */
export interface ResolvedResource {
  readonly resource: SessionResource;
  readonly repository: SessionRepository;
  readonly token: string | undefined;
}

/** The sandbox's workspace: the only place a repository can be cloned to. */
export const WORKSPACE = "/workspace";
// A branch or commit the broker will pass to git: never an option (`--upload-pack=...`).
const CHECKOUT_NAME = /^[A-Za-z0-9_][A-Za-z0-9._/-]{0,254}$/;
export const MAX_TOKEN_LENGTH = 4096;

/** The field name of a part of the resource, as the request spells it (`resources[0].url`). */
type At = (name: string) => string;

function repoName(url: URL): string {
  const last = url.pathname.split("/").filter((s) => s !== "").pop() ?? "repository";
  return last.replace(/\.git$/, "") || "repository";
}

function repositoryUrl(raw: string, at: At): URL {
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (url === undefined || !["https:", "http:"].includes(url.protocol)) {
    throw invalidRequest(at("url"), "must be an https (or http) URL of a git repository");
  }
  if (url.username !== "" || url.password !== "") {
    throw invalidRequest(at("url"), "must not carry credentials; send the token as authorization_token");
  }
  if (url.search !== "" || url.hash !== "") throw invalidRequest(at("url"), "must not have a query or a fragment");
  return url;
}

/** `/workspace/<path>` -> `<path>` (what the broker takes), refusing anything outside the workspace. */
function workspacePath(mountPath: string, at: At): string {
  const normal = posix.normalize(mountPath).replace(/\/+$/, "");
  const relative = normal.startsWith(`${WORKSPACE}/`) ? normal.slice(WORKSPACE.length + 1) : "";
  if (!mountPath.startsWith("/") || relative === "" || relative.split("/").includes("..") || mountPath.includes("\0")) {
    throw invalidRequest(at("mount_path"), `must be an absolute path under ${WORKSPACE}, the sandbox's workspace (e.g. ${WORKSPACE}/app)`);
  }
  return relative;
}

function checkoutName(p: BetaManagedAgentsGitHubRepositoryResourceParams, at: At): string {
  const c = p.checkout;
  if (c === undefined || c === null) return "";
  const [name, value] = c.type === "branch" ? ["name", c.name] : ["sha", c.sha];
  if (!CHECKOUT_NAME.test(value)) throw invalidRequest(at(`checkout.${name}`), "is not a branch name or commit git can check out");
  return value;
}

export function checkToken(token: string | undefined, field: string): string | undefined {
  if (token === undefined) return undefined;
  // The message never quotes the token.
  if (token === "" || token.length > MAX_TOKEN_LENGTH || /[\s\0]/.test(token)) {
    throw invalidRequest(field, `must be a token of 1-${MAX_TOKEN_LENGTH} characters without spaces`);
  }
  return token;
}

function github(p: BetaManagedAgentsGitHubRepositoryResourceParams, at: At, now: Date): ResolvedResource {
  const url = repositoryUrl(p.url, at);
  const mountPath = p.mount_path ?? `${WORKSPACE}/${repoName(url)}`;
  const relative = workspacePath(mountPath, at);
  const checkout = checkoutName(p, at);
  const token = checkToken(p.authorization_token, at("authorization_token"));
  const time = now.toISOString();
  const id = newId(RESOURCE_ID_PREFIX);
  const resource: SessionResource = {
    id,
    type: "github_repository",
    url: p.url,
    mount_path: `${WORKSPACE}/${relative}`,
    ...(p.checkout === undefined ? {} : { checkout: p.checkout }),
    created_at: time,
    updated_at: time,
  };
  return { resource, repository: { resourceId: id, url: p.url, mountPath: relative, checkout }, token };
}

/** Where a session's resources would go. */
export interface ResourceTarget {
  /** This gateway reaches the credential vault proxy, through which every repository is cloned. */
  readonly proxied: boolean;
  /** The session's environment is self_hosted: its tools run on its workers, not in sandboxes. */
  readonly selfHosted: boolean;
}

/**
 * One resource of a request (`field` names it: `resources[2]`, or `` for a body of its own).
 * `taken`: mount paths the session already uses.
 */
export function resolveResource(p: ResourceParams, field: string, now: Date, taken: ReadonlySet<string>, target: ResourceTarget): ResolvedResource {
  const at: At = (name) => (field === "" ? name : `${field}.${name}`);
  if (p.type === "file") throw invalidRequest(at("type"), "file resources need the Files API, which this gateway does not serve yet");
  if (p.type === "memory_store") throw invalidRequest(at("type"), "memory stores are not supported by this gateway yet");
  if (target.selfHosted) {
    throw invalidRequest(
      field === "" ? "type" : field,
      "github_repository resources are cloned into the sandbox broker's sandboxes; a self_hosted environment's tools run on its workers, where the repository is cloned by the worker",
    );
  }
  if (!target.proxied) {
    throw new ApiError(
      "credential_vault_unconfigured",
      `${field === "" ? "type" : field}: github_repository resources are cloned through the credential vault proxy, which this deployment runs the gateway without (MH_CREDENTIAL_PROXY_ADDR)`,
    );
  }
  const resolved = github(p, at, now);
  if (taken.has(resolved.resource.mount_path)) {
    throw invalidRequest(at("mount_path"), `"${resolved.resource.mount_path}" is already the mount path of another resource of this session`);
  }
  return resolved;
}

export function resolveResources(params: readonly ResourceParams[] | undefined, now: Date, target: ResourceTarget): ResolvedResource[] {
  const out: ResolvedResource[] = [];
  const mounts = new Set<string>();
  for (const [i, p] of (params ?? []).entries()) {
    const resolved = resolveResource(p, `resources[${i}]`, now, mounts, target);
    mounts.add(resolved.resource.mount_path);
    out.push(resolved);
  }
  return out;
}
