/**
 * Secrets kept out of log lines by path, as pino's `redact` option took them (`token`,
 * `*.token`, `*.headers.authorization`, `headers["x-api-key"]`: a `*` stands for any key of one
 * level), but with the paths parsed once, when the logger is made. pino's redaction
 * (@pinojs/redact 0.4) ran every value of every line through each path starting with `*` and
 * parsed those paths again, character by character, on each call: a fifth of the gateway's heap
 * allocation per SDK turn went to its one access line (issue 31). Here a line whose keys name no
 * path costs a lookup per key, and only what is redacted is copied: the caller's objects are never
 * changed.
 */

export const CENSOR = "[redacted]";

/** One level of the paths: what a key redacts there, and the paths that go on below it. */
interface Level {
  readonly redact: Set<string>;
  readonly below: Map<string, Level>;
}

const ANY = "*";

const newLevel = (): Level => ({ redact: new Set(), below: new Map() });

/** `a.b["c-d"]` -> ["a", "b", "c-d"]; throws naming a path it cannot read. */
export function parsePath(path: string): string[] {
  const parts: string[] = [];
  const rx = /([^.[\]]+)|\[\s*(?:"([^"]*)"|'([^']*)')\s*\]|(\.)/gy;
  let m: RegExpExecArray | null;
  let expectKey = true;
  while ((m = rx.exec(path)) !== null) {
    if (m[4] !== undefined) {
      if (expectKey) break;
      expectKey = true;
      continue;
    }
    parts.push(m[1] ?? m[2] ?? m[3] ?? "");
    expectKey = false;
    if (rx.lastIndex === path.length) return parts;
  }
  throw new Error(`cannot read the redaction path ${JSON.stringify(path)}`);
}

export type Redactor = <T>(value: T) => T;

/** A function that returns `value` with the paths' values replaced by CENSOR (copied only where one is). */
export function redactor(paths: readonly string[]): Redactor {
  const root = newLevel();
  for (const path of paths) {
    const parts = parsePath(path);
    let level = root;
    for (const part of parts.slice(0, -1)) {
      let next = level.below.get(part);
      if (next === undefined) {
        next = newLevel();
        level.below.set(part, next);
      }
      level = next;
    }
    level.redact.add(parts[parts.length - 1]!);
  }
  return <T>(value: T): T => redactIn(value, [root]) as T;
}

/**
 * An object whose keys the paths may name. Errors too: one under any key but `err` (which is
 * serialized, then redacted again: logger.ts) goes out with its own fields, as pino's redact saw them.
 */
function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date) && !ArrayBuffer.isView(v);
}

/** A copy to redact in: an error stays an error (its prototype, message, stack and cause), so `err`'s serializer still reads it. */
function copyOf(value: Record<string, unknown>): Record<string, unknown> {
  if (!(value instanceof Error)) return { ...value };
  const copy = Object.create(Object.getPrototypeOf(value) as object) as Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(value)) Object.defineProperty(copy, key, Object.getOwnPropertyDescriptor(value, key)!);
  return copy;
}

/** `value` with what `levels` name redacted: itself when nothing is, else a copy of what changed. */
function redactIn(value: unknown, levels: readonly Level[]): unknown {
  if (!isRecord(value)) return value;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    let redact = false;
    let below: Level[] | undefined;
    for (const level of levels) {
      if (level.redact.has(key) || level.redact.has(ANY)) redact = true;
      const exact = level.below.get(key);
      if (exact !== undefined) (below ??= []).push(exact);
      const any = level.below.get(ANY);
      if (any !== undefined) (below ??= []).push(any);
    }
    const was = value[key];
    const now = redact ? (was === undefined ? was : CENSOR) : below === undefined ? was : redactIn(was, below);
    if (now !== was) {
      out ??= copyOf(value);
      out[key] = now;
    }
  }
  return out ?? value;
}
