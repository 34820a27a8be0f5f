/**
 * What every fault test checks at its end, whatever it broke: each session is whole. Its events are
 * numbered 1..n without a gap or a repeat, no event id is written twice, every tool use has exactly
 * one result (and no result is without its use), and the sandbox broker's call ledger
 * (sandbox_calls) ran no tool use twice, not even in two sandboxes, nor one the log never asked for.
 */
import type { Event } from "@metaharness/proto";
import pg from "pg";

export interface SessionFigures {
  readonly events: number;
  readonly toolUses: number;
  /** Results whose outcome the broker could not know (it restarted while the call ran). */
  readonly interrupted: number;
  readonly errors: number;
}

/** The problems found in `sessions` (none when whole), and their figures. */
export async function wholeness(
  sessions: ReadonlyMap<string, readonly Event[]>,
  brokerDbUrl: string,
): Promise<{ problems: string[]; figures: SessionFigures }> {
  const problems: string[] = [];
  const figures = { events: 0, toolUses: 0, interrupted: 0, errors: 0 };
  // The offline model's ids are deterministic: two sessions of one scenario use the same ones.
  const useIds = new Set<string>();
  for (const [sessionId, events] of sessions) {
    const say = (what: string) => problems.push(`${sessionId}: ${what}`);
    figures.events += events.length;
    events.forEach((e, i) => {
      if (e.seq !== i + 1) say(`event ${i + 1} has seq ${e.seq}`);
    });
    if (new Set(events.map((e) => e.id)).size !== events.length) say("an event id is written twice");
    const results = new Map<string, number>();
    for (const e of events) {
      const p = e.payload;
      if (p?.$case === "agentToolUse" || p?.$case === "agentMcpToolUse") {
        useIds.add(`${sessionId} ${e.id}`);
        results.set(e.id, results.get(e.id) ?? 0);
        figures.toolUses++;
      } else if (p?.$case === "agentToolResult" || p?.$case === "agentMcpToolResult") {
        const id = p.$case === "agentToolResult" ? p.value.toolUseId : p.value.mcpToolUseId;
        if (!results.has(id)) say(`result ${e.seq} answers ${id}, which is no earlier tool use`);
        results.set(id, (results.get(id) ?? 0) + 1);
        if (JSON.stringify(p.value).includes("the broker restarted while it ran")) figures.interrupted++;
      } else if (p?.$case === "sessionError") {
        figures.errors++;
      }
    }
    for (const [id, n] of results) if (n !== 1) say(`tool use ${id} has ${n} results`);
  }
  const db = new pg.Client({ connectionString: brokerDbUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ session_id: string; call_id: string; runs: number; sandboxes: string }>(
      `SELECT session_id, call_id, count(*)::int AS runs, string_agg(sandbox_id, ',') AS sandboxes
         FROM sandbox_calls WHERE session_id = ANY($1) GROUP BY session_id, call_id`,
      [[...sessions.keys()]],
    );
    for (const r of rows) {
      if (r.runs > 1) problems.push(`${r.session_id}: call ${r.call_id} ran ${r.runs} times (sandboxes ${r.sandboxes})`);
      if (!useIds.has(`${r.session_id} ${r.call_id}`)) problems.push(`${r.session_id}: call ${r.call_id} ran, but the session never asked for it`);
    }
  } finally {
    await db.end();
  }
  return { problems, figures };
}

/** Percentiles of `values` (ms), for the figures the fault tests print. */
export function percentiles(values: readonly number[]): string {
  if (values.length === 0) return "none";
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return `p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${sorted.at(-1)} ms (n=${sorted.length})`;
}

/** The tool uses of `events` still without a result. */
export function openToolUses(events: readonly Event[]): string[] {
  const answered = new Set(events.flatMap((e) => (e.payload?.$case === "agentToolResult" ? [e.payload.value.toolUseId] : [])));
  return events.filter((e) => e.type === "agent.tool_use" && !answered.has(e.id)).map((e) => e.id);
}

/** The turn ended: the last status is idle, after an answer (a sandbox.lost may come after it). */
export function turnEnded(events: readonly Event[], answers = 1): boolean {
  return (
    events.filter((e) => e.type.startsWith("session.status_")).at(-1)?.type === "session.status_idle" &&
    events.filter((e) => e.type === "agent.message").length >= answers
  );
}

interface Watchable {
  events(sessionId: string): Promise<Event[]>;
  waitFor(sessionId: string, until: (events: Event[]) => boolean, timeoutMs?: number): Promise<Event[]>;
}

/** How many events each session has now. */
export async function countEvents(stack: Watchable, sessions: readonly string[]): Promise<Map<string, number>> {
  return new Map(await Promise.all(sessions.map(async (id) => [id, (await stack.events(id)).length] as const)));
}

/**
 * Waits until every session's turn ended (`done`), and measures for each the time from `since`
 * to its first event after the `before` counts: how long the fault held it up.
 */
export async function recovery(
  stack: Watchable,
  before: ReadonlyMap<string, number>,
  since: number,
  timeoutMs: number,
  done: (events: Event[]) => boolean = (e) => turnEnded(e),
): Promise<{ sessions: Map<string, Event[]>; nextEventMs: number[] }> {
  const sessions = new Map<string, Event[]>();
  const nextEventMs: number[] = [];
  await Promise.all(
    [...before].map(async ([id, count]) => {
      let first: number | undefined;
      const events = await stack.waitFor(
        id,
        (e) => {
          if (first === undefined && e.length > count) first = Date.now() - since;
          return done(e);
        },
        timeoutMs,
      );
      if (first !== undefined) nextEventMs.push(first);
      sessions.set(id, events);
    }),
  );
  return { sessions, nextEventMs };
}
