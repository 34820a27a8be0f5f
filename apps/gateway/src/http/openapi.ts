/**
 * The OpenAPI 3.1 document served at /openapi.json, generated from the routes' declarations:
 * parameters and request bodies from their JSON schemas, responses from the SDK type they return
 * and the catalog errors they can produce.
 */
import { COMMON_ERRORS, ERROR_CATALOG, type GatewayErrorName } from "../errors/catalog.js";
import type { JsonSchema } from "./json-schema.js";
import type { RouteDoc } from "./route-doc.js";

type Json = Record<string, unknown>;

function parameters(schema: JsonSchema | undefined, where: "path" | "query"): Json[] {
  const properties = (schema?.["properties"] ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema?.["required"] ?? []) as string[]);
  return Object.entries(properties).map(([name, s]) => ({
    name,
    in: where,
    required: where === "path" || required.has(name),
    schema: s,
    ...(s["type"] === "array" ? { style: "form", explode: true, description: `Repeat as ${name}[]=... (the SDK's encoding) or ${name}=...` } : {}),
  }));
}

function errorResponses(errors: readonly GatewayErrorName[], common: readonly GatewayErrorName[]): Json {
  const byStatus = new Map<number, GatewayErrorName[]>();
  for (const name of [...errors, ...common]) {
    const status = ERROR_CATALOG[name].status;
    const names = byStatus.get(status) ?? [];
    if (!names.includes(name)) names.push(name);
    byStatus.set(status, names);
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, names]) => [
      String(status),
      {
        description: names.map((n) => `${n} (${ERROR_CATALOG[n].type})`).join(", "),
        content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorResponse" } } },
      },
    ]),
  );
}

function operation(route: RouteDoc): Json {
  return {
    operationId: route.sdk,
    summary: route.summary,
    ...(route.extension === true ? { "x-meta-harness-extension": true } : { "x-sdk-method": `client.${route.sdk}` }),
    parameters: [...parameters(route.schema?.params, "path"), ...parameters(route.schema?.querystring, "query")],
    ...(route.schema?.body === undefined
      ? {}
      : { requestBody: { required: true, content: { "application/json": { schema: route.schema.body } } } }),
    responses: {
      "200": {
        description: route.response,
        content: route.stream === true
          ? { "text/event-stream": { schema: { type: "string", description: `Server-sent events; each data is a ${route.response}` } } }
          : { "application/json": { schema: { type: "object", description: route.response } } },
      },
      ...errorResponses(route.errors, route.public === true ? [] : COMMON_ERRORS),
    },
    ...(route.public === true ? { security: [] } : {}),
  };
}

export function openApiDocument(routes: readonly RouteDoc[], version: string): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    const path = route.url.replace(/:(\w+)/g, "{$1}");
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route) };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Meta-Harness gateway: the Claude Managed Agents API",
      version,
      description: "Self-hosted Managed Agents API (managed-agents-2026-04-01). See docs/api.md.",
    },
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "x-api-key" } },
      schemas: {
        ErrorResponse: {
          type: "object",
          required: ["type", "error", "request_id"],
          properties: {
            type: { const: "error" },
            error: {
              type: "object",
              required: ["type", "message"],
              properties: {
                type: { enum: [...new Set(Object.values(ERROR_CATALOG).map((e) => e.type))] },
                message: { type: "string" },
                details: { type: "object", properties: { error_code: { type: "string" } } },
              },
            },
            request_id: { type: ["string", "null"] },
          },
        },
      },
    },
  };
}
