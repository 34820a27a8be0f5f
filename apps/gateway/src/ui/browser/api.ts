/**
 * The page's calls to the gateway, with the API key the person entered, sent as `x-api-key` on
 * each fetch to this origin (as the SDK sends it); the gateway answers with the key's tenant's
 * objects only. The key never goes into a URL (so neither into history nor into a log line).
 *
 * Where the key is kept depends on where the page is served from. From a loopback address
 * (`mh dev` on 127.0.0.1, localhost, [::1]), the gateway and the browser are on one machine and
 * one person's: the key goes to localStorage, so a new tab or a restarted browser does not ask
 * again. From any other address it stays in sessionStorage (this tab only, gone when it closes),
 * since the machine or its browser profile may be shared.
 */

const KEY_ITEM = "mh-api-key";
/** The Managed Agents version the gateway serves (sent in case it requires the header). */
const BETA = "managed-agents-2026-04-01";

/** Whether the page is served from this machine's loopback interface. */
export function onLoopback(hostname: string = location.hostname): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

function keyStore(): Storage {
  return onLoopback() ? localStorage : sessionStorage;
}

export function storedKey(): string | undefined {
  try {
    return keyStore().getItem(KEY_ITEM) ?? undefined;
  } catch {
    return undefined; // storage disabled: the key is asked for on each load
  }
}

let memoryKey: string | undefined;

export function currentKey(): string | undefined {
  return memoryKey ?? storedKey();
}

export function storeKey(key: string): void {
  memoryKey = key;
  try {
    keyStore().setItem(KEY_ITEM, key);
  } catch {
    // kept in memory only
  }
}

export function forgetKey(): void {
  memoryKey = undefined;
  for (const store of [localStorage, sessionStorage]) {
    try {
      store.removeItem(KEY_ITEM);
    } catch {
      // nothing stored
    }
  }
}

/** An error answer of the gateway: its status and the message of its error body. */
export class HttpError extends Error {
  override readonly name = "HttpError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export function headers(extra: Record<string, string> = {}): Record<string, string> {
  const key = currentKey();
  // Our additions to the SDK's event shapes (seq above all, which the live view resumes from).
  return { ...(key === undefined ? {} : { "x-api-key": key }), "anthropic-beta": BETA, "mh-extensions": "true", ...extra };
}

/** The error of a non-2xx answer, with the message of the Anthropic error body when there is one. */
export async function errorOf(res: Response): Promise<HttpError> {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = (await res.json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === "string") message = body.error.message;
  } catch {
    // not JSON: keep the status line
  }
  return new HttpError(res.status, message);
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: headers(), cache: "no-store", ...(signal === undefined ? {} : { signal }) });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

/** `?a=1&b=x&ids=1&ids=2`, leaving out undefined values. */
export function query(params: Record<string, string | number | readonly string[] | undefined>): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value as readonly string[]) q.append(name, v);
    else q.append(name, String(value));
  }
  const text = q.toString();
  return text === "" ? "" : `?${text}`;
}
