/**
 * ListHandTools: what the connected hands of a kind offer, so a harness can put a hand's own tools
 * before the model. Answered from the registry alone; nothing is provisioned.
 */
import { MhError, invalidArgument } from "@metaharness/errors";
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
      }),
    );
  }
  return Promise.resolve(found);
}
