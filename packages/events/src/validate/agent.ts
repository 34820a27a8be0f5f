/** Payload rules of the agent.* events: what the harness records of the model's turn. */
import { EvaluatedPermission } from "@metaharness/proto";
import {
  enumValues,
  noPayloadFields,
  requireEnum,
  requireEventId,
  requireString,
  type DomainValidators,
} from "./check.js";
import { AGENT_MESSAGE_BLOCKS, TOOL_RESULT_BLOCKS, validateContent } from "./content.js";
import { validateStruct } from "./struct.js";

const PERMISSIONS = enumValues(EvaluatedPermission);
const PERMISSION_RULE = { allowUnspecified: true, expected: "allow, ask or deny" } as const;

export const AGENT_VALIDATORS: DomainValidators<"agent"> = {
  "agent.message": (p, path) => {
    validateContent(p.content, `${path}.content`, { allowed: AGENT_MESSAGE_BLOCKS, nonEmpty: true });
  },
  "agent.thinking": noPayloadFields,
  "agent.thread_context_compacted": noPayloadFields,
  "agent.tool_use": (p, path) => {
    requireString(p.name, `${path}.name`);
    validateStruct(p.input, `${path}.input`);
    requireEnum(p.evaluatedPermission, PERMISSIONS, `${path}.evaluated_permission`, PERMISSION_RULE);
  },
  "agent.tool_result": (p, path) => {
    requireEventId(p.toolUseId, `${path}.tool_use_id`);
    validateContent(p.content, `${path}.content`, { allowed: TOOL_RESULT_BLOCKS, nonEmpty: false });
  },
  "agent.mcp_tool_use": (p, path) => {
    requireString(p.mcpServerName, `${path}.mcp_server_name`);
    requireString(p.name, `${path}.name`);
    validateStruct(p.input, `${path}.input`);
    requireEnum(p.evaluatedPermission, PERMISSIONS, `${path}.evaluated_permission`, PERMISSION_RULE);
  },
  "agent.mcp_tool_result": (p, path) => {
    requireEventId(p.mcpToolUseId, `${path}.mcp_tool_use_id`);
    validateContent(p.content, `${path}.content`, { allowed: TOOL_RESULT_BLOCKS, nonEmpty: false });
  },
  "agent.custom_tool_use": (p, path) => {
    requireString(p.name, `${path}.name`);
    validateStruct(p.input, `${path}.input`);
  },
};
