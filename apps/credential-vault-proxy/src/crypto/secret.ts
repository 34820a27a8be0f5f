/**
 * A secret value that cannot leak by accident. It prints, logs, serialises and inspects as
 * "[secret]"; the only way to the bytes is `reveal()`, called at the one place a secret is used
 * (an Authorization header on its way out, the plaintext going into AES-GCM). Logs and errors are
 * safe by construction, not because someone remembered to redact a field.
 */
import { inspect } from "node:util";

const SHOWN = "[secret]";

export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The secret itself: only to put it on the wire or into the cipher. */
  reveal(): string {
    return this.#value;
  }

  get isEmpty(): boolean {
    return this.#value === "";
  }

  equals(other: Secret | undefined): boolean {
    return other !== undefined && other.#value === this.#value;
  }

  toString(): string {
    return SHOWN;
  }

  toJSON(): string {
    return SHOWN;
  }

  [inspect.custom](): string {
    return `Secret(${SHOWN})`;
  }
}

/** A Secret for a non-empty string, undefined for an empty one (proto3 has no "unset" string). */
export function secretOrUndefined(value: string | undefined): Secret | undefined {
  return value === undefined || value === "" ? undefined : new Secret(value);
}

/**
 * Replaces every occurrence of the secrets in `text` (a last line of defence for text that came
 * from elsewhere, such as an upstream server echoing a token back in an error or a tool result),
 * in each of the forms `secretForms` lists.
 */
export function scrub(text: string, secrets: ReadonlyArray<Secret | undefined>): string {
  let out = text;
  for (const form of secretForms(secrets)) out = out.split(form).join("[redacted]");
  return out;
}

/**
 * The spellings under which a request's secrets come back from a server that echoes the request:
 * as is, percent-encoded (a URL), form-encoded (a token request body), JSON-escaped, and inside
 * base64 (Basic auth of "client:secret", where the secret sits at any offset, so each of the three
 * alignments gives the characters that depend on the secret alone). Longest first, so a longer
 * form is replaced before a shorter one inside it could break it up. Secrets under 4 characters
 * are not looked for (they would redact ordinary text).
 */
export function secretForms(secrets: ReadonlyArray<Secret | undefined>): string[] {
  const forms = new Set<string>();
  for (const s of secrets) {
    const value = s?.reveal() ?? "";
    if (value.length < 4) continue;
    const texts = [value, encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2), JSON.stringify(value).slice(1, -1)];
    for (const t of texts) {
      forms.add(t);
      for (const b of base64Inner(t)) forms.add(b);
    }
  }
  return [...forms].filter((f) => f.length >= 4).sort((a, b) => b.length - a.length);
}

/** For offsets 0-2 in the encoded bytes: the base64 characters made of `text`'s bits only. */
function base64Inner(text: string): string[] {
  const bytes = Buffer.from(text, "utf8");
  const out: string[] = [];
  for (let k = 0; k < 3; k++) {
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64");
    const first = Math.ceil((8 * k) / 6);
    const end = Math.floor((8 * (k + bytes.length)) / 6);
    const inner = encoded.slice(first, end);
    out.push(inner, inner.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return out;
}
