/**
 * One prompt as a session, through the official SDK: create the session, send the message,
 * follow the stream (from seq 0, so opening it after sending misses nothing) until the turn
 * ends, rendering as it goes. Ctrl-C sends `user.interrupt` and waits a moment for the agent to
 * stop; a second Ctrl-C (or the wait running out) leaves at once.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { SessionCreateParams } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { PriceTable } from "@metaharness/gateway";
import type { Ending } from "../exit-codes.js";
import type { Output } from "../output.js";
import { LiveRenderer } from "../render/live.js";
import { clip, style } from "../render/style.js";
import { CLI_MARK } from "./defaults.js";
import { follow, seqOf } from "./follow.js";

/** How long, after Ctrl-C, the agent gets to stop before mh leaves anyway. */
export const INTERRUPT_GRACE_MS = 10_000;

export interface SessionRunOptions {
  readonly agentId: string;
  readonly environmentId: string;
  readonly prompt: string;
  /** Repositories (or other resources) the session starts with. */
  readonly resources?: SessionCreateParams["resources"];
  /** Stop following: the first signal interrupts the agent, a second one leaves at once. */
  readonly interrupts: Interrupts;
  /** How long the session's page can be opened: while "this run" lasts (an embedded stack), or as long as "the deployment". */
  readonly pageLasts?: "this run" | "the deployment";
  /** Model prices for the summary's cost estimate (MH_MODEL_PRICES over the defaults). */
  readonly prices?: PriceTable;
}

export interface SessionRunResult {
  readonly sessionId: string;
  readonly ending: Ending;
  readonly wallMs: number;
}

/** Delivers Ctrl-C to a run; `mh run` wires it to SIGINT/SIGTERM, tests call `interrupt()`. */
export class Interrupts {
  private listener: (() => void) | undefined;
  count = 0;

  /** False when nothing listens yet (the stack is still starting): then the caller just leaves. */
  interrupt(): boolean {
    this.count += 1;
    this.listener?.();
    return this.listener !== undefined;
  }

  onInterrupt(listener: () => void): void {
    this.listener = listener;
  }

  /** Nothing listens any more: a Ctrl-C makes the caller leave at once again. */
  clear(): void {
    this.listener = undefined;
  }
}

/** The session page of the gateway (apps/gateway/src/ui/routes.ts: /ui/sessions/:session_id). */
export function sessionPage(baseUrl: string, sessionId: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/ui/sessions/${encodeURIComponent(sessionId)}`;
}

export async function runSession(client: Anthropic, opts: SessionRunOptions, out: Output): Promise<SessionRunResult> {
  const started = Date.now();
  const s = style(out.color);
  const renderer = new LiveRenderer(out, opts.prices);
  const session = await client.beta.sessions.create({
    agent: opts.agentId,
    environment_id: opts.environmentId,
    title: clip(opts.prompt, 80),
    metadata: { [CLI_MARK]: "run" },
    ...(opts.resources === undefined || opts.resources.length === 0 ? {} : { resources: opts.resources }),
  });
  renderer.note(`session ${session.id}`);
  renderer.note(`page    ${sessionPage(client.baseURL, session.id)}${opts.pageLasts === "this run" ? "  (while this run lasts)" : ""}`);

  const leave = new AbortController();
  let graceTimer: NodeJS.Timeout | undefined;
  opts.interrupts.onInterrupt(() => {
    if (opts.interrupts.count > 1) {
      leave.abort();
      return;
    }
    renderer.note("interrupting… (Ctrl-C again to leave at once)");
    graceTimer = setTimeout(() => leave.abort(), INTERRUPT_GRACE_MS);
    client.beta.sessions.events.send(session.id, { events: [{ type: "user.interrupt" }] }).catch((err: unknown) => {
      renderer.note(`could not send the interrupt: ${err instanceof Error ? err.message : String(err)}`);
      leave.abort();
    });
  });

  let ending: Ending | undefined;
  // The stream opens before the prompt is sent: token previews are not replayed, so a stream
  // opened after it could miss the first tokens of a quick answer (seen in cli/run.test).
  let opened = (): void => undefined;
  const open = new Promise<void>((resolve) => (opened = resolve));
  const events = follow(client, session.id, {
    afterSeq: 0,
    deltas: true,
    signal: leave.signal,
    onOpen: () => opened(),
    onReconnect: (attempt) => renderer.note(`stream interrupted; reconnecting (${attempt})…`),
  })[Symbol.asyncIterator]();
  const firstEvent = events.next();
  try {
    // The first next() runs follow() up to its first event; an error there is thrown below.
    await Promise.race([open, firstEvent.then(() => undefined, () => undefined)]);
    const sent = await client.beta.sessions.events.send(session.id, {
      events: [{ type: "user.message", content: [{ type: "text", text: opts.prompt }] }],
    });
    const first = sent.data?.[0];
    const promptSeq = first === undefined ? 0 : (seqOf(first) ?? 0);
    for (let next = await firstEvent; next.done !== true; next = await events.next()) {
      const event = next.value;
      const end = renderer.handle(event);
      // A session may hold idle events from before this prompt; only a later one ends the run.
      if (end !== undefined && (end === "terminated" || (seqOf(event) ?? 0) > promptSeq)) {
        ending = end;
        break;
      }
    }
  } finally {
    clearTimeout(graceTimer);
    // Ends the stream (a pending next() included), then the generator.
    leave.abort();
    await firstEvent.catch(() => undefined);
    await events.return(undefined).catch(() => undefined);
    renderer.finish();
  }
  ending ??= opts.interrupts.count > 0 ? "interrupted" : "stream_ended";
  const wallMs = Date.now() - started;
  out.line();
  out.line(renderer.tally.summary(ending, wallMs, s));
  return { sessionId: session.id, ending, wallMs };
}
