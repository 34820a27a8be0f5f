/**
 * Turns fastify's schema validation errors into our 400s, naming the field as the SDK's params
 * spell it: `/tools/0/name` becomes `tools[0].name`, a missing property names itself, an
 * unexpected one says it is not a field. One error per request (ajv stops at the first).
 */
import type { FastifySchemaValidationError } from "fastify";
import { invalidRequest, type ApiError } from "../errors/api-error.js";

/** JSON pointer to the SDK's field spelling. */
export function fieldOf(pointer: string): string {
  let out = "";
  for (const raw of pointer.split("/").slice(1)) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(part) ? `[${part}]` : out === "" ? part : `.${part}`;
  }
  return out;
}

function join(field: string, key: string): string {
  return field === "" ? key : `${field}.${key}`;
}

function list(values: unknown): string {
  return Array.isArray(values) ? values.map((v) => JSON.stringify(v)).join(", ") : JSON.stringify(values);
}

function describe(e: FastifySchemaValidationError): { field: string; message: string } {
  const field = fieldOf(e.instancePath);
  const p = e.params;
  switch (e.keyword) {
    case "required":
      return { field: join(field, String(p["missingProperty"])), message: "Field required" };
    case "additionalProperties":
      return { field: join(field, String(p["additionalProperty"])), message: "Extra inputs are not permitted" };
    case "type":
      return { field, message: `must be ${String(p["type"]).split(",").join(" or ")}` };
    case "enum":
      return { field, message: `must be one of ${list(p["allowedValues"])}` };
    case "const":
      return { field, message: `must be ${JSON.stringify(p["allowedValue"])}` };
    case "discriminator": {
      const tag = String(p["tag"]);
      return p["error"] === "mapping"
        ? { field: join(field, tag), message: `${JSON.stringify(p["tagValue"])} is not an accepted value` }
        : { field: join(field, tag), message: "Field required (a string)" };
    }
    case "anyOf":
    case "oneOf":
      return { field, message: "does not match any of the accepted forms" };
    default:
      return { field, message: e.message ?? "is invalid" };
  }
}

const WHERE: Readonly<Record<string, string>> = { body: "body", querystring: "query", params: "path", headers: "header" };

export function validationError(errors: readonly FastifySchemaValidationError[], context: string | undefined): ApiError {
  const first = errors[0];
  if (first === undefined) return invalidRequest(WHERE[context ?? "body"] ?? "request", "is invalid");
  const { field, message } = describe(first);
  return invalidRequest(field === "" ? (WHERE[context ?? "body"] ?? "request") : field, message);
}
