/**
 * ListHandTools: what the connected hands of a kind offer, so a harness can put a hand's own tools
 * before the model, or a gateway can check an environment's hand (the connected kinds are in the
 * refusal's HandKinds detail). Answered from the registry alone; nothing is provisioned.
 */
import { HandKinds, MhError, invalidArgument } from "@metaharness/errors";
import type { ListHandToolsRequest, ListHandToolsResponse } from "@metaharness/proto";
import type { HandRegistry } from "./registry.js";
import { HAND_NAME } from "./tool-specs.js";

export function listHandTools(hands: HandRegistry, req: ListHandToolsRequest): Promise<ListHandToolsResponse> {
  if (!HAND_NAME.test(req.kind)) return Promise.reject(invalidArgument("kind", "must be 1-128 of [A-Za-z0-9._:-]"));
  const found = hands.toolsOf(req.kind);
  if (found === undefined) {
    const kinds = hands.kinds();
    return Promise.reject(
      new MhError("FAILED_PRECONDITION", `no hand of kind "${req.kind}" is connected${kinds.length > 0 ? ` (connected: ${kinds.join(", ")})` : ""}`, {
        field: "kind",
        details: HandKinds.of({ hand_kinds: kinds.join(",") }),
      }),
    );
  }
  return Promise.resolve(found);
}
