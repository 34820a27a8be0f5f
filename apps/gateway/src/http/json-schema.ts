/**
 * JSON Schema pieces shared by the routes. Route schemas do two jobs: fastify validates requests
 * with them (errors name the field, see http/validation.ts), and /openapi.json is generated from
 * them. They state shapes; rules across fields (limits of metadata, references between tools
 * and MCP servers, ...) are checked in mapping/, with errors naming the same fields.
 */

export type JsonSchema = Readonly<Record<string, unknown>>;

export const str = (description?: string, extra: JsonSchema = {}): JsonSchema => ({
  type: "string",
  ...(description === undefined ? {} : { description }),
  ...extra,
});

/**
 * `schema` or null. A schema with alternatives (oneOf) would refuse null inside its branches, so
 * it is wrapped in if/then/else: an object is checked against it with its precise errors.
 */
export const nullable = (schema: JsonSchema): JsonSchema => {
  const type = schema["type"];
  if (typeof type === "string" && schema["oneOf"] === undefined && schema["anyOf"] === undefined) {
    return { ...schema, type: [type, "null"] };
  }
  return { if: { type: "object" }, then: schema, else: { type: "null" } };
};

export const obj = (properties: Record<string, JsonSchema>, required: readonly string[] = [], extra: JsonSchema = {}): JsonSchema => ({
  type: "object",
  properties,
  ...(required.length === 0 ? {} : { required }),
  additionalProperties: false,
  ...extra,
});

/**
 * A value that may be a string, an object or null, each form with its own schema. Written as
 * if/then/else rather than anyOf, so an invalid object is reported by the object's schema
 * (`model.effort: ...`) instead of as "no form matched".
 */
export const byType = (forms: { string?: JsonSchema; object?: JsonSchema; nullable?: boolean }): JsonSchema => {
  const types = [...(forms.string ? ["string"] : []), ...(forms.object ? ["object"] : []), ...(forms.nullable === true ? ["null"] : [])];
  const objectRule: JsonSchema = forms.object === undefined ? {} : { if: { type: "object" }, then: forms.object };
  return forms.string === undefined
    ? { type: types, ...objectRule }
    : { type: types, if: { type: "string" }, then: forms.string, else: objectRule };
};

/** `{type: "..."}` objects, e.g. permission policies and effort levels. */
export const tagged = (values: readonly string[]): JsonSchema => obj({ type: { enum: values } }, ["type"]);

export const metadata: JsonSchema = {
  type: "object",
  description: "String key-value pairs: at most 16 keys of up to 64 characters, values of up to 512.",
  additionalProperties: { type: "string" },
};

/** A patch: a string upserts the key, null (or, for environments, "") deletes it. */
export const metadataPatch: JsonSchema = {
  type: ["object", "null"],
  description: "Metadata patch: set a key to a string to upsert it, to null to delete it.",
  additionalProperties: { type: ["string", "null"] },
};

export const pathParams = (...names: string[]): JsonSchema =>
  obj(Object.fromEntries(names.map((n) => [n, str()])), names);

export const pageQuery: Record<string, JsonSchema> = {
  limit: { type: "integer", description: "Page size." },
  page: str("A next_page (or prev_page) cursor from the previous response."),
};

export const createdAtQuery = (...ops: Array<"gt" | "gte" | "lt" | "lte">): Record<string, JsonSchema> =>
  Object.fromEntries(ops.map((op) => [`created_at[${op}]`, str("RFC 3339 timestamp.")]));
