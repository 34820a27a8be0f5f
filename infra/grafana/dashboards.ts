/**
 * Meta-Harness's Grafana dashboards as code, built with Grafana's own typed builders
 * (@grafana/grafana-foundation-sdk, generated from Grafana's published schemas, so a panel or
 * field Grafana does not know is a type error), on the Prometheus data source of
 * provisioning/datasources/prometheus.yaml. `npx tsx infra/grafana/dashboards.ts` writes them to
 * provisioning/dashboards/metaharness-*.json, which the compose file mounts;
 * test/integration/metrics/metrics.test.ts checks those files are this module's output and runs
 * every panel's query against a real Prometheus after a session, expecting data.
 */
import { writeFileSync } from "node:fs";
import { DashboardBuilder, QueryVariableBuilder, RowBuilder, type Dashboard } from "@grafana/grafana-foundation-sdk/dashboard";
import { DataqueryBuilder } from "@grafana/grafana-foundation-sdk/prometheus";
import { PanelBuilder as TimeseriesBuilder } from "@grafana/grafana-foundation-sdk/timeseries";

export const PROMETHEUS = { type: "prometheus", uid: "metaharness-prometheus" } as const;

interface PanelSpec {
  readonly title: string;
  readonly unit: string;
  readonly description: string;
  /** PromQL, with `$tenant` where the dashboard has that variable. */
  readonly queries: ReadonlyArray<{ readonly expr: string; readonly legend: string }>;
}

const p95 = (metric: string, by: string): string => `histogram_quantile(0.95, sum by (le, ${by}) (rate(${metric}_bucket[5m])))`;

function panel(spec: PanelSpec): TimeseriesBuilder {
  const b = new TimeseriesBuilder().title(spec.title).description(spec.description).unit(spec.unit).datasource(PROMETHEUS).height(8).span(12);
  for (const q of spec.queries) b.withTarget(new DataqueryBuilder().expr(q.expr).legendFormat(q.legend).datasource(PROMETHEUS));
  return b;
}

function dashboard(uid: string, title: string, description: string, rows: ReadonlyArray<{ title: string; panels: PanelSpec[] }>, tenant = false): Dashboard {
  const d = new DashboardBuilder(title).uid(uid).description(description).tags(["metaharness"]).refresh("30s").time({ from: "now-6h", to: "now" });
  if (tenant) {
    d.withVariable(new QueryVariableBuilder("tenant").label("Tenant").datasource(PROMETHEUS).query("label_values(gen_ai_client_token_usage_count, tenant)"));
  }
  for (const row of rows) {
    d.withRow(new RowBuilder(row.title));
    for (const p of row.panels) d.withPanel(panel(p));
  }
  return d.build();
}

export function dashboards(): Record<string, Dashboard> {
  return {
    overview: dashboard("metaharness-overview", "Meta-Harness: overview", "Sessions, the model's latency, errors by service.", [
      { title: "Sessions", panels: [
        { title: "Active sessions and live leases", unit: "short", description: "Sessions harnesses drive now, and leases the log counts live.", queries: [
          { expr: "sum(metaharness_sessions_active)", legend: "driven" }, { expr: "max(metaharness_leases_active)", legend: "leases" }, { expr: "max(metaharness_sessions_waiting)", legend: "waiting for a harness" }] },
        { title: "Turn duration p95 by model", unit: "s", description: "From the user's event to idle.", queries: [{ expr: p95("metaharness_turn_duration", "gen_ai_request_model"), legend: "{{gen_ai_request_model}}" }] },
        { title: "Harness Wakes by outcome", unit: "reqps", description: "The gateway's Wakes after input: sent, failed, or skipped (a harness still followed the session).", queries: [
          { expr: "sum by (outcome) (rate(metaharness_gateway_wakes_total[5m]))", legend: "{{outcome}}" }] },
      ] },
      { title: "Model", panels: [
        { title: "Time to first token p95 by model", unit: "s", description: "gen_ai.client.operation.time_to_first_chunk.", queries: [{ expr: p95("gen_ai_client_operation_time_to_first_chunk", "gen_ai_request_model"), legend: "{{gen_ai_request_model}}" }] },
        { title: "Platform overhead p95 by model", unit: "s", description: "A turn less its model and tool time.", queries: [{ expr: p95("metaharness_turn_platform_overhead", "gen_ai_request_model"), legend: "{{gen_ai_request_model}}" }] },
        { title: "Model requests and retries", unit: "reqps", description: "Requests by outcome; retries by error type.", queries: [
          { expr: 'sum by (error_type) (rate(gen_ai_client_operation_duration_count[5m]))', legend: "requests {{error_type}}" },
          { expr: "sum by (error_type) (rate(metaharness_gen_ai_retries_total[5m]))", legend: "retries {{error_type}}" }] },
      ] },
      { title: "Errors", panels: [
        { title: "gRPC calls by service and status", unit: "reqps", description: "rpc.server.call.duration's count.", queries: [{ expr: "sum by (job, rpc_response_status_code) (rate(rpc_server_call_duration_count[5m]))", legend: "{{job}} {{rpc_response_status_code}}" }] },
        { title: "Gateway requests by status", unit: "reqps", description: "http.server.request.duration's count.", queries: [{ expr: "sum by (http_response_status_code) (rate(http_server_request_duration_count[5m]))", legend: "{{http_response_status_code}}" }] },
      ] },
    ]),
    tenant: dashboard("metaharness-tenant", "Meta-Harness: a tenant's sessions", "Tokens of one tenant, by model and type.", [
      { title: "Tokens", panels: [
        { title: "Tokens by type", unit: "short", description: "input, output, cache_read, cache_creation.", queries: [{ expr: 'sum by (gen_ai_token_type) (increase(gen_ai_client_token_usage_sum{tenant="$tenant"}[1h]))', legend: "{{gen_ai_token_type}}" }] },
        { title: "Model requests by model", unit: "reqps", description: "Requests whose tokens this tenant used.", queries: [{ expr: 'sum by (gen_ai_request_model) (rate(gen_ai_client_token_usage_count{tenant="$tenant",gen_ai_token_type="output"}[5m]))', legend: "{{gen_ai_request_model}}" }] },
      ] },
    ], true),
    log: dashboard("metaharness-log", "Meta-Harness: the log and outbox", "Appends, the outbox's relay to Kafka, watchers.", [
      { title: "Appends", panels: [
        { title: "Append latency p95", unit: "s", description: "One group-committed batch.", queries: [{ expr: p95("metaharness_log_append_duration", "outcome"), legend: "{{outcome}}" }] },
        { title: "Events per append p95", unit: "short", description: "Batch size of the group commit.", queries: [{ expr: "histogram_quantile(0.95, sum by (le) (rate(metaharness_log_append_batch_size_bucket[5m])))", legend: "p95" }] },
      ] },
      { title: "Outbox", panels: [
        { title: "Outbox lag and backlog", unit: "s", description: "Age of the oldest unpublished event; events waiting.", queries: [{ expr: "max(metaharness_outbox_lag)", legend: "lag" }, { expr: "max(metaharness_outbox_backlog)", legend: "backlog" }] },
        { title: "Kafka sends and errors", unit: "short", description: "messaging.client.sent.messages, errors by type.", queries: [{ expr: "sum by (error_type) (rate(messaging_client_sent_messages_total[5m]))", legend: "sent {{error_type}}" }] },
        { title: "WatchEvents subscribers and takeovers", unit: "short", description: "Open streams; leases taken from dead or stalled harnesses.", queries: [
          { expr: "sum(metaharness_watch_subscribers)", legend: "subscribers" }, { expr: "sum by (via) (increase(metaharness_lease_takeovers_total[1h]))", legend: "takeovers {{via}}" }] },
      ] },
    ]),
    sandboxes: dashboard("metaharness-sandboxes", "Meta-Harness: sandboxes", "Provisioning, sandboxes held, losses, tool calls.", [
      { title: "Sandboxes", panels: [
        { title: "Provision latency p95", unit: "s", description: "cold, warm (pool), packages (a layer first).", queries: [{ expr: p95("metaharness_sandbox_provision_duration", "start"), legend: "{{start}}" }] },
        { title: "Active sandboxes by kind", unit: "short", description: "Held by the brokers.", queries: [{ expr: "sum by (kind) (metaharness_sandboxes_active)", legend: "{{kind}}" }] },
        { title: "Sandbox losses by cause", unit: "short", description: "Ended without a release.", queries: [{ expr: "sum by (cause) (increase(metaharness_sandbox_losses_total[1h]))", legend: "{{cause}}" }] },
        { title: "Tool calls by tool and outcome", unit: "short", description: "Built-in tools by name; MCP as mcp.", queries: [{ expr: "sum by (gen_ai_tool_name, outcome) (increase(metaharness_tool_calls_total[1h]))", legend: "{{gen_ai_tool_name}} {{outcome}}" }] },
      ] },
    ]),
    proxy: dashboard("metaharness-proxy", "Meta-Harness: the credential proxy", "Requests by kind, refusals by reason.", [
      { title: "Credential vault proxy", panels: [
        { title: "Requests by kind and outcome", unit: "short", description: "mcp, git, egress.", queries: [{ expr: "sum by (kind, outcome) (increase(metaharness_proxy_requests_total[1h]))", legend: "{{kind}} {{outcome}}" }] },
        { title: "Refusals by reason", unit: "short", description: "What the proxy refused itself.", queries: [{ expr: "sum by (kind, reason) (increase(metaharness_proxy_refusals_total[1h]))", legend: "{{kind}} {{reason}}" }] },
      ] },
    ]),
  };
}

/** The provisioned file of dashboard `name`. */
export function dashboardFile(name: string): string {
  return new URL(`./provisioning/dashboards/metaharness-${name}.json`, import.meta.url).pathname;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  for (const [name, d] of Object.entries(dashboards())) writeFileSync(dashboardFile(name), `${JSON.stringify(d, null, 2)}\n`);
}
