/**
 * Simulated prompt caching, so usage looks like the real API's and a harness can show that its
 * turns hit the cache. Each `cache_control` breakpoint writes the hash of the prompt prefix up to
 * it (model included) for its TTL (5 minutes, or 1 hour). A later request reads the longest cached
 * prefix it finds at a breakpoint or up to LOOKBACK_BLOCKS blocks before one (the real API's
 * automatic prefix check); a hit refreshes the entry's TTL. Usage then splits the prompt as the
 * real API does: `cache_read_input_tokens` for the hit prefix, `cache_creation_input_tokens` from
 * there to the last breakpoint, `input_tokens` for the rest.
 */
import { createHash } from "node:crypto";
import type { Segment } from "./segments.js";
import { totalTokens } from "./segments.js";

export const LOOKBACK_BLOCKS = 20;
export const DEFAULT_MAX_CACHE_ENTRIES = 10_000;
const TTL_MS = { "5m": 5 * 60_000, "1h": 60 * 60_000 } as const;

export interface InputUsage {
  readonly input_tokens: number;
  readonly cache_creation_input_tokens: number;
  readonly cache_read_input_tokens: number;
  readonly cache_creation: { readonly ephemeral_5m_input_tokens: number; readonly ephemeral_1h_input_tokens: number };
}

export interface PromptCacheOptions {
  /** Prefixes shorter than this are not cached (the real API's minimum is 1024+ by model). Default 0. */
  readonly minTokens?: number;
  readonly maxEntries?: number;
  readonly now?: () => number;
}

interface Entry {
  expiresAt: number;
  readonly ttl: "5m" | "1h";
}

export class PromptCache {
  readonly #entries = new Map<string, Entry>();
  readonly #minTokens: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(opts: PromptCacheOptions = {}) {
    this.#minTokens = opts.minTokens ?? 0;
    this.#maxEntries = opts.maxEntries ?? DEFAULT_MAX_CACHE_ENTRIES;
    this.#now = opts.now ?? Date.now;
  }

  /** Accounts one successful request: reads and refreshes hits, writes its breakpoints. */
  account(model: string, segments: readonly Segment[]): InputUsage {
    const now = this.#now();
    const hash = createHash("sha256").update(model);
    const prefixHash: string[] = [];
    const prefixTokens: number[] = [];
    let tokens = 0;
    for (const s of segments) {
      hash.update(`\n${s.key.length}\n${s.key}`);
      tokens += s.tokens;
      prefixHash.push(hash.copy().digest("hex"));
      prefixTokens.push(tokens);
    }
    const breakpoints = segments.flatMap((s, i) =>
      s.breakpoint !== undefined && (prefixTokens[i] ?? 0) >= this.#minTokens ? [i] : [],
    );
    const hit = this.#longestHit(breakpoints, prefixHash, now);
    const lastBreakpoint = breakpoints.at(-1);
    const read = hit === undefined ? 0 : (prefixTokens[hit] ?? 0);
    const written = lastBreakpoint === undefined ? 0 : (prefixTokens[lastBreakpoint] ?? 0) - read;
    const byTtl = { "5m": 0, "1h": 0 };
    let covered = read;
    for (const i of breakpoints) {
      const upTo = prefixTokens[i] ?? 0;
      const ttl = segments[i]?.breakpoint ?? "5m";
      if (upTo > covered) byTtl[ttl] += upTo - covered;
      covered = Math.max(covered, upTo);
      this.#put(prefixHash[i] ?? "", ttl, now);
    }
    if (hit !== undefined) {
      const entry = this.#entries.get(prefixHash[hit] ?? "");
      if (entry !== undefined) entry.expiresAt = now + TTL_MS[entry.ttl];
    }
    return {
      input_tokens: totalTokens(segments) - read - written,
      cache_creation_input_tokens: written,
      cache_read_input_tokens: read,
      cache_creation: { ephemeral_5m_input_tokens: byTtl["5m"], ephemeral_1h_input_tokens: byTtl["1h"] },
    };
  }

  #longestHit(breakpoints: readonly number[], prefixHash: readonly string[], now: number): number | undefined {
    let best: number | undefined;
    for (const bp of breakpoints) {
      for (let j = bp; j >= Math.max(0, bp - LOOKBACK_BLOCKS); j--) {
        if (best !== undefined && j <= best) break;
        const entry = this.#entries.get(prefixHash[j] ?? "");
        if (entry !== undefined && entry.expiresAt > now) {
          best = j;
          break;
        }
      }
    }
    return best;
  }

  #put(key: string, ttl: "5m" | "1h", now: number): void {
    const existing = this.#entries.get(key);
    const keepTtl = existing !== undefined && existing.expiresAt > now && existing.ttl === "1h" ? "1h" : ttl;
    this.#entries.delete(key);
    this.#entries.set(key, { expiresAt: now + TTL_MS[keepTtl], ttl: keepTtl });
    if (this.#entries.size <= this.#maxEntries) return;
    for (const [k, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(k);
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value);
    }
  }
}
