/**
 * The session page's settings: where trace links go (an http(s) link or the gateway's own trace
 * page, never anything a browser would run), and the Jaeger the trace page reads.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_PRICES } from "./browser/prices.js";
import { DEFAULT_TRACE_URL_TEMPLATE, loadUiConfig, TRACE_PAGE_TEMPLATE } from "./config.js";

const JAEGER = "http://127.0.0.1:16686";

describe("loadUiConfig", () => {
  it("links to Jaeger's UI when neither setting is given, and reads no traces", () => {
    expect(loadUiConfig({})).toEqual({ traceUrlTemplate: DEFAULT_TRACE_URL_TEMPLATE, jaegerQueryUrl: undefined, prices: DEFAULT_PRICES });
  });

  it("links to the gateway's own trace page when MH_JAEGER_QUERY_URL is set", () => {
    expect(loadUiConfig({ MH_JAEGER_QUERY_URL: `${JAEGER}/` })).toEqual({ traceUrlTemplate: TRACE_PAGE_TEMPLATE, jaegerQueryUrl: JAEGER, prices: DEFAULT_PRICES });
  });

  it("takes any http(s) template with {trace_id}, over the trace page", () => {
    const template = "https://grafana.example.com/explore?traceId={trace_id}&span={span_id}";
    expect(loadUiConfig({ MH_TRACE_URL_TEMPLATE: template }).traceUrlTemplate).toBe(template);
    expect(loadUiConfig({ MH_TRACE_URL_TEMPLATE: template, MH_JAEGER_QUERY_URL: JAEGER })).toEqual({ traceUrlTemplate: template, jaegerQueryUrl: JAEGER, prices: DEFAULT_PRICES });
  });

  it("takes the trace page as a template, only with a Jaeger to read from", () => {
    for (const template of [TRACE_PAGE_TEMPLATE, "/ui/traces/{trace_id}"]) {
      expect(loadUiConfig({ MH_TRACE_URL_TEMPLATE: template, MH_JAEGER_QUERY_URL: JAEGER }).traceUrlTemplate).toBe(template);
      expect(() => loadUiConfig({ MH_TRACE_URL_TEMPLATE: template })).toThrow(/MH_TRACE_URL_TEMPLATE=.*MH_JAEGER_QUERY_URL/);
    }
  });

  it("refuses a template that is not an http(s) link to a trace or the trace page", () => {
    for (const bad of ["javascript:alert({trace_id})", "http://jaeger/trace/", "/trace/{trace_id}", "//evil.example/{trace_id}", "/ui/traces/{trace_id}/../x", 'http://x/{trace_id}"><script>']) {
      expect(() => loadUiConfig({ MH_TRACE_URL_TEMPLATE: bad, MH_JAEGER_QUERY_URL: JAEGER })).toThrow(/MH_TRACE_URL_TEMPLATE/);
    }
  });

  it("refuses a Jaeger URL that is not http(s)", () => {
    for (const bad of ["127.0.0.1:16686", "file:///tmp/jaeger", "javascript:alert(1)"]) {
      expect(() => loadUiConfig({ MH_JAEGER_QUERY_URL: bad })).toThrow(/MH_JAEGER_QUERY_URL/);
    }
  });
});
