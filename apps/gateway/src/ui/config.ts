/**
 * Settings of the session page. MH_JAEGER_QUERY_URL is Jaeger's query API, from which the
 * gateway's own trace page (/ui/traces/:id) reads traces. MH_TRACE_URL_TEMPLATE is where an
 * event's trace opens: any http(s) URL holding `{trace_id}` (and optionally `{span_id}`), or that
 * page. Unset, it is that page when MH_JAEGER_QUERY_URL is set, Jaeger's UI otherwise.
 * MH_MODEL_PRICES: the deployment's model prices, for the page's cost estimates (prices-config.ts).
 */
import { ConfigError, env, readConfig, type EnvSource } from "@metaharness/service-kit/config";
import type { PriceTable } from "./browser/prices.js";
import { PRICES_CONFIG } from "./prices-config.js";

export const DEFAULT_TRACE_URL_TEMPLATE = "http://127.0.0.1:16686/trace/{trace_id}";
/** The gateway's own trace page, with the event's span highlighted. */
export const TRACE_PAGE_TEMPLATE = "/ui/traces/{trace_id}?span={span_id}";

/** An http(s) URL with `{trace_id}` in it, or the trace page; the placeholders are replaced by the page. */
const TRACE_TEMPLATE = /^(?:https?:\/\/[^\s"'<>]*\{trace_id\}[^\s"'<>]*|\/ui\/traces\/\{trace_id\}(?:\?span=\{span_id\})?)$/;

export const UI_CONFIG = {
  traceUrlTemplate: env.optional(env.string("MH_TRACE_URL_TEMPLATE", { pattern: TRACE_TEMPLATE })),
  jaegerQueryUrl: env.optionalUrl("MH_JAEGER_QUERY_URL", { protocols: ["http", "https"] }),
  ...PRICES_CONFIG,
} as const;

export interface UiConfig {
  readonly traceUrlTemplate: string;
  /** Without a trailing slash; undefined: the trace page and its JSON route have no traces to show. */
  readonly jaegerQueryUrl: string | undefined;
  /** Model prices for the page's cost estimates: the defaults, with MH_MODEL_PRICES over them. */
  readonly prices: PriceTable;
}

export function loadUiConfig(source: EnvSource = process.env): UiConfig {
  const raw = readConfig(UI_CONFIG, source);
  const jaegerQueryUrl = raw.jaegerQueryUrl?.replace(/\/+$/, "");
  if (raw.traceUrlTemplate?.startsWith("/") === true && jaegerQueryUrl === undefined) {
    throw new ConfigError([`MH_TRACE_URL_TEMPLATE=${JSON.stringify(raw.traceUrlTemplate)} is the gateway's trace page, which reads traces from MH_JAEGER_QUERY_URL: set it too`]);
  }
  return {
    traceUrlTemplate: raw.traceUrlTemplate ?? (jaegerQueryUrl === undefined ? DEFAULT_TRACE_URL_TEMPLATE : TRACE_PAGE_TEMPLATE),
    jaegerQueryUrl,
    prices: raw.prices,
  };
}
