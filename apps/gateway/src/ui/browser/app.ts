/**
 * The page's entry point: asks for an API key when the tab has none, then renders the page the
 * path names (/ui/, /ui/sessions/:id or /ui/traces/:id). A key the gateway refuses is forgotten
 * and asked for again. The key is checked against /v1/sessions before it is kept.
 */
import { currentKey, forgetKey, getJson, HttpError, onLoopback, storeKey } from "./api.js";
import { byId, h, meta, replaceChildren } from "./dom.js";
import { listPage } from "./list-page.js";
import type { PageContext } from "./page-context.js";
import { sessionPage } from "./session-page.js";
import { tracePage } from "./trace-page.js";
import { pagePrices } from "./usage-view.js";
import { notice } from "./widgets.js";

const main = byId("main");
const keyStatus = byId("key-status");

function showKeyStatus(): void {
  const key = currentKey();
  if (key === undefined) return replaceChildren(keyStatus);
  const forget = h("button", { type: "button", class: "link-button" }, "Forget key");
  forget.addEventListener("click", () => {
    forgetKey();
    askForKey();
  });
  replaceChildren(keyStatus, h("span", { class: "muted", title: "The API key this page uses" }, `key …${key.slice(-4)}`), " ", forget);
}

function askForKey(problem?: string): void {
  showKeyStatus();
  document.title = "API key · Meta-Harness";
  const input = h("input", { id: "api-key", name: "api-key", type: "password", autocomplete: "off", spellcheck: "false", required: true, minlength: 16, "aria-describedby": "key-help" });
  const error = h("p", { class: "form-error", role: "alert" }, problem ?? "");
  const submit = h("button", { type: "submit", class: "button button--primary" }, "Open");
  const form = h(
    "form",
    { class: "key-form" },
    h("label", { for: "api-key" }, "API key"),
    h("div", { class: "key-form__row" }, input, submit),
    error,
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const key = input.value.trim();
    submit.disabled = true;
    error.textContent = "";
    storeKey(key);
    getJson("/v1/sessions?limit=1")
      .then(() => route())
      .catch((err: unknown) => {
        forgetKey();
        submit.disabled = false;
        error.textContent = err instanceof HttpError && err.status === 401 ? "The gateway refused this key." : `Could not check the key: ${String(err)}`;
      });
  });
  replaceChildren(
    main,
    h(
      "section",
      { class: "card key-card", "aria-labelledby": "key-title" },
      h("h1", { id: "key-title" }, "Open your sessions"),
      h(
        "p",
        { id: "key-help" },
        `Enter an API key of this gateway. The page shows the sessions of the key's tenant only. ${
          onLoopback()
            ? "This gateway runs on this machine, so the browser keeps the key (local storage) for its other tabs until you choose Forget key."
            : "The key stays in this browser tab (session storage, cleared when the tab closes)."
        } It is sent only to this gateway, as the x-api-key header.`,
      ),
      form,
    ),
  );
  input.focus();
}

const ctx: PageContext = {
  traceTemplate: meta("mh-trace-url-template"),
  prices: pagePrices(meta("mh-model-prices")),
  unauthorized(err) {
    forgetKey();
    askForKey(`The gateway refused the key: ${err.message}`);
  },
};

function route(): void {
  if (currentKey() === undefined) return askForKey();
  showKeyStatus();
  const path = location.pathname.replace(/\/+$/, "");
  const session = /^\/ui\/sessions\/([^/]+)$/.exec(path);
  const trace = /^\/ui\/traces\/([^/]+)$/.exec(path);
  if (path === "/ui") return listPage(main, ctx);
  if (session?.[1] !== undefined) {
    void sessionPage(main, decodeURIComponent(session[1]), ctx);
    return;
  }
  if (trace?.[1] !== undefined) {
    void tracePage(main, decodeURIComponent(trace[1]), ctx);
    return;
  }
  replaceChildren(main, notice(`Nothing here: ${location.pathname}`, "error"), h("p", {}, h("a", { href: "/ui/" }, "All sessions")));
}

route();
