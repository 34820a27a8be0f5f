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
 * from elsewhere, such as an upstream server echoing a token back in an error or a tool result).
 */
export function scrub(text: string, secrets: ReadonlyArray<Secret | undefined>): string {
  let out = text;
  for (const s of secrets) {
    if (s === undefined || s.reveal().length < 4) continue;
    out = out.split(s.reveal()).join("[redacted]");
  }
  return out;
}
