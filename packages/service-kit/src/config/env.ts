/**
 * The typed readers a config spec is built from: `env.port("MH_GRPC_PORT", { default: 15051 })`.
 * Each names its variable and says what it expected, so a problem reads like
 * `MH_GRPC_PORT="abc" is invalid (expected an integer port 0-65535)`.
 */
import type { EnvResult, EnvVar } from "./config.js";

export interface EnvOptions<T> {
  /** Used when the variable is unset or blank; without one the variable is required. */
  readonly default?: T;
  /** Hide the value in problem messages (tokens, passwords). */
  readonly secret?: boolean;
}

export interface RangeOptions<T> extends EnvOptions<T> {
  readonly min?: number;
  readonly max?: number;
}

export interface UrlOptions extends EnvOptions<string> {
  /** Accepted schemes without the colon, e.g. ["http", "https"]; any scheme when unset. */
  readonly protocols?: readonly string[];
}

/** What a parser returns for a value it cannot accept. */
const INVALID: unique symbol = Symbol("invalid");
type Parsed<T> = T | typeof INVALID;

function variable<T>(
  name: string,
  expected: string,
  opts: EnvOptions<T>,
  parse: (raw: string) => Parsed<T>,
): EnvVar<T> {
  return {
    name,
    read(raw): EnvResult<T> {
      if (raw === undefined) {
        return opts.default !== undefined
          ? { ok: true, value: opts.default }
          : { ok: false, problem: `${name} is not set (expected ${expected})` };
      }
      const value = parse(raw);
      if (value !== INVALID) return { ok: true, value };
      const shown = opts.secret === true ? "<redacted>" : JSON.stringify(hideUserinfo(raw));
      return { ok: false, problem: `${name}=${shown} is invalid (expected ${expected})` };
    },
  };
}

/** Masks the password of `scheme://user:password@host` so a bad URL never prints a secret. */
function hideUserinfo(raw: string): string {
  return raw.replace(/\/\/([^/:@]*):[^/@]*@/, "//$1:***@");
}

function parseInt10(raw: string, min: number, max: number): Parsed<number> {
  if (!/^-?\d+$/.test(raw)) return INVALID;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : INVALID;
}

function rangeText(min: number, max: number): string {
  if (min > Number.MIN_SAFE_INTEGER && max < Number.MAX_SAFE_INTEGER) return ` between ${min} and ${max}`;
  if (min > Number.MIN_SAFE_INTEGER) return ` >= ${min}`;
  if (max < Number.MAX_SAFE_INTEGER) return ` <= ${max}`;
  return "";
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const TRUE = new Set(["true", "1", "yes", "on"]);
const FALSE = new Set(["false", "0", "no", "off"]);

export const env = {
  /** Any non-blank string, optionally matching `pattern`. */
  string(name: string, opts: EnvOptions<string> & { readonly pattern?: RegExp } = {}): EnvVar<string> {
    const { pattern } = opts;
    const expected = pattern === undefined ? "a non-empty string" : `a string matching ${String(pattern)}`;
    return variable(name, expected, opts, (raw) => (pattern === undefined || pattern.test(raw) ? raw : INVALID));
  },

  /**
   * An absolute file path, as written. Any character but NUL and line breaks: a data directory
   * under a home such as "/Users/Jane Doe" holds a space.
   */
  absolutePath(name: string, opts: EnvOptions<string> = {}): EnvVar<string> {
    return variable(name, "an absolute path", opts, (raw) => (/^\/[^\0\r\n]*$/.test(raw) ? raw : INVALID));
  },

  /** A base-10 integer within [min, max]. */
  int(name: string, opts: RangeOptions<number> = {}): EnvVar<number> {
    const min = opts.min ?? Number.MIN_SAFE_INTEGER;
    const max = opts.max ?? Number.MAX_SAFE_INTEGER;
    return variable(name, `an integer${rangeText(min, max)}`, opts, (raw) => parseInt10(raw, min, max));
  },

  /** A TCP port; 0 asks the OS for an ephemeral one. */
  port(name: string, opts: EnvOptions<number> = {}): EnvVar<number> {
    return variable(name, "an integer port 0-65535", opts, (raw) => parseInt10(raw, 0, 65_535));
  },

  /** A duration in milliseconds: `1500` or `1500ms`, `30s`, `5m`, `1h`. */
  durationMs(name: string, opts: RangeOptions<number> = {}): EnvVar<number> {
    const min = opts.min ?? 0;
    const max = opts.max ?? Number.MAX_SAFE_INTEGER;
    const range = rangeText(opts.min ?? Number.MIN_SAFE_INTEGER, max);
    const expected = `a duration like 1500, 1500ms, 30s, 5m or 1h${range === "" ? "" : `,${range} ms`}`;
    return variable(name, expected, opts, (raw) => {
      const match = /^(\d+)(ms|s|m|h)?$/.exec(raw);
      if (match === null) return INVALID;
      const ms = Number(match[1]) * (DURATION_UNITS_MS[match[2] ?? "ms"] ?? 1);
      return Number.isSafeInteger(ms) && ms >= min && ms <= max ? ms : INVALID;
    });
  },

  /** true/false, 1/0, yes/no, on/off (any case). */
  bool(name: string, opts: EnvOptions<boolean> = {}): EnvVar<boolean> {
    return variable(name, "a boolean (true/false, 1/0, yes/no, on/off)", opts, (raw) => {
      const v = raw.toLowerCase();
      return TRUE.has(v) ? true : FALSE.has(v) ? false : INVALID;
    });
  },

  /** One of `values`, exactly. */
  enumOf<const V extends string>(name: string, values: readonly V[], opts: EnvOptions<V> = {}): EnvVar<V> {
    const allowed: ReadonlySet<string> = new Set(values);
    const isValue = (raw: string): raw is V => allowed.has(raw);
    return variable(name, `one of ${values.join(", ")}`, opts, (raw) => (isValue(raw) ? raw : INVALID));
  },

  /** A separated list (comma by default); items are trimmed and blanks dropped. */
  list(name: string, opts: EnvOptions<string[]> & { readonly separator?: string } = {}): EnvVar<string[]> {
    const separator = opts.separator ?? ",";
    return variable(name, `a "${separator}"-separated list`, opts, (raw) => {
      const items = raw.split(separator).map((s) => s.trim()).filter((s) => s !== "");
      return items.length > 0 ? items : INVALID;
    });
  },

  /** An absolute URL, returned as written. */
  url(name: string, opts: UrlOptions = {}): EnvVar<string> {
    const { protocols } = opts;
    const expected = protocols === undefined ? "an absolute URL" : `a ${protocols.join("|")} URL`;
    return variable(name, expected, opts, (raw) => {
      if (!URL.canParse(raw)) return INVALID;
      const scheme = new URL(raw).protocol.replace(/:$/, "");
      return protocols === undefined || protocols.includes(scheme) ? raw : INVALID;
    });
  },

  /** A URL that may be unset (e.g. an optional OTLP endpoint). */
  optionalUrl(name: string, opts: Omit<UrlOptions, "default"> = {}): EnvVar<string | undefined> {
    return env.optional(env.url(name, opts));
  },

  /** Makes any reader optional: unset or blank reads as undefined instead of a problem. */
  optional<T>(inner: EnvVar<T>): EnvVar<T | undefined> {
    return {
      name: inner.name,
      read: (raw) => (raw === undefined ? { ok: true, value: undefined } : inner.read(raw)),
    };
  },
} as const;
