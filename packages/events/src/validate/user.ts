/** Payload rules of the user.* events: what a client may send. */
import { ToolConfirmationResult } from "@metaharness/proto";
import { invalidArgument } from "@metaharness/errors";
import { enumValues, noPayloadFields, requireEnum, requireEventId, type DomainValidators } from "./check.js";
import { TOOL_RESULT_BLOCKS, USER_MESSAGE_BLOCKS, validateContent } from "./content.js";

const CONFIRMATION_RESULTS = enumValues(ToolConfirmationResult);

export const USER_VALIDATORS: DomainValidators<"user"> = {
  "user.message": (p, path) => {
    validateContent(p.content, `${path}.content`, { allowed: USER_MESSAGE_BLOCKS, nonEmpty: true });
  },
  "user.interrupt": noPayloadFields,
  "user.custom_tool_result": (p, path) => {
    requireEventId(p.customToolUseId, `${path}.custom_tool_use_id`);
    validateContent(p.content, `${path}.content`, { allowed: TOOL_RESULT_BLOCKS, nonEmpty: false });
  },
  "user.tool_confirmation": (p, path) => {
    requireEventId(p.toolUseId, `${path}.tool_use_id`);
    requireEnum(p.result, CONFIRMATION_RESULTS, `${path}.result`, {
      allowUnspecified: false,
      expected: "allow or deny",
    });
    if (p.denyMessage !== "" && p.result !== ToolConfirmationResult.TOOL_CONFIRMATION_RESULT_DENY) {
      throw invalidArgument(`${path}.deny_message`, "is only allowed when result is deny");
    }
  },
  "user.tool_result": (p, path) => {
    requireEventId(p.toolUseId, `${path}.tool_use_id`);
    validateContent(p.content, `${path}.content`, { allowed: TOOL_RESULT_BLOCKS, nonEmpty: false });
  },
};
