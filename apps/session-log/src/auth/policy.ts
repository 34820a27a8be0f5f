/**
 * Who may call the session log, which holds every session's whole history: every RPC needs a
 * service token (MH_SERVICE_TOKENS_FILE) whose role the policy lists for it. An admin (the
 * gateway, a backend using the gRPC API) may do everything; a harness reads sessions, appends,
 * watches, streams deltas and holds leases (and a line that frees them when it dies); the sandbox broker appends its sandbox events, one at a
 * time and of those types only (BROKER_EVENT_TYPES), so its token cannot put words in a user's
 * mouth, and reads a session's status, without its metadata (to release the sandboxes of a
 * deleted one); the credential vault proxy reads a session's metadata (its vaults and tenant).
 * The record is keyed by the generated service, so a new RPC does not compile until it is given
 * its roles here.
 */
import type { SessionLogService } from "@metaharness/proto";
import type { Policy } from "@metaharness/service-kit/auth";

/** The roles a service token file of the session log may give its callers. */
export const ROLES = ["admin", "harness", "broker", "proxy"] as const;
export type Role = (typeof ROLES)[number];

export type RpcName = keyof SessionLogService;

/** What the broker appends: its sandboxes' lifecycle, and a repository that would not clone (session.error). */
export const BROKER_EVENT_TYPES: ReadonlySet<string> = new Set(["sandbox.provisioned", "sandbox.released", "sandbox.lost", "session.error"]);

export const POLICY: Policy<RpcName, Role> = {
  createSession: ["admin"],
  updateSession: ["admin"],
  getSession: ["admin", "harness", "proxy", "broker"],
  listSessions: ["admin", "harness"],
  emitEvent: ["admin", "harness", "broker"],
  emitEvents: ["admin", "harness"],
  getEvents: ["admin", "harness"],
  watchEvents: ["admin", "harness"],
  publishDeltas: ["admin", "harness"],
  acquireLease: ["admin", "harness"],
  renewLease: ["admin", "harness"],
  renewLeases: ["admin", "harness"],
  releaseLease: ["admin", "harness"],
  holdLeases: ["admin", "harness"],
};
