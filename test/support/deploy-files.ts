/**
 * What the deploy-files test needs to read infra/compose and infra/k8s: each service's config
 * loader by the command that starts it, `${VAR:-default}` interpolation as compose does it, and
 * the certificates' names.
 */
import { X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { loadConfig as credentialProxyConfig } from "@metaharness/credential-vault-proxy";
import { loadConfig as gatewayConfig, loadUiConfig } from "@metaharness/gateway";
import { loadConfig as harnessConfig } from "@metaharness/harness";
import { loadConfig as offlineModelConfig } from "@metaharness/offline-model";
import { loadConfig as brokerConfig } from "@metaharness/sandbox-broker";
import { ConfigError } from "@metaharness/service-kit/config";
import { loadConfig as sessionLogConfig } from "@metaharness/session-log";

type Loader = (env: Record<string, string>) => unknown;

/** Each service's config loader, by the script its container runs (the gateway's session page reads its own part). */
export const LOADERS: Readonly<Record<string, Loader>> = {
  "apps/session-log/dist/main.js": sessionLogConfig,
  "apps/credential-vault-proxy/dist/main.js": credentialProxyConfig,
  "apps/sandbox-broker/dist/main.js": brokerConfig,
  "apps/harness/dist/main.js": harnessConfig,
  "apps/gateway/dist/main.js": (env) => [gatewayConfig(env), loadUiConfig(env)],
  "packages/offline-model/dist/main.js": offlineModelConfig,
};

/**
 * The variables the service's loader reads when given `env` (it reads every one of its spec
 * whether set or not), so a setting a deploy file gives that no loader reads (a renamed or
 * misspelt variable, silently ignored by the service) can be named.
 */
export function variablesRead(script: string, env: Record<string, string>): Set<string> {
  const load = LOADERS[script];
  if (load === undefined) throw new Error(`no config loader for ${script}`);
  const read = new Set<string>();
  const source = new Proxy(env, {
    get(target, key) {
      if (typeof key === "string") read.add(key);
      return target[key as string];
    },
  });
  try {
    load(source);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
  }
  return read;
}

/** What the service's loader finds wrong with `env` (nothing: []). */
export function configProblems(script: string, env: Record<string, string>): string[] {
  const load = LOADERS[script];
  if (load === undefined) return [`no config loader for ${script}`];
  try {
    load(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

/** Compose's interpolation: `${VAR:-default}` takes the default, `${VAR:?message}` the value given. */
export function interpolate(value: string, given: Readonly<Record<string, string>>): string {
  return value.replace(/\$\{([A-Z_][A-Z0-9_]*)(?::([-?])([^}]*))?\}/g, (_m, name: string, op: string | undefined, arg: string | undefined) => {
    const v = given[name];
    if (v !== undefined) return v;
    if (op === "-") return arg ?? "";
    throw new Error(`\${${name}} is required: ${arg ?? ""}`);
  });
}

/** The DNS names a PEM certificate is valid for. */
export async function dnsNames(pemFile: string): Promise<string[]> {
  const cert = new X509Certificate(await readFile(pemFile));
  return (cert.subjectAltName ?? "")
    .split(", ")
    .filter((n) => n.startsWith("DNS:"))
    .map((n) => n.slice(4));
}

/** `host:port` (an address setting) or the host and port of a URL; undefined for anything else. */
export function endpointOf(value: string): { host: string; port: number } | undefined {
  const url = /^[a-z]+:\/\//.test(value) ? new URL(value) : new URL(`grpc://${value}`);
  if (url.hostname === "" || url.port === "") return undefined;
  return { host: url.hostname, port: Number(url.port) };
}
