/**
 * Property-based fuzzing (fast-check) of every route of the HTTP API (the gateway's own list, with
 * its schemas): bodies and query strings built from each route's schema, any JSON, text that is
 * not JSON, path parameters that name real objects or nothing. Whatever arrives, no answer is a
 * 500, the gateway keeps answering, and a refused request (4xx) stored nothing: the gateway's,
 * the session log's and the vault proxy's databases hold the same rows before and after.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_A, startStack, type Stack } from "../support/gateway.js";
import { fingerprinter } from "./probe.js";
import { requestArb, type HttpRequest } from "./http.js";

const RUNS = Number(process.env["MH_FUZZ_RUNS"] ?? 25);
/** How long a streaming answer is read before the request is dropped. */
const STREAM_MS = 300;

let stack: Stack;
let known: string[] = [];
let fingerprint: () => Promise<string>;
let closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  stack = await startStack({ scenarios: [] });
  const { sdk } = stack.client();
  const agent = await sdk.beta.agents.create({ name: "fuzz", model: "claude-sonnet-5-5" });
  const environment = await sdk.beta.environments.create({ name: "fuzz" });
  const session = await sdk.beta.sessions.create({ agent: agent.id, environment_id: environment.id });
  const vault = await sdk.beta.vaults.create({ display_name: "fuzz" });
  known = [agent.id, environment.id, session.id, vault.id];
  // No brain behind the gateway: a turn it started would write to the log while a later, refused
  // request is checked for storing nothing.
  for (const h of stack.brain.harnesses) await h.stop();
  const prints = await Promise.all([stack.db.url, stack.brain.log.db.url, stack.vault!.db.url].map((url) => fingerprinter(url)));
  closers = prints.map((p) => () => p.close());
  fingerprint = async () => (await Promise.all(prints.map((p) => p.take()))).join(";");
}, 120_000);

afterAll(async () => {
  for (const close of closers) await close();
  await stack?.stop();
});

async function send(method: string, req: HttpRequest): Promise<number> {
  const res = await fetch(`${stack.gateway.url}${req.path}`, {
    method,
    headers: { "x-api-key": KEY_A, ...(req.body === undefined ? {} : { "content-type": "application/json" }) },
    ...(req.body === undefined ? {} : { body: req.body }),
    signal: AbortSignal.timeout(STREAM_MS + 10_000),
  });
  if (res.headers.get("content-type")?.startsWith("text/event-stream")) {
    // A fixed wait on purpose (paces the generator): reads a stream for STREAM_MS, then hangs up.
    await new Promise((r) => setTimeout(r, STREAM_MS));
    await res.body?.cancel();
  } else {
    await res.arrayBuffer();
  }
  return res.status;
}

describe("the HTTP API, fuzzed", () => {
  it("every route: no 500, nothing stored on refusal, still answering", async () => {
    const routes = stack.gateway.routes.filter((r) => !r.url.startsWith("/ui"));
    expect(routes.length).toBeGreaterThan(20);
    // Every route is fuzzed whatever an earlier one found; the failures are listed together.
    const failures: string[] = [];
    for (const route of routes) {
      let before = await fingerprint();
      const found = await fc.check(
        fc.asyncProperty(requestArb(route, known), async (req) => {
          const status = await send(route.method, req);
          const after = await fingerprint();
          const stored = status >= 400 && status < 500 && after !== before;
          before = after;
          if (status === 500 || stored) {
            throw new Error(`${route.method} ${req.path} ${req.body ?? ""} -> ${status}${stored ? " (and the refused request stored rows)" : ""}`);
          }
        }),
        { numRuns: RUNS, endOnFailure: true },
      );
      if (found.failed) failures.push(found.errorInstance instanceof Error ? found.errorInstance.message : String(found.errorInstance));
    }
    expect(failures).toEqual([]);
    expect(await send("GET", { path: "/v1/agents", body: undefined })).toBe(200);
  }, 240_000);
});
