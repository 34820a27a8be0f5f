/**
 * fast-check arbitraries for the HTTP API from the gateway's own route declarations (RouteDoc: the
 * JSON schemas of each route's body and query string): values each schema allows, anything JSON
 * at all, and text that is not JSON; path parameters from ids the test made, or anything.
 */
import type { RouteDoc } from "@metaharness/gateway";
import fc from "fast-check";

type Schema = Readonly<Record<string, unknown>>;

const MAX_DEPTH = 4;
const oddText = fc.constantFrom("", "\u0000", "\ud800", "x".repeat(5000), "null", "-1", "1e400", "__proto__", "constructor");

/** A value `schema` describes (loosely: sometimes one it does not), or any JSON where it says nothing. */
export function fromSchema(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (schema === undefined || depth > MAX_DEPTH) return fc.jsonValue({ maxDepth: 2 });
  const choices = (schema["anyOf"] ?? schema["oneOf"]) as Schema[] | undefined;
  if (Array.isArray(choices) && choices.length > 0) return fc.oneof(...choices.map((c) => fromSchema(c, depth + 1)));
  if (Array.isArray(schema["enum"])) return fc.oneof(fc.constantFrom(...(schema["enum"] as unknown[])), fc.string({ maxLength: 8 }));
  if (schema["const"] !== undefined) return fc.constant(schema["const"]);
  const type = Array.isArray(schema["type"]) ? (schema["type"] as string[])[0] : (schema["type"] as string | undefined);
  switch (type) {
    case "object": {
      const props = (schema["properties"] ?? {}) as Record<string, Schema>;
      const parts = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, fc.option(fromSchema(s, depth + 1), { nil: undefined, freq: 3 })]));
      return fc
        .tuple(fc.record(parts), fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 1 }))
        .map(([known, extra]) => ({ ...extra, ...Object.fromEntries(Object.entries(known).filter(([, v]) => v !== undefined)) }));
    }
    case "array":
      return fc.array(fromSchema(schema["items"] as Schema | undefined, depth + 1), { maxLength: 3 });
    case "string":
      return fc.oneof({ weight: 4, arbitrary: fc.string({ maxLength: 20 }) }, { weight: 1, arbitrary: oddText });
    case "integer":
      return fc.oneof(fc.integer({ min: -2, max: 1000 }), fc.integer(), fc.constant(2 ** 53 + 1));
    case "number":
      return fc.oneof(fc.double(), fc.integer());
    case "boolean":
      return fc.boolean();
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

export interface HttpRequest {
  readonly path: string;
  readonly body: string | undefined;
}

/** A request to `route`: its parameters filled in, a query string, and for methods with a body, one. */
export function requestArb(route: RouteDoc, known: readonly string[]): fc.Arbitrary<HttpRequest> {
  const names = [...route.url.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
  const param = fc.oneof({ weight: 3, arbitrary: known.length > 0 ? fc.constantFrom(...known) : fc.string() }, { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 30 }) });
  const query = fc.oneof(
    fromSchema(route.schema?.querystring).map((q) => (typeof q === "object" && q !== null && !Array.isArray(q) ? (q as Record<string, unknown>) : {})),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 3 }),
  );
  const hasBody = route.method === "POST";
  const body = hasBody
    ? fc.oneof(
        { weight: 4, arbitrary: fromSchema(route.schema?.body).map((b) => JSON.stringify(b)) },
        { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((b) => JSON.stringify(b)) },
        { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
      )
    : fc.constant(undefined);
  return fc.tuple(fc.array(param, { minLength: names.length, maxLength: names.length }), query, body).map(([values, q, b]) => {
    let path = route.url;
    names.forEach((n, i) => (path = path.replace(`:${n}`, encodeURIComponent(values[i]!))));
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) search.append(k, typeof v === "string" ? v : JSON.stringify(v));
    const qs = search.toString();
    return { path: qs === "" ? path : `${path}?${qs}`, body: b };
  });
}
