/**
 * Who may call the broker, which runs code: every RPC needs a service token (MH_SERVICE_TOKENS_FILE)
 * whose role the policy lists for it. A harness provisions and uses sandboxes, always naming the
 * session it acts for; an external hand connects and does nothing else, registering only the kinds
 * its tokens-file entry lists in "scopes"; a gateway builds and describes environments' package
 * layers, checks an environment's hand kind, and passes a session's
 * sandbox to another session of the same tenant (it checked both are the caller's); an admin (an operator)
 * may do what a harness does for any session, and see every sandbox. The record is keyed by the generated service, so a new RPC does not compile until
 * it is given its roles here.
 */
import { invalidArgument } from "@metaharness/errors";
import type { SandboxBrokerService } from "@metaharness/proto";
import type { Caller, Policy } from "@metaharness/service-kit/auth";

/** The roles a service token file of the broker may give its callers. */
export const ROLES = ["harness", "hand", "admin", "gateway"] as const;
export type Role = (typeof ROLES)[number];

export type RpcName = keyof SandboxBrokerService;

export const POLICY: Policy<RpcName, Role> = {
  provision: ["harness", "admin"],
  addRepositories: ["harness", "admin"],
  execute: ["harness", "admin"],
  release: ["harness", "admin"],
  // The gateway lists a session's sandboxes and transfers one (POST /v1/sessions/{id}/sandbox/transfer).
  listSandboxes: ["harness", "gateway", "admin"],
  describeSandbox: ["admin"],
  transfer: ["gateway", "admin"],
  connectHand: ["hand"],
  // What a hand kind's tools are, for the harness to offer them to the model; the gateway checks
  // an environment's hand (metadata mh.hand) with it.
  listHandTools: ["harness", "gateway", "admin"],
  // The gateway builds and reports environments' package layers, and does nothing else here.
  buildLayer: ["gateway", "admin"],
  describeLayer: ["gateway", "admin"],
};

/**
 * A harness acts for one session at a time, so it names it: an empty session_id (which skips the
 * holder check, or lists every session's sandboxes) is an operator's request.
 */
export function requireSessionFor(caller: Caller<Role>, sessionId: string, field = "session_id"): void {
  if (caller.role !== "admin" && sessionId === "") throw invalidArgument(field, `is required for a ${caller.role} caller`);
}
