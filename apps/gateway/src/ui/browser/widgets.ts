/**
 * Small pieces both pages use: the status badge (text, not only colour) and notices.
 */
import { h } from "./dom.js";

export function statusBadge(status: string): HTMLElement {
  return h("span", { class: `badge badge--${status}` }, status);
}

export function notice(text: string, kind: "info" | "error" = "info"): HTMLElement {
  return h("p", { class: `notice notice--${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}
