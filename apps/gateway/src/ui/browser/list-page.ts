/**
 * /ui/: the sessions of the key's tenant, newest first, a page at a time (the /v1 list and its
 * cursors), with each one's last activity from the page's own route. It refreshes itself while
 * the tab is visible; rows that did not change are left alone, so focus and selection stay.
 */
import type { BetaManagedAgentsSession } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { SessionActivity } from "./wire.js";
import { getJson, HttpError, query } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { formatAgo, formatDateTime, formatSeconds, formatTokens } from "./format.js";
import type { PageContext } from "./page-context.js";
import { totalInput, type PriceTable } from "./prices.js";
import { costText } from "./usage-view.js";
import { filterBar, filterFromUrl, matches } from "./session-filters.js";
import { copyButton, notice, statusBadge } from "./widgets.js";

const PAGE_SIZE = 50;
const REFRESH_MS = 5000;

interface SessionPage {
  data: BetaManagedAgentsSession[];
  next_page: string | null;
  prev_page: string | null;
}

function row(s: BetaManagedAgentsSession, a: SessionActivity | undefined, now: number, prices: PriceTable): HTMLTableRowElement {
  const last = a?.last_activity_at ?? s.created_at;
  const href = `/ui/sessions/${encodeURIComponent(s.id)}`;
  const u = s.usage;
  const cache = totalInput(u) - (u.input_tokens ?? 0);
  return h(
    "tr",
    { "data-session-id": s.id, "data-status": s.status, "data-agent": s.agent.name, "data-text": [s.title ?? "", s.id, s.agent.name, s.agent.model.id].join(" ").toLowerCase() },
    h("td", {}, h("a", { class: "session-link", href }, s.title ?? "Untitled session"), h("div", { class: "muted small id" }, h("code", { class: "id__text" }, s.id), " ", copyButton(s.id, "session id"))),
    h("td", {}, statusBadge(s.status), s.archived_at === null ? "" : h("span", { class: "tag" }, "archived")),
    h("td", {}, s.agent.name, h("div", { class: "muted small" }, h("code", {}, s.agent.model.id))),
    h("td", {}, h("time", { datetime: s.created_at }, formatDateTime(s.created_at))),
    h("td", {}, h("time", { datetime: last, title: formatDateTime(last) }, formatAgo(last, now)), a === undefined ? "" : h("div", { class: "muted small" }, `${a.last_seq} events`)),
    h("td", { class: "num" }, formatTokens(totalInput(u)), cache > 0 ? h("div", { class: "muted small" }, `${formatTokens(cache)} cached`) : ""),
    h("td", { class: "num" }, formatTokens(s.usage.output_tokens)),
    h("td", { class: "num" }, costText(prices, s.agent.model.id, u) ?? h("span", { class: "muted", title: `No price for ${s.agent.model.id}` }, "—")),
    h("td", { class: "num" }, s.usage.active_seconds ? formatSeconds(s.usage.active_seconds) : "—"),
  );
}

export function listPage(main: HTMLElement, ctx: PageContext): void {
  document.title = "Sessions · Meta-Harness";
  const tbody = h("tbody");
  const status = h("span", { class: "muted", role: "status" });
  const archived = h("input", { type: "checkbox", id: "include-archived" });
  const refresh = h("button", { type: "button", class: "button" }, "Refresh");
  const newer = h("button", { type: "button", class: "button", disabled: true }, "← Newer");
  const older = h("button", { type: "button", class: "button", disabled: true }, "Older →");
  const message = h("div");
  const table = h(
    "table",
    { class: "sessions" },
    h("caption", { class: "sr-only" }, "Sessions of this API key, newest first"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        ...["Session", "Status", "Agent", "Created", "Last activity"].map((t) => h("th", { scope: "col" }, t)),
        ...["Tokens in", "Tokens out", "Est. cost", "Active"].map((t) => h("th", { scope: "col", class: "num" }, t)),
      ),
    ),
    tbody,
  );
  const shown = h("span", { class: "muted", role: "status", "aria-live": "polite" });
  const applyFilter = (): void => {
    const f = bar.value();
    let n = 0;
    for (const r of tbody.rows) {
      const d = r.dataset;
      r.hidden = !matches(f, { text: d["text"] ?? "", status: d["status"] ?? "", agent: d["agent"] ?? "" });
      if (!r.hidden) n += 1;
    }
    const filtered = f.q !== "" || f.status !== "" || f.agent !== "";
    shown.textContent = filtered ? `${n} of ${tbody.rows.length} sessions match` : "";
  };
  const bar = filterBar(filterFromUrl(), applyFilter);
  replaceChildren(
    main,
    h("h1", {}, "Sessions"),
    h("div", { class: "toolbar" }, bar.element, shown),
    h("div", { class: "toolbar" }, refresh, h("label", { class: "filter" }, archived, " Include archived"), status),
    message,
    h("div", { class: "table-wrap" }, table),
    h("nav", { class: "pager", "aria-label": "Pages" }, newer, older),
  );

  let cursor: string | undefined;
  let page: SessionPage = { data: [], next_page: null, prev_page: null };
  let timer: ReturnType<typeof setTimeout> | undefined;
  let loading = false;
  let stopped = false;
  const tick = (): void => {
    if (document.visibilityState === "visible") void load();
    else timer = setTimeout(tick, REFRESH_MS);
  };

  const load = async (): Promise<void> => {
    if (loading) return;
    loading = true;
    clearTimeout(timer);
    try {
      page = await getJson<SessionPage>(`/v1/sessions${query({ limit: PAGE_SIZE, page: cursor, include_archived: archived.checked ? "true" : undefined })}`);
      const ids = page.data.map((s) => s.id);
      const activity = ids.length === 0 ? { data: [] } : await getJson<{ data: SessionActivity[] }>(`/ui/api/activity${query({ session_id: ids })}`);
      const byId = new Map(activity.data.map((a) => [a.session_id, a]));
      const now = Date.now();
      const rows = page.data.map((s) => row(s, byId.get(s.id), now, ctx.prices));
      // Keep rows that read the same, so a refresh does not steal focus.
      const current = new Map([...tbody.rows].map((r) => [r.dataset["sessionId"] ?? "", r]));
      tbody.replaceChildren(...rows.map((r) => {
        const old = current.get(r.dataset["sessionId"] ?? "");
        return old !== undefined && old.textContent === r.textContent ? old : r;
      }));
      bar.setAgents(page.data.map((s) => s.agent.name));
      applyFilter();
      replaceChildren(message, page.data.length === 0 ? notice(cursor === undefined ? "No sessions yet for this API key. Create one with the SDK, then watch it here." : "No more sessions.") : "");
      newer.disabled = page.prev_page === null || cursor === undefined;
      older.disabled = page.next_page === null;
      status.textContent = `Updated ${new Date(now).toLocaleTimeString()}`;
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) {
        stopped = true;
        return ctx.unauthorized(err);
      }
      replaceChildren(message, notice(`Could not load sessions: ${err instanceof Error ? err.message : String(err)}`, "error"));
    } finally {
      loading = false;
      if (!stopped) timer = setTimeout(tick, REFRESH_MS);
    }
  };

  refresh.addEventListener("click", () => void load());
  archived.addEventListener("change", () => {
    cursor = undefined;
    void load();
  });
  older.addEventListener("click", () => {
    cursor = page.next_page ?? undefined;
    void load();
  });
  newer.addEventListener("click", () => {
    cursor = page.prev_page ?? undefined;
    void load();
  });
  void load();
}
