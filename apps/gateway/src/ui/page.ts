/**
 * The one HTML document behind every page of the UI (/ui/, /ui/sessions/:id, /ui/traces/:id):
 * a shell that loads the stylesheet and the browser module, which reads the path and renders the
 * page. It holds no data, so it is served without a key; the data comes from key-checked JSON
 * routes.
 */
import type { PriceTable } from "./browser/prices.js";

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/**
 * Only our own files run and load, the page cannot be framed, and links (to traces) send no
 * Referer. `connect-src 'self'`: the key is only ever sent to this gateway.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export interface PageOptions {
  readonly traceUrlTemplate: string;
  /** Model prices for the cost estimates (JSON in a meta tag: the page holds no script of its own). */
  readonly prices: PriceTable;
  /** False when the browser modules are missing (the gateway runs from sources). */
  readonly built: boolean;
}

export function pageHtml(opts: PageOptions): string {
  const body = opts.built
    ? `<noscript>This page needs JavaScript.</noscript><p class="muted">Loading…</p>`
    : `<p class="notice notice--error">The page's scripts are not built: run <code>npm run build</code>.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="mh-trace-url-template" content="${escapeHtml(opts.traceUrlTemplate)}">
<meta name="mh-model-prices" content="${escapeHtml(JSON.stringify(opts.prices))}">
<title>Sessions · Meta-Harness</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/ui/assets/app.css">
<link rel="stylesheet" href="/ui/assets/tools.css">
<script type="module" src="/ui/assets/app.js"></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="topbar">
  <a class="brand" href="/ui/">Meta-Harness</a>
  <nav aria-label="Main"><a href="/ui/">Sessions</a></nav>
  <div class="topbar__key" id="key-status"></div>
</header>
<main id="main" tabindex="-1">${body}</main>
</body>
</html>
`;
}
