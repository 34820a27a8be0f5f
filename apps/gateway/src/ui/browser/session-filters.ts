/**
 * The session list's filters: text (matched against title, id, agent and model), status and
 * agent. They live in the page's URL (`?q=&status=&agent=`), so a filtered list can be reloaded,
 * bookmarked or sent to someone, and Back restores it. They filter the sessions loaded (a page of
 * the /v1 list at a time).
 */
import { append, h } from "./dom.js";

export interface SessionFilter {
  readonly q: string;
  readonly status: string;
  readonly agent: string;
}

export const STATUSES = ["running", "idle", "rescheduling", "terminated"] as const;

export function filterFromUrl(search: string = location.search): SessionFilter {
  const p = new URLSearchParams(search);
  return { q: p.get("q") ?? "", status: p.get("status") ?? "", agent: p.get("agent") ?? "" };
}

/** `?q=...&status=...`, leaving out what is not set. */
export function filterQuery(f: SessionFilter): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(f) as Array<[string, string]>) if (v !== "") p.set(k, v);
  const text = p.toString();
  return text === "" ? "" : `?${text}`;
}

/** What a row is matched on: its text fields, lower-cased. */
export interface RowFacts {
  readonly text: string;
  readonly status: string;
  readonly agent: string;
}

export function matches(f: SessionFilter, row: RowFacts): boolean {
  if (f.status !== "" && row.status !== f.status) return false;
  if (f.agent !== "" && row.agent !== f.agent) return false;
  const words = f.q.toLowerCase().split(/\s+/).filter((w) => w !== "");
  return words.every((w) => row.text.includes(w));
}

export interface FilterBar {
  readonly element: HTMLElement;
  value(): SessionFilter;
  /** The agents the loaded sessions name, for the agent menu (the chosen one is kept). */
  setAgents(names: readonly string[]): void;
}

function select(id: string, label: string, options: ReadonlyArray<readonly [string, string]>, value: string): { wrap: HTMLElement; input: HTMLSelectElement } {
  const input = h("select", { id, name: id });
  for (const [v, text] of options) append(input, h("option", { value: v, selected: v === value }, text));
  return { wrap: h("span", { class: "field" }, h("label", { for: id }, label), " ", input), input };
}

/** The filters' controls; `changed` runs on each change, after the URL took it. */
export function filterBar(initial: SessionFilter, changed: () => void): FilterBar {
  const q = h("input", { id: "session-search", name: "q", type: "search", value: initial.q, placeholder: "title, id, agent, model", autocomplete: "off", spellcheck: "false" });
  const status = select("status-filter", "Status", [["", "Any"], ...STATUSES.map((s) => [s, s] as const)], initial.status);
  const agent = select("agent-filter", "Agent", [["", "Any"]], initial.agent);
  let agents: readonly string[] = [];
  const value = (): SessionFilter => ({ q: q.value.trim(), status: status.input.value, agent: agent.input.value });
  const update = (): void => {
    const next = `${location.pathname}${filterQuery(value())}`;
    if (next !== `${location.pathname}${location.search}`) history.replaceState(null, "", next);
    changed();
  };
  q.addEventListener("input", update);
  status.input.addEventListener("change", update);
  agent.input.addEventListener("change", update);
  const element = h("div", { class: "filters-bar", role: "search", "aria-label": "Filter sessions" }, h("span", { class: "field" }, h("label", { for: "session-search" }, "Search"), " ", q), status.wrap, agent.wrap);
  return {
    element,
    value,
    setAgents(names) {
      const chosen = agent.input.value || initial.agent;
      const next = [...new Set([...names, ...(chosen === "" ? [] : [chosen])])].sort();
      if (next.join("\n") === agents.join("\n")) return;
      agents = next;
      agent.input.replaceChildren(h("option", { value: "" }, "Any"), ...next.map((n) => h("option", { value: n, selected: n === chosen }, n)));
    },
  };
}
