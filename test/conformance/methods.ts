/**
 * Every managed-agents method of the official SDK, served or not, with the route that serves it
 * and the tests that call it: the table in docs/api.md ("Every SDK method"), which
 * api-table.test.ts regenerates from the SDK, the gateway's /openapi.json and the test files,
 * and compares (MH_WRITE_API_TABLE=1 writes it instead).
 */
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";

/** The namespaces of `client.beta` that are the Managed Agents API. */
const NAMESPACES = ["agents", "environments", "sessions", "vaults", "files", "memoryStores", "skills", "deployments", "deploymentRuns", "dreams"];
/** Methods the SDK runs on its side, over the routes (a worker, a poller, a tool runner). */
const CLIENT_SIDE: Readonly<Record<string, string>> = {
  "beta.environments.work.poller": "SDK-side: polls `work.poll`",
  "beta.environments.work.worker": "SDK-side: `EnvironmentWorker` over `work.*` and `sessions.events.*`",
  "beta.sessions.events.toolRunner": "SDK-side: over `events.stream`, `events.list` and `events.send`",
};

type Resource = Record<string, unknown>;

function walk(resource: Resource, path: string, out: string[]): void {
  const proto = Object.getPrototypeOf(resource) as Record<string, unknown>;
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (name !== "constructor" && !name.startsWith("_") && typeof proto[name] === "function") out.push(`${path}.${name}`);
  }
  for (const [name, value] of Object.entries(resource)) {
    if (name !== "_client" && typeof value === "object" && value !== null && "_client" in value) walk(value, `${path}.${name}`, out);
  }
}

export function sdkMethods(): string[] {
  const beta = new Anthropic({ apiKey: "unused" }).beta as unknown as Record<string, Resource>;
  const out: string[] = [];
  for (const ns of NAMESPACES) walk(beta[ns]!, `beta.${ns}`, out);
  return out;
}

/** `beta.memoryStores.mcpOAuthValidate` as the Python SDK spells it. */
const snake = (path: string): string => path.replace(/OAuth/g, "Oauth").replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" ? [] : testFiles(path);
    return /\.test\.ts$|\.py$/.test(e.name) ? [path] : [];
  });
}

interface OpenApiDoc {
  paths: Record<string, Record<string, { operationId?: string }>>;
}

/** The markdown table: method, route (or why none), tests that call it. */
export function methodTable(openapi: OpenApiDoc, testRoot: string, maxTests = 3): string {
  const routes = new Map<string, string>();
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const [method, op] of Object.entries(methods)) if (op.operationId !== undefined) routes.set(op.operationId, `${method.toUpperCase()} ${path}`);
  }
  const files = testFiles(testRoot).map((f) => ({ name: basename(f), text: readFileSync(f, "utf8") }));
  const rows = sdkMethods().map((m) => {
    const route = routes.get(m);
    const served = route !== undefined ? `\`${route}\`` : (CLIENT_SIDE[m] ?? "not served (404)");
    const calls = [`${m}(`, `${snake(m)}(`];
    const tests = files.filter((f) => calls.some((c) => f.text.includes(c))).map((f) => `\`${f.name}\``);
    return `| \`client.${m}\` | ${served} | ${tests.length === 0 ? "—" : tests.sort().slice(0, maxTests).join(", ")} |`;
  });
  return ["| SDK method | served as | tests that call it |", "| --- | --- | --- |", ...rows].join("\n");
}
