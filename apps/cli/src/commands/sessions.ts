/**
 * `mh sessions ls | show <id> | events <id> | tail <id> | transfer <id> --to <id>`: sessions of any
 * deployment, through the official SDK (`transfer` through its `client.post`, Meta-Harness's own
 * route: the session's sandbox, with its files, handed to another session). `tail` prints the last events, then follows the session live, reconnecting with
 * resume (after_seq) when the connection drops, until the session terminates or Ctrl-C.
 */
import { parseArgs } from "node:util";
import Anthropic from "@anthropic-ai/sdk";
import { MhError } from "@metaharness/errors";
import { resolveTarget, sdkClient } from "../client/connect.js";
import { follow, seqOf, type StreamEvent } from "../client/follow.js";
import type { Interrupts } from "../client/session-run.js";
import { EXIT, type ExitCode } from "../exit-codes.js";
import type { Output } from "../output.js";
import { formatEvent } from "../render/event-line.js";
import { clip, count, style } from "../render/style.js";

const SUBCOMMANDS: readonly string[] = ["ls", "list", "show", "events", "tail", "transfer"];

/** One set of options for every subcommand; each uses the ones that concern it. */
const OPTIONS = {
  url: { type: "string" },
  "api-key": { type: "string" },
  limit: { type: "string" },
  all: { type: "boolean" },
  json: { type: "boolean" },
  lines: { type: "string", short: "n" },
  to: { type: "string" },
  sandbox: { type: "string" },
} as const;

interface Values {
  readonly limit?: string | undefined;
  readonly all?: boolean | undefined;
  readonly json?: boolean | undefined;
  readonly lines?: string | undefined;
  readonly to?: string | undefined;
  readonly sandbox?: string | undefined;
}

function sessionId(positionals: string[], command: string): string {
  const id = positionals[0];
  if (id === undefined) throw new MhError("INVALID_ARGUMENT", `mh sessions ${command} needs a session id`, { field: "session_id" });
  return id;
}

/** A count given as `flag` ("--limit", "-n/--lines"), which the refusal names. */
function countOf(raw: string | undefined, fallback: number, max: number, flag = "--limit"): number {
  const n = raw === undefined ? fallback : /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new MhError("INVALID_ARGUMENT", `${flag}: ${JSON.stringify(raw)} is not an integer from 1 to ${max}`, { field: flag.replace(/^.*--/, "") });
  }
  return n;
}

async function ls(client: Anthropic, values: Values, out: Output): Promise<ExitCode> {
  const limit = countOf(values.limit, 20, 1000);
  const s = style(out.color);
  // The first page before the header: a gateway that does not answer gets its one line alone.
  const page = await client.beta.sessions.list({ limit: Math.min(limit, 100), include_archived: values.all === true });
  out.line(s.dim(`${"id".padEnd(32)} ${"status".padEnd(11)} ${"created".padEnd(20)} ${"tokens in/out".padEnd(16)} title`));
  let shown = 0;
  for await (const session of page) {
    const tokens = `${count(session.usage.input_tokens ?? 0)}/${count(session.usage.output_tokens ?? 0)}`;
    out.line(`${session.id.padEnd(32)} ${session.status.padEnd(11)} ${session.created_at.slice(0, 19).padEnd(20)} ${tokens.padEnd(16)} ${clip(session.title ?? "", 50)}`);
    if (++shown >= limit) break;
  }
  if (shown === 0) out.line(s.dim("no sessions yet: mh run \"...\" starts one"));
  return EXIT.ok;
}

async function show(client: Anthropic, id: string, out: Output): Promise<ExitCode> {
  const session = await client.beta.sessions.retrieve(id).catch((err: unknown) => {
    if (err instanceof Anthropic.NotFoundError) throw new MhError("NOT_FOUND", `no session ${JSON.stringify(id)} at ${client.baseURL} (mh sessions ls lists them)`, { cause: err });
    throw err;
  });
  out.line(JSON.stringify(session, null, 2));
  return EXIT.ok;
}

async function events(client: Anthropic, id: string, values: Values, out: Output): Promise<ExitCode> {
  const limit = values.limit === undefined ? Number.POSITIVE_INFINITY : countOf(values.limit, 1000, 1_000_000);
  let shown = 0;
  for await (const event of client.beta.sessions.events.list(id, { limit: 1000 })) {
    out.line(values.json === true ? JSON.stringify(event) : formatEvent(event, out.columns, style(out.color)));
    if (++shown >= limit) break;
  }
  return EXIT.ok;
}

async function tail(client: Anthropic, id: string, values: Values, out: Output, interrupts: Interrupts): Promise<ExitCode> {
  const lines = values.lines === undefined ? 10 : countOf(values.lines, 10, 1000, "-n/--lines");
  const s = style(out.color);
  const session = await client.beta.sessions.retrieve(id);
  const recent: StreamEvent[] = [];
  for await (const event of client.beta.sessions.events.list(id, { limit: lines, order: "desc" })) {
    recent.unshift(event);
    if (recent.length >= lines) break;
  }
  for (const event of recent) out.line(formatEvent(event, out.columns, s));
  // A session that waits says so, or a quiet terminal reads as a stuck one.
  const idle = recent.findLast((e) => e.type === "session.status_idle");
  if (session.status === "idle") out.line(s.dim(idleCue(idle)));
  const leave = new AbortController();
  interrupts.onInterrupt(() => leave.abort());
  let after = recent.length === 0 ? 0 : (seqOf(recent[recent.length - 1]!) ?? 0);
  const live = follow(client, id, {
    afterSeq: after,
    signal: leave.signal,
    // The last seq printed, not the one it started after.
    onReconnect: (attempt) => out.error(s.dim(`connection lost; resuming after seq ${after} (${attempt})…`)),
  });
  // Only stored events: previews and heartbeats carry no seq.
  for await (const event of live) {
    const seq = seqOf(event);
    if (seq === undefined) continue;
    out.line(formatEvent(event, out.columns, s));
    if (event.type === "session.status_idle") out.line(s.dim(idleCue(event)));
    after = seq;
  }
  return EXIT.ok;
}

/** What the gateway answers a transfer (apps/gateway src/sessions/transfer.ts). */
interface SandboxTransfer {
  readonly sandbox_id: string;
  readonly from_session_id: string;
  readonly to_session_id: string;
}

async function transfer(client: Anthropic, id: string, values: Values, out: Output): Promise<ExitCode> {
  if (values.to === undefined || values.to === "") throw new MhError("INVALID_ARGUMENT", "mh sessions transfer needs --to SESSION_ID, the session that takes the sandbox", { field: "to" });
  const body = { to_session_id: values.to, ...(values.sandbox === undefined ? {} : { sandbox_id: values.sandbox }) };
  const done = await client.post<SandboxTransfer>(`/v1/sessions/${encodeURIComponent(id)}/sandbox/transfer`, { body });
  out.line(values.json === true ? JSON.stringify(done) : `sandbox ${done.sandbox_id} of ${done.from_session_id} now belongs to ${done.to_session_id}, with its files`);
  return EXIT.ok;
}

/** "      ⋯ idle, waiting for a message (Ctrl-C to leave)", after what made the session idle. */
export function idleCue(idle: StreamEvent | undefined): string {
  const reason = idle?.type === "session.status_idle" ? idle.stop_reason : undefined;
  const waiting =
    reason === undefined || reason.type === "end_turn"
      ? "waiting for a message"
      : reason.type === "requires_action"
        ? `waiting for the client (${reason.event_ids.length} tool ${reason.event_ids.length === 1 ? "call" : "calls"} to answer)`
        : `stopped: ${reason.type.replaceAll("_", " ")}; waiting for a message`;
  return `      ⋯ idle, ${waiting} (Ctrl-C to leave)`;
}

export async function sessions(args: string[], out: Output, interrupts: Interrupts, env: NodeJS.ProcessEnv = process.env): Promise<ExitCode> {
  const [sub, ...rest] = args;
  if (sub === undefined || !SUBCOMMANDS.includes(sub)) {
    throw new MhError("INVALID_ARGUMENT", `mh sessions: unknown subcommand ${JSON.stringify(sub ?? "")} (ls, show, events, tail, transfer)`, { field: "subcommand" });
  }
  const { values, positionals } = parseArgs({ args: rest, allowPositionals: true, options: OPTIONS });
  const client = sdkClient(await resolveTarget({ url: values.url, apiKey: values["api-key"] }, env));
  switch (sub) {
    case "ls":
    case "list":
      return ls(client, values, out);
    case "show":
      return show(client, sessionId(positionals, "show"), out);
    case "events":
      return events(client, sessionId(positionals, "events"), values, out);
    case "tail":
      return tail(client, sessionId(positionals, "tail"), values, out, interrupts);
    case "transfer":
      return transfer(client, sessionId(positionals, "transfer"), values, out);
    default:
      return EXIT.usage;
  }
}
