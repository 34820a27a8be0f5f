/**
 * Test helpers shared by the bus tests: a handler that records what it receives and lets a test
 * wait for a condition on it (resolved from inside the handler, never by sleeping), record
 * builders and a recording logger. Not exported from the package.
 */
import type { BusLogger, BusMessage, BusRecord } from "./types.js";

const utf8 = new TextEncoder();
const text = new TextDecoder();

export function record(topic: string, key: string, body: string, headers: Record<string, string> = {}): BusRecord {
  return { topic, key, value: utf8.encode(body), headers };
}

export function body(message: BusMessage): string {
  return text.decode(message.value);
}

/** A unique, Kafka-legal name for this run: topics and groups never collide across runs. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

export interface Logged {
  readonly level: "info" | "warn" | "error";
  readonly obj: object;
  readonly msg: string;
}

/** A BusLogger that keeps what it is given, for assertions. */
export function recordingLogger(): BusLogger & { readonly lines: Logged[] } {
  const lines: Logged[] = [];
  return {
    lines,
    info: (obj, msg) => lines.push({ level: "info", obj, msg }),
    warn: (obj, msg) => lines.push({ level: "warn", obj, msg }),
    error: (obj, msg) => lines.push({ level: "error", obj, msg }),
  };
}

interface Waiter {
  readonly until: (messages: readonly BusMessage[]) => boolean;
  readonly resolve: () => void;
}

export class Collector {
  readonly messages: BusMessage[] = [];
  private waiters: Waiter[] = [];

  /** Pass as the subscription's handler. `before` may throw to fail a delivery. */
  handler(before?: (message: BusMessage) => void): (message: BusMessage) => Promise<void> {
    return (message) => {
      before?.(message);
      this.messages.push(message);
      this.check();
      return Promise.resolve();
    };
  }

  /** Resolves when `until` holds; rejects after timeoutMs with what was received so far. */
  waitFor(until: (messages: readonly BusMessage[]) => boolean, timeoutMs: number, what: string): Promise<void> {
    if (until(this.messages)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        until,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${this.messages.length}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Messages grouped by key, in arrival order. */
  byKey(): Map<string, BusMessage[]> {
    const out = new Map<string, BusMessage[]>();
    for (const m of this.messages) {
      const list = out.get(m.key) ?? [];
      if (list.length === 0) out.set(m.key, list);
      list.push(m);
    }
    return out;
  }

  private check(): void {
    const done = this.waiters.filter((w) => w.until(this.messages));
    this.waiters = this.waiters.filter((w) => !done.includes(w));
    for (const w of done) w.resolve();
  }
}
