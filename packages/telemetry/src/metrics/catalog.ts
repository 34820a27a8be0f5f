/**
 * Every metric Meta-Harness exports, in one table: its OpenTelemetry name (the semantic
 * conventions' where one exists: GenAI, RPC, HTTP, messaging; `metaharness.*` otherwise), kind,
 * unit, the service that records it, and the only attribute keys it may carry. Services record
 * through the typed instruments of instruments.ts, which accept exactly these keys, so no session
 * id or user input can become a label (cardinality stays bounded by construction); the dashboards,
 * alert rules, docs/operations.md and the tests read the same table.
 */

export type MetricKind = "counter" | "updown" | "histogram" | "gauge";

export type MetricService = "harness" | "session-log" | "sandbox-broker" | "credential-vault-proxy" | "gateway" | "every service";

export interface MetricDef<L extends string = string> {
  readonly name: string;
  readonly kind: MetricKind;
  /** UCUM, as the conventions write it: `s`, `{token}`, `{session}`. */
  readonly unit: string;
  readonly service: MetricService;
  readonly description: string;
  readonly labels: readonly L[];
  /** Histogram bucket bounds, in `unit`. */
  readonly buckets?: readonly number[];
}

function def<const L extends string>(d: MetricDef<L>): MetricDef<L> {
  return d;
}

/** Latencies from a millisecond to minutes (a model request, a sandbox's package layer). */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320];
/** Fast paths: an append, an HTTP request. */
const FAST_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576];
const BATCH = [1, 2, 4, 8, 16, 32, 64, 128, 256];

export const METRICS = {
  // ---- harness: the model ------------------------------------------------------------------------
  modelDuration: def({
    name: "gen_ai.client.operation.duration", kind: "histogram", unit: "s", service: "harness", buckets: SECONDS,
    description: "One model request, retries included, from the call to the stream's end; error.type is set when it failed.",
    labels: ["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "error.type"],
  }),
  ttft: def({
    name: "gen_ai.client.operation.time_to_first_chunk", kind: "histogram", unit: "s", service: "harness", buckets: SECONDS,
    description: "Time to first token: from the model request to its first streamed chunk (the model's and the network's part).",
    labels: ["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model"],
  }),
  modelRetries: def({
    name: "metaharness.gen_ai.retries", kind: "counter", unit: "{retry}", service: "harness",
    description: "Model requests retried after a retryable failure (overloaded, rate limited, a dropped stream), by its error type.",
    labels: ["gen_ai.request.model", "error.type"],
  }),
  tokens: def({
    name: "gen_ai.client.token.usage", kind: "histogram", unit: "{token}", service: "harness", buckets: TOKENS,
    description: "Tokens of one model request by type: input (cache reads and writes excluded), output, cache_read, cache_creation.",
    labels: ["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.token.type", "tenant"],
  }),
  // ---- harness: turns, tools, sessions -------------------------------------------------------------
  turnDuration: def({
    name: "metaharness.turn.duration", kind: "histogram", unit: "s", service: "harness", buckets: SECONDS,
    description: "A turn, from the user's event that started it to the session going idle, by why it stopped.",
    labels: ["gen_ai.request.model", "stop_reason"],
  }),
  overhead: def({
    name: "metaharness.turn.platform_overhead", kind: "histogram", unit: "s", service: "harness", buckets: FAST_SECONDS,
    description: "What the platform added to a turn: its duration less the model requests' and the tool calls' time.",
    labels: ["gen_ai.request.model"],
  }),
  toolCalls: def({
    name: "metaharness.tool.calls", kind: "counter", unit: "{call}", service: "harness",
    description: "Tool calls the harness ran, by tool (a built-in name; every MCP tool counts as `mcp`), where and outcome (ok, error, denied).",
    labels: ["gen_ai.tool.name", "tool_kind", "outcome"],
  }),
  sessionsActive: def({
    name: "metaharness.sessions.active", kind: "updown", unit: "{session}", service: "harness",
    description: "Sessions this harness drives now, each under its lease (not those it keeps between turns: sessions.lingering).",
    labels: [],
  }),
  sessionsLingering: def({
    name: "metaharness.sessions.lingering", kind: "updown", unit: "{session}", service: "harness",
    description: "Sessions this harness keeps after their turn for their next input (MH_IDLE_LINGER_MS), each under its lease, renewed once a second.",
    labels: [],
  }),
  leaseTakeovers: def({
    name: "metaharness.lease.takeovers", kind: "counter", unit: "{lease}", service: "session-log",
    description: "Leases taken from a harness that died (via holder_gone: its line to the log ended, the log freed them) or stalled (via expired: another harness took the expired lease).",
    labels: ["via"],
  }),
  // ---- session log ---------------------------------------------------------------------------------
  appendDuration: def({
    name: "metaharness.log.append.duration", kind: "histogram", unit: "s", service: "session-log", buckets: FAST_SECONDS,
    description: "One EmitEvents append, the transaction with its outbox rows included, by outcome (ok or the error code).",
    labels: ["outcome"],
  }),
  appendBatch: def({
    name: "metaharness.log.append.batch_size", kind: "histogram", unit: "{event}", service: "session-log", buckets: BATCH,
    description: "Events per append.",
    labels: [],
  }),
  outboxLag: def({
    name: "metaharness.outbox.lag", kind: "gauge", unit: "s", service: "session-log",
    description: "Age of the oldest event not yet published to Kafka (0 when the outbox is empty).",
    labels: [],
  }),
  outboxBacklog: def({
    name: "metaharness.outbox.backlog", kind: "gauge", unit: "{event}", service: "session-log",
    description: "Events appended but not yet published to Kafka.",
    labels: [],
  }),
  kafkaSent: def({
    name: "messaging.client.sent.messages", kind: "counter", unit: "{message}", service: "session-log",
    description: "Events the outbox relay sent to Kafka; error.type is set on the ones whose send failed (they are sent again).",
    labels: ["messaging.system", "messaging.destination.name", "error.type"],
  }),
  watchSubscribers: def({
    name: "metaharness.watch.subscribers", kind: "updown", unit: "{subscriber}", service: "session-log",
    description: "Open WatchEvents streams (the gateway's SSE streams and the harnesses' views each hold one).",
    labels: [],
  }),
  leasesActive: def({
    name: "metaharness.leases.active", kind: "gauge", unit: "{lease}", service: "session-log",
    description: "Sessions whose lease a harness holds now (not expired).",
    labels: [],
  }),
  sessionsWaiting: def({
    name: "metaharness.sessions.waiting", kind: "gauge", unit: "{session}", service: "session-log",
    description: "Sessions with work for a harness (running, or user input after going idle) that no live lease covers.",
    labels: [],
  }),
  // ---- sandbox broker ------------------------------------------------------------------------------
  provisionDuration: def({
    name: "metaharness.sandbox.provision.duration", kind: "histogram", unit: "s", service: "sandbox-broker", buckets: SECONDS,
    description: "Provisioning a sandbox, by start: cold (a new one), warm (from the warm pool), packages (an environment's package layer built first).",
    labels: ["start", "kind"],
  }),
  sandboxesActive: def({
    name: "metaharness.sandboxes.active", kind: "updown", unit: "{sandbox}", service: "sandbox-broker",
    description: "Sandboxes this broker holds now, by kind (bubblewrap, or an external hand's kind).",
    labels: ["kind"],
  }),
  sandboxLosses: def({
    name: "metaharness.sandbox.losses", kind: "counter", unit: "{sandbox}", service: "sandbox-broker",
    description: "Sandboxes that ended other than by their release, by cause (idle reaped, hand gone, crashed, broker restarted).",
    labels: ["cause"],
  }),
  // ---- credential vault proxy ----------------------------------------------------------------------
  proxyRequests: def({
    name: "metaharness.proxy.requests", kind: "counter", unit: "{request}", service: "credential-vault-proxy",
    description: "Requests the proxy forwarded or refused, by kind (mcp, git, egress) and outcome (ok, refused, error).",
    labels: ["kind", "outcome"],
  }),
  proxyRefusals: def({
    name: "metaharness.proxy.refusals", kind: "counter", unit: "{request}", service: "credential-vault-proxy",
    description: "Requests the proxy refused, by reason (no credential, host not allowed, bad token, session not running...).",
    labels: ["kind", "reason"],
  }),
  // ---- gateway -------------------------------------------------------------------------------------
  httpDuration: def({
    name: "http.server.request.duration", kind: "histogram", unit: "s", service: "gateway", buckets: FAST_SECONDS,
    description: "HTTP requests the gateway served, by route template (never the path's ids) and status.",
    labels: ["http.request.method", "http.route", "http.response.status_code"],
  }),
  sseStreams: def({
    name: "metaharness.gateway.sse.streams", kind: "updown", unit: "{stream}", service: "gateway",
    description: "Event streams (SSE) open now.",
    labels: [],
  }),
  gatewayWakes: def({
    name: "metaharness.gateway.wakes", kind: "counter", unit: "{wake}", service: "gateway",
    description: "Harness Wakes after a user's input (or a budget raised), by outcome: sent (answered), failed (the sweeper takes the session), skipped (the append's answer showed the session's lease held with more than MH_GATEWAY_WAKE_SKIP_LEASE_MS left).",
    labels: ["outcome"],
  }),
  // ---- every gRPC service --------------------------------------------------------------------------
  rpcDuration: def({
    name: "rpc.server.call.duration", kind: "histogram", unit: "s", service: "every service", buckets: FAST_SECONDS,
    description: "gRPC calls served, by method and status code: the error rate of each service.",
    labels: ["rpc.system.name", "rpc.method", "rpc.response.status_code"],
  }),
  // ---- every service: its Node.js event loop (the runtime conventions' names) ------------------------
  eventLoopDelayP50: def({
    name: "nodejs.eventloop.delay.p50", kind: "gauge", unit: "s", service: "every service",
    description: "Median delay of the process's event loop (how late a ready callback ran) since the previous collection (a scrape or an export).",
    labels: [],
  }),
  eventLoopDelayP99: def({
    name: "nodejs.eventloop.delay.p99", kind: "gauge", unit: "s", service: "every service",
    description: "99th percentile of the event loop's delay since the previous collection.",
    labels: [],
  }),
  eventLoopDelayMax: def({
    name: "nodejs.eventloop.delay.max", kind: "gauge", unit: "s", service: "every service",
    description: "Longest event-loop delay since the previous collection.",
    labels: [],
  }),
  eventLoopDelayMean: def({
    name: "nodejs.eventloop.delay.mean", kind: "gauge", unit: "s", service: "every service",
    description: "Mean event-loop delay since the previous collection.",
    labels: [],
  }),
  eventLoopUtilization: def({
    name: "nodejs.eventloop.utilization", kind: "gauge", unit: "1", service: "every service",
    description: "Share of the time since the previous collection the event loop spent running (not waiting for I/O or timers), 0 to 1.",
    labels: [],
  }),
} as const;

export type MetricKey = keyof typeof METRICS;

/** The label keys of one metric of the table. */
export type LabelsOf<D> = D extends MetricDef<infer L> ? L : never;

/**
 * The series names Prometheus shows for a metric (its scrape endpoint and its OTLP receiver with
 * `translation_strategy: UnderscoreEscapingWithoutSuffixes` agree): dots become underscores,
 * a counter gains `_total`, a histogram is read through `_bucket`, `_sum` and `_count`.
 */
export function promName(d: MetricDef): string {
  const base = d.name.replace(/[^a-zA-Z0-9_]/g, "_");
  return d.kind === "counter" ? `${base}_total` : base;
}

/** A label key as Prometheus shows it. */
export function promLabel(key: string): string {
  return key.replace(/[^a-zA-Z0-9_]/g, "_");
}
