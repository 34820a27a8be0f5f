/**
 * /ui/sessions/:id: the session's header (status, agent, usage) and its timeline. The latest
 * events come first from the page's own route (with traces), earlier ones on request; then the
 * gateway's stream takes over from the last seq shown, so the page follows the session live.
 * Events that arrived live get their trace links from the page's route shortly after.
 */
import type { BetaManagedAgentsSession } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { UiEventSlice } from "./wire.js";
import { getJson, HttpError, query } from "./api.js";
import { append, h, replaceChildren } from "./dom.js";
import { formatAgo, formatDateTime, formatSeconds, formatTokens } from "./format.js";
import { LiveStream, type LiveState } from "./live.js";
import type { PageContext } from "./page-context.js";
import { CATEGORIES, Timeline, type Category } from "./timeline.js";
import { costText, inputText } from "./usage-view.js";
import { sessionTools } from "./session-tools.js";
import { idWithCopy, notice, statusBadge } from "./widgets.js";

const SLICE = 500;
const ENRICH_DELAY_MS = 250;
const HEADER_REFRESH_MS = 500;
const CLOCK_TICK_MS = 5000;
/** How close to the bottom (px) counts as following the newest events. */
const FOLLOW_SLACK_PX = 120;

const LIVE_TEXT: Readonly<Record<LiveState, string>> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  ended: "Ended",
  stopped: "Stopped",
};

function nearBottom(): boolean {
  return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - FOLLOW_SLACK_PX;
}

/** Runs a change to the page, keeping the newest events in view if they were. */
function following(change: () => void): void {
  const follow = nearBottom();
  change();
  if (follow) window.scrollTo({ top: document.documentElement.scrollHeight });
}

/** One term of the header's list, grouped so the grid keeps label and value together. */
function fact(label: string, ...value: Array<Node | string>): HTMLElement {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, ...value));
}

export async function sessionPage(main: HTMLElement, sessionId: string, ctx: PageContext): Promise<void> {
  const base = `/v1/sessions/${encodeURIComponent(sessionId)}`;
  const uiEvents = `/ui/api/sessions/${encodeURIComponent(sessionId)}/events`;
  const timeline = new Timeline(ctx.traceTemplate, ctx.prices);

  let session: BetaManagedAgentsSession;
  let slice: UiEventSlice;
  try {
    [session, slice] = await Promise.all([
      getJson<BetaManagedAgentsSession>(base),
      getJson<UiEventSlice>(`${uiEvents}${query({ limit: SLICE })}`),
    ]);
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) return ctx.unauthorized(err);
    const text = err instanceof HttpError && err.status === 404 ? `No session ${sessionId} for this API key.` : `Could not load the session: ${String(err)}`;
    replaceChildren(main, h("p", {}, h("a", { href: "/ui/" }, "← All sessions")), notice(text, "error"));
    return;
  }

  const title = h("h1", { class: "session-title" });
  const facts = h("dl", { class: "facts" });
  const liveState = h("span", { class: "live", role: "status", "data-state": "connecting" }, LIVE_TEXT.connecting);
  const filters = h("fieldset", { class: "filters" }, h("legend", { class: "sr-only" }, "Show"));
  for (const [category, label] of Object.entries(CATEGORIES) as Array<[Category, string]>) {
    const box = h("input", { type: "checkbox", checked: true, "data-category": category });
    box.addEventListener("change", () => timeline.list.classList.toggle(`hide-${category}`, !box.checked));
    append(filters, h("label", { class: "filter" }, box, ` ${label}`));
  }
  const earlier = h("div", { class: "earlier" });
  const renderHeader = (): void => {
    const s = session;
    document.title = `${s.title ?? s.id} · Meta-Harness`;
    replaceChildren(title, s.title ?? "Untitled session", " ", statusBadge(s.status));
    const u = s.usage;
    const cost = costText(ctx.prices, s.agent.model.id, u);
    replaceChildren(
      facts,
      fact("Session", idWithCopy(s.id, "session id")),
      fact("Agent", `${s.agent.name} v${s.agent.version} · `, h("code", {}, s.agent.model.id)),
      fact("Created", h("time", { datetime: s.created_at }, formatDateTime(s.created_at))),
      fact("Last activity", h("time", { datetime: timeline.lastActivity ?? s.created_at, title: timeline.lastActivity ?? s.created_at }, formatAgo(timeline.lastActivity ?? s.created_at, Date.now()))),
      fact("Tokens", `in ${inputText(u)} · out ${formatTokens(u.output_tokens)}`),
      fact("Est. cost", cost === undefined ? h("span", { class: "muted" }, `no price for ${s.agent.model.id}`) : h("span", { title: "From the deployment's price table (MH_MODEL_PRICES)" }, cost)),
      fact("Active", formatSeconds(u.active_seconds)),
    );
  };

  const tools = sessionTools(timeline.list, sessionId, uiEvents);
  replaceChildren(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "/ui/" }, "← All sessions")),
    h("header", { class: "session-head" }, title, facts),
    tools.element,
    h("div", { class: "toolbar toolbar--sticky" }, filters, liveState),
    earlier,
    h("section", { class: "timeline-wrap", "aria-label": "Timeline" }, timeline.list),
  );
  timeline.prepend(slice.data);
  tools.refresh();
  renderHeader();
  if (slice.data.length === 0) append(earlier, h("p", { class: "muted" }, "No events yet. Send a message to the session; it shows here as it happens."));

  // Earlier events, a slice at a time.
  let firstSeq = slice.data[0]?.seq;
  const showEarlier = (more: boolean): void => {
    if (!more || firstSeq === undefined) return replaceChildren(earlier);
    const button = h("button", { type: "button", class: "button" }, "Load earlier events");
    button.addEventListener("click", () => {
      button.disabled = true;
      void getJson<UiEventSlice>(`${uiEvents}${query({ before_seq: firstSeq, limit: SLICE })}`)
        .then((older) => {
          timeline.prepend(older.data);
          tools.refresh();
          firstSeq = older.data[0]?.seq ?? firstSeq;
          showEarlier(older.has_more);
        })
        .catch((err: unknown) => replaceChildren(earlier, notice(`Could not load earlier events: ${String(err)}`, "error")));
    });
    replaceChildren(earlier, button);
  };
  showEarlier(slice.has_more);

  // Trace links of live events, from the page's route, a batch at a time.
  const unenriched: number[] = [];
  let enriching = false;
  const enrich = (): void => {
    if (enriching || unenriched.length === 0) return;
    enriching = true;
    const batch = unenriched.splice(0);
    void getJson<UiEventSlice>(`${uiEvents}${query({ after_seq: Math.min(...batch) - 1, limit: 1000 })}`)
      .then((s) => {
        s.data.forEach((e) => timeline.enrich(e));
        // A slice can end early (at the log's 4 MiB budget): what lies beyond goes in the next batch.
        const last = s.data.at(-1)?.seq;
        if (s.has_more && last !== undefined) unenriched.push(...batch.filter((seq) => seq > last));
      })
      // Links are a convenience: a failed batch goes back in the queue, tried again after the delay.
      .catch(() => unenriched.push(...batch))
      .finally(() => {
        enriching = false;
        if (unenriched.length > 0) setTimeout(enrich, ENRICH_DELAY_MS);
      });
  };

  let headerTimer: ReturnType<typeof setTimeout> | undefined;
  const refreshHeader = (): void => {
    headerTimer ??= setTimeout(() => {
      headerTimer = undefined;
      void getJson<BetaManagedAgentsSession>(base)
        .then((s) => {
          session = s;
          renderHeader();
        })
        .catch(() => undefined);
    }, HEADER_REFRESH_MS);
  };
  setInterval(renderHeader, CLOCK_TICK_MS);

  // A link to one event (#ev-12) opens at it; a running session at its newest events.
  if (location.hash !== "") document.getElementById(location.hash.slice(1))?.scrollIntoView();
  else if (session.status === "running") window.scrollTo({ top: document.documentElement.scrollHeight });

  // A terminated session has nothing more to show: no stream for it.
  if (session.status === "terminated") {
    liveState.dataset["state"] = "ended";
    liveState.textContent = "Ended (the session was terminated)";
    return;
  }
  const live = new LiveStream(sessionId, slice.data.at(-1)?.seq ?? 0, {
    event(event) {
      following(() => timeline.append(event));
      tools.refresh();
      if (unenriched.length === 0) setTimeout(enrich, ENRICH_DELAY_MS);
      unenriched.push(event.seq);
      if (event.type.startsWith("session.status_")) {
        session = { ...session, status: event.type === "session.status_running" ? "running" : event.type === "session.status_idle" ? "idle" : "terminated" };
        renderHeader();
      }
      if (event.type.startsWith("session.status_") || event.type === "span.model_request_end") refreshHeader();
    },
    previewStart: (id, type) => following(() => timeline.previewStart(id, type)),
    previewDelta: (id, text) => following(() => timeline.previewDelta(id, text)),
    state(state, detail) {
      liveState.dataset["state"] = state;
      liveState.textContent = detail === undefined || state === "live" ? LIVE_TEXT[state] : `${LIVE_TEXT[state]} (${detail})`;
    },
    fatal(error) {
      if (error.status === 401) return ctx.unauthorized(error);
      liveState.dataset["state"] = "stopped";
      liveState.textContent = `Stopped: ${error.message}`;
    },
  });
  live.start();
  window.addEventListener("pagehide", () => live.close(), { once: true });
}
