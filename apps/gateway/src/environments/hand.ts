/**
 * An environment's external hand (issue 29): the SDK's environment has no field for it, so a
 * metadata key says it (docs/api.md): `mh.hand` names a hand kind ("kv-device") whose connected
 * hands' own tools the harness offers the model beside the sandbox tools, run on that hand
 * (EnvironmentConfig.hand_kind). Checked when the environment is created or the key is set, by
 * asking the sandbox broker what the kind offers (ListHandTools): a kind no connected hand has is
 * refused with a 400 naming the key and listing the kinds that are connected, and nothing is
 * stored. A hand that disconnects later is the harness's concern (its turns go on without it).
 */
import { HandKinds, MhError } from "@metaharness/errors";
import { invalidRequest } from "../errors/api-error.js";
import type { Metadata } from "../http/metadata.js";
import type { EnvironmentConfig } from "./environment-config.js";
import type { SandboxBrokerRpc } from "../clients.js";

export const HAND_KEY = "mh.hand";
const FIELD = `metadata.${HAND_KEY}`;

/** The hand kind the environment's metadata names; "" for none. */
export function handKindOf(metadata: Metadata): string {
  return metadata[HAND_KEY] ?? "";
}

export class HandKindCheck {
  constructor(private readonly broker: SandboxBrokerRpc | undefined) {}

  /** Throws the 400 of a hand kind this environment cannot have; nothing when it names none. */
  async check(config: EnvironmentConfig, metadata: Metadata): Promise<void> {
    const kind = handKindOf(metadata);
    if (kind === "") return;
    if (config.type === "self_hosted") {
      throw invalidRequest(FIELD, "a self_hosted environment's tools run on its workers: it has no sandbox broker to reach a hand through");
    }
    if (this.broker === undefined) throw invalidRequest(FIELD, "cannot be checked: this gateway has no sandbox broker configured (MH_SANDBOX_BROKER_ADDR)");
    try {
      await this.broker.listHandTools({ kind }, { deadlineMs: 5_000 });
    } catch (err) {
      const e = MhError.from(err);
      if (e.code === "INVALID_ARGUMENT") throw invalidRequest(FIELD, `${JSON.stringify(kind)} is not a hand kind: must be 1-128 of [A-Za-z0-9._:-]`);
      if (e.code !== "FAILED_PRECONDITION") throw e;
      const known = (HandKinds.find(e)?.hand_kinds ?? "").split(",").filter((k) => k !== "");
      throw invalidRequest(
        FIELD,
        `no hand of kind ${JSON.stringify(kind)} is connected to the sandbox broker; ${known.length === 0 ? "none is connected" : `connected kinds: ${known.join(", ")}`}`,
      );
    }
  }
}
