/**
 * Keeps docs/api.md and the gateway in step, as fastify does for its error codes: the error
 * catalog table against ERROR_CATALOG, the MhError mapping against ERROR_FOR_CODE, and the
 * table of SDK calls against the routes the gateway actually serves and the errors each one
 * declares (which also produce /openapi.json).
 */
import { readFile } from "node:fs/promises";
import Anthropic from "@anthropic-ai/sdk";
import { COMMON_ERRORS, ERROR_CATALOG, ERROR_FOR_CODE, type CatalogEntry } from "@metaharness/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { raw, startStack, type Stack } from "../../support/gateway.js";

const DOC = new URL("../../../docs/api.md", import.meta.url);

/** The rows of the markdown table between `<!-- name:start -->` and `<!-- name:end -->`. */
function table(doc: string, name: string): string[][] {
  const start = doc.indexOf(`<!-- ${name}:start -->`);
  const end = doc.indexOf(`<!-- ${name}:end -->`);
  expect(start, `docs/api.md has no ${name} table`).toBeGreaterThan(-1);
  return doc
    .slice(start, end)
    .split("\n")
    .filter((line) => line.startsWith("|"))
    .slice(2)
    .map((line) => line.split("|").slice(1, -1).map((cell) => cell.trim()));
}

/** The first `code` span of a cell, or "" for a dash. */
const code = (cell: string | undefined): string => /`([^`]+)`/.exec(cell ?? "")?.[1] ?? "";
const codes = (cell: string | undefined): string[] => [...(cell ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

let doc: string;
let stack: Stack;
beforeAll(async () => {
  doc = await readFile(DOC, "utf8");
  stack = await startStack({ scenarios: [] });
});
afterAll(async () => {
  await stack?.stop();
});

/** Reaches the SDK's own choice of exception class for a status and an error body. */
class Probe extends Anthropic {
  raised(status: number, body: object): InstanceType<typeof Anthropic.APIError> {
    return this.makeStatusError(status, body, undefined, new Headers());
  }
}

describe("the catalog", () => {
  it("names, for every entry, the exception the official SDK raises for its status and body", () => {
    const sdk = new Probe({ apiKey: "unused" });
    for (const [name, entry] of Object.entries(ERROR_CATALOG) as Array<[string, CatalogEntry]>) {
      const body = {
        type: "error",
        error: { type: entry.type, message: name, ...(entry.errorCode === undefined ? {} : { details: { error_code: entry.errorCode } }) },
        request_id: null,
      };
      const err = sdk.raised(entry.status, body);
      expect(err.name, name).toBe(entry.sdkError);
      expect(err.type, name).toBe(entry.type);
      expect(err.errorCode, name).toBe(entry.errorCode ?? null);
    }
  });
});

describe("docs/api.md", () => {
  it("documents exactly the error catalog of the code", () => {
    const rows = table(doc, "error-catalog");
    const documented = Object.fromEntries(
      rows.map(([name, status, type, errorCode, sdkError, retries, when]) => [
        code(name),
        {
          status: Number(status),
          type: code(type),
          ...(code(errorCode) === "" ? {} : { errorCode: code(errorCode) }),
          sdkError: code(sdkError),
          retry: retries === "yes",
          when: when ?? "",
        },
      ]),
    );
    const inCode = Object.fromEntries(
      Object.entries(ERROR_CATALOG).map(([name, e]: [string, CatalogEntry]) => [
        name,
        { status: e.status, type: e.type, ...(e.errorCode === undefined ? {} : { errorCode: e.errorCode }), sdkError: e.sdkError, retry: e.retry, when: e.when },
      ]),
    );
    // The "when" column too: it said the gateway did not serve threads long after it did.
    expect(documented).toEqual(inCode);
  });

  it("documents how every MhError code is answered", () => {
    const documented = Object.fromEntries(table(doc, "error-codes").map(([c, name]) => [code(c), code(name)]));
    expect(documented).toEqual(ERROR_FOR_CODE);
  });

  it("lists every SDK call the gateway serves, with the errors each declares", () => {
    const documented = table(doc, "endpoints").map(([sdk, http, errors]) => ({ sdk: code(sdk), http: code(http), errors: codes(errors).sort() }));
    const served = stack.gateway.routes
      .filter((r) => r.public !== true)
      .map((r) => ({ sdk: `client.${r.sdk}`, http: `${r.method} ${r.url.replace(/:(\w+)/g, "{$1}")}`, errors: [...r.errors].sort() }));
    expect(documented).toEqual(served);
    expect(doc).toContain(COMMON_ERRORS.map((e) => `\`${e}\``).join(", "));
  });

  it("matches /openapi.json: one operation per route, with the declared error statuses", async () => {
    const res = await raw(stack, "GET", "/openapi.json", { key: null });
    expect(res.status).toBe(200);
    const spec = res.json as { openapi: string; paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>> };
    expect(spec.openapi).toBe("3.1.0");
    for (const route of stack.gateway.routes) {
      const op = spec.paths[route.url.replace(/:(\w+)/g, "{$1}")]?.[route.method.toLowerCase()];
      expect(op?.operationId, `${route.method} ${route.url}`).toBe(route.sdk);
      for (const error of route.errors) expect(Object.keys(op!.responses)).toContain(String(ERROR_CATALOG[error].status));
    }
    const create = spec.paths["/v1/agents"]?.["post"] as { requestBody?: { content: Record<string, { schema: { required?: string[] } }> } };
    expect(create.requestBody?.content["application/json"]?.schema.required).toEqual(["model", "name"]);
  });
});
