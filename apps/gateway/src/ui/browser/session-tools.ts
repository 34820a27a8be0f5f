/**
 * The session page's debugging tools, over the timeline: jump to the first error, collapse every
 * event to its head line (and back), move between events with the keyboard (j / k, or the arrow
 * keys once an event has focus; Home and End), and download the session's events as JSON, read
 * whole from the page's route a slice at a time (the page itself may hold only the latest).
 */
import type { UiEventJson, UiEventSlice } from "./wire.js";
import { getJson, query } from "./api.js";
import { h } from "./dom.js";

/** Events per request of the download: the route's largest slice. */
const DOWNLOAD_SLICE = 1000;
/** What counts as an error on the timeline: error events, failed tool calls, failed model requests. */
const ERROR_ROWS = '.ev[data-kind="error"], .ev:has(.tool[data-state="error"]), .ev--failed';

/** The rows a reader can move between: shown, not filtered out. */
function visibleRows(list: HTMLElement): HTMLElement[] {
  return [...list.querySelectorAll<HTMLElement>(":scope > .ev")].filter((row) => row.offsetParent !== null);
}

function focusRow(row: HTMLElement | undefined): void {
  if (row === undefined) return;
  row.tabIndex = -1;
  row.focus({ preventScroll: true });
  row.scrollIntoView({ block: "nearest" });
}

/** Every event of the session, oldest first, from the page's route. */
async function allEvents(uiEvents: string): Promise<UiEventJson[]> {
  const out: UiEventJson[] = [];
  let after = 0;
  for (;;) {
    const slice = await getJson<UiEventSlice>(`${uiEvents}${query({ after_seq: after, limit: DOWNLOAD_SLICE })}`);
    out.push(...slice.data);
    const last = slice.data.at(-1)?.seq;
    if (!slice.has_more || last === undefined) return out;
    after = last;
  }
}

/** Offers `data` as a file named `name` (a blob URL, so nothing leaves the page). */
function save(name: string, data: string): void {
  const url = URL.createObjectURL(new Blob([data], { type: "application/json" }));
  const link = h("a", { href: url, download: name, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export interface SessionTools {
  readonly element: HTMLElement;
  /** Whether there is an error to jump to (the button is disabled otherwise). */
  refresh(): void;
}

export function sessionTools(list: HTMLElement, sessionId: string, uiEvents: string): SessionTools {
  const firstError = h("button", { type: "button", class: "button", disabled: true }, "Jump to first error");
  firstError.addEventListener("click", () => focusRow(list.querySelector<HTMLElement>(ERROR_ROWS) ?? undefined));

  const collapse = h("button", { type: "button", class: "button", "aria-pressed": "false" }, "Collapse all");
  collapse.addEventListener("click", () => {
    const collapsed = list.classList.toggle("timeline--collapsed");
    collapse.setAttribute("aria-pressed", String(collapsed));
    collapse.textContent = collapsed ? "Expand all" : "Collapse all";
  });

  const download = h("button", { type: "button", class: "button" }, "Download JSON");
  const said = h("span", { class: "muted small", role: "status" });
  download.addEventListener("click", () => {
    download.disabled = true;
    said.textContent = "Reading the events…";
    allEvents(uiEvents)
      .then((events) => {
        save(`${sessionId}-events.json`, `${JSON.stringify({ session_id: sessionId, events }, null, 2)}\n`);
        said.textContent = `${events.length} events saved`;
      })
      .catch((err: unknown) => {
        said.textContent = `Could not read the events: ${err instanceof Error ? err.message : String(err)}`;
      })
      .finally(() => {
        download.disabled = false;
      });
  });

  // j / k from anywhere on the page (not while typing); arrows, Home and End once an event has focus.
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey || !list.isConnected) return;
    const target = e.target instanceof HTMLElement ? e.target : undefined;
    if (target !== undefined && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
    const onRow = target?.matches(".ev") === true && list.contains(target);
    const rows = visibleRows(list);
    const at = onRow ? rows.indexOf(target) : -1;
    let next: HTMLElement | undefined;
    if (e.key === "j" || (onRow && e.key === "ArrowDown")) next = rows[at + 1] ?? rows.at(-1);
    else if (e.key === "k" || (onRow && e.key === "ArrowUp")) next = at < 0 ? rows[0] : (rows[at - 1] ?? rows[0]);
    else if (onRow && e.key === "Home") next = rows[0];
    else if (onRow && e.key === "End") next = rows.at(-1);
    else return;
    e.preventDefault();
    focusRow(next);
  });

  const keys = h("span", { class: "muted small" }, "Keys: ", h("kbd", {}, "j"), " / ", h("kbd", {}, "k"), " next / previous event");
  return {
    element: h("div", { class: "session-tools" }, firstError, collapse, download, keys, said),
    refresh() {
      firstError.disabled = list.querySelector(ERROR_ROWS) === null;
    },
  };
}
