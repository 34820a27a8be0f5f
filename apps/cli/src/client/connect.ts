/**
 * Which deployment a command talks to, and the official SDK client for it. Flags first, then
 * MH_URL / MH_API_KEY, then the local `mh dev` (the address it wrote in its data directory, else
 * its default one, and the key it keeps there). Only `baseURL` and the key differ from talking to Anthropic.
 */
import Anthropic, { type Middleware } from "@anthropic-ai/sdk";
import { Address, MhError } from "@metaharness/errors";
import { readDevAddress } from "../stack/dev-address.js";
import { defaultDataDir } from "../stack/embedded.js";
import { readDevKey } from "../stack/dev-key.js";

/** Where `mh dev` listens unless told otherwise. */
export const DEV_PORT = 8080;
export const DEV_URL = `http://127.0.0.1:${DEV_PORT}`;

export interface Target {
  readonly url: string;
  readonly apiKey: string;
}

export interface TargetFlags {
  readonly url?: string | undefined;
  readonly apiKey?: string | undefined;
}

/** The URL named by a flag or MH_URL; undefined when neither names one. */
export function explicitUrl(flags: TargetFlags, env: NodeJS.ProcessEnv): string | undefined {
  const url = flags.url ?? env["MH_URL"];
  return url === undefined || url === "" ? undefined : url;
}

export async function resolveTarget(flags: TargetFlags, env: NodeJS.ProcessEnv = process.env): Promise<Target> {
  const dataDir = defaultDataDir(env);
  // A running mh dev says where it listens (--port 0 included); without one, its default address.
  const url = explicitUrl(flags, env) ?? (await readDevAddress(dataDir))?.url ?? DEV_URL;
  // "localhost:8080" parses, with "localhost:" as its scheme: only http and https are a gateway.
  const scheme = URL.canParse(url) ? new URL(url).protocol : "";
  if (scheme !== "http:" && scheme !== "https:") {
    throw new MhError("INVALID_ARGUMENT", `--url: ${JSON.stringify(url)} is not an http or https URL (e.g. http://127.0.0.1:${DEV_PORT})`, { field: "url" });
  }
  const apiKey = flags.apiKey ?? nonEmpty(env["MH_API_KEY"]) ?? (await readDevKey(dataDir));
  if (apiKey === undefined) {
    throw new MhError(
      "UNAUTHENTICATED",
      `no API key for ${url}: pass --api-key or set MH_API_KEY (a local \`mh dev\` keeps its key in ${dataDir}/api-key)`,
    );
  }
  return { url: url.replace(/\/+$/, ""), apiKey };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

/**
 * How long a request may wait for the gateway's answer to begin (the SDK clears its timer once the
 * headers arrive, so an event stream is not cut): the SDK's default, ten minutes a try, left a
 * command against a gateway that took the connection and never answered silent for forty.
 */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * mh reads Meta-Harness's additions to the SDK's events (seq to resume, the sandbox.* events, the
 * stop reason "interrupted"), so it asks for them (the gateway's MH-Extensions header); another
 * deployment of the API ignores the header.
 */
export function sdkClient(target: Target): Anthropic {
  return new Anthropic({
    apiKey: target.apiKey,
    baseURL: target.url,
    maxRetries: 3,
    timeout: REQUEST_TIMEOUT_MS,
    middleware: [refusedAtOnce, answersAsGateway],
    defaultHeaders: { "MH-Extensions": "true" },
  });
}

/** What to check when no gateway answers (main.ts adds it to the SDK's connection errors). */
export const NO_GATEWAY_HINT = "no gateway answered: is `mh dev` running, or do --url / MH_URL name the right one?";

/**
 * A refused connection means nothing listens there: the SDK's retries (about 5 s of backoff)
 * cannot change that, so it is said at once. Thrown from middleware without the fetch error as
 * its cause, the SDK passes it on as it is; timeouts and dropped connections keep their retries.
 */
export const refusedAtOnce: Middleware = async (request, next) => {
  try {
    return await next(request);
  } catch (err) {
    if (!refused(err)) throw err;
    const origin = new URL(request.url).origin;
    throw new MhError("UNAVAILABLE", `nothing listens at ${origin} (connection refused): ${NO_GATEWAY_HINT}`, { details: Address.of({ url: origin }) });
  }
};

/** ECONNREFUSED anywhere in the error's causes (undici: "fetch failed", caused by it, or by an AggregateError of one per address). */
function refused(err: unknown, depth = 0): boolean {
  if (typeof err !== "object" || err === null || depth > 5) return false;
  const { code, cause, errors } = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (code === "ECONNREFUSED") return true;
  if (Array.isArray(errors) && errors.length > 0 && errors.every((e) => refused(e, depth + 1))) return true;
  return refused(cause, depth + 1);
}

const API_TYPES = /^(application\/json|text\/event-stream)\b/i;

/**
 * A gateway answers JSON or an event stream. The SDK reads anything else at 2xx as text, so a
 * URL serving a web page read as "no sessions yet". Thrown from middleware, the refusal reaches
 * the command as it is, without the SDK's retries.
 */
export const answersAsGateway: Middleware = async (request, next) => {
  const response = await next(request);
  const type = response.headers.get("content-type") ?? "";
  if (response.ok && response.status !== 204 && type !== "" && !API_TYPES.test(type)) {
    await response.body?.cancel();
    const origin = new URL(request.url).origin;
    throw new MhError(
      "FAILED_PRECONDITION",
      `${origin} answered ${response.status} with ${type.split(";")[0] ?? type}, not as the Claude Managed Agents API: do --url / MH_URL name a Meta-Harness gateway?`,
      { field: "url" },
    );
  }
  return response;
};
