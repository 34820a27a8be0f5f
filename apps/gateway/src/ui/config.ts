/**
 * Settings of the session page. MH_TRACE_URL_TEMPLATE is where an event's trace opens: any
 * http(s) URL holding `{trace_id}` (and optionally `{span_id}`), Jaeger's UI by default.
 */
import { env, readConfig, type EnvSource } from "@metaharness/service-kit";

export const DEFAULT_TRACE_URL_TEMPLATE = "http://127.0.0.1:16686/trace/{trace_id}";

/** An http(s) URL with `{trace_id}` in it; the placeholders are replaced by the page. */
const TRACE_TEMPLATE = /^https?:\/\/[^\s"'<>]*\{trace_id\}[^\s"'<>]*$/;

export const UI_CONFIG = {
  traceUrlTemplate: env.string("MH_TRACE_URL_TEMPLATE", { default: DEFAULT_TRACE_URL_TEMPLATE, pattern: TRACE_TEMPLATE }),
} as const;

export function loadUiConfig(source: EnvSource = process.env) {
  return readConfig(UI_CONFIG, source);
}

export type UiConfig = ReturnType<typeof loadUiConfig>;
