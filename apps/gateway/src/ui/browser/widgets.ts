/**
 * Small pieces the pages share: the status badge (text, not only colour), notices, and an id as
 * it should read: on one line (never broken mid-id) with a button that copies it.
 */
import { h } from "./dom.js";

export function statusBadge(status: string): HTMLElement {
  return h("span", { class: `badge badge--${status}` }, status);
}

export function notice(text: string, kind: "info" | "error" = "info"): HTMLElement {
  return h("p", { class: `notice notice--${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

/**
 * Puts `text` on the clipboard: the Clipboard API where the page is a secure context (https, or
 * loopback as under `mh dev`), else a selected text area and the copy command.
 */
async function copyText(text: string): Promise<void> {
  if (window.isSecureContext && navigator.clipboard !== undefined) return navigator.clipboard.writeText(text);
  const area = h("textarea", { class: "sr-only", readonly: true, "aria-hidden": "true" }, text);
  document.body.append(area);
  area.select();
  const copied = document.execCommand("copy");
  area.remove();
  if (!copied) throw new Error("the browser refused to copy");
}

/**
 * A button that copies `text`, and a note beside it that says it did (the button's own words stay
 * "Copy", so its name keeps matching what it shows); `what` names it for a screen reader.
 */
export function copyButton(text: string, what: string): HTMLElement {
  const button = h("button", { type: "button", class: "copy-button", "aria-label": `Copy ${what} ${text}`, title: `Copy ${what}`, "data-copy": text }, "Copy");
  const note = h("span", { class: "copy-note", role: "status" });
  let timer: ReturnType<typeof setTimeout> | undefined;
  button.addEventListener("click", () => {
    copyText(text).then(
      () => (note.textContent = "Copied"),
      () => (note.textContent = "Could not copy"),
    ).finally(() => {
      clearTimeout(timer);
      timer = setTimeout(() => (note.textContent = ""), 2000);
    });
  });
  return h("span", { class: "copy" }, button, note);
}

/** An id on one line, with its copy button. */
export function idWithCopy(id: string, what: string): HTMLElement {
  return h("span", { class: "id" }, h("code", { class: "id__text" }, id), " ", copyButton(id, what));
}
