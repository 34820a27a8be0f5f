/**
 * The browser side of the session page: these modules are compiled by their own tsc project
 * (tsconfig.json here: the DOM's types, which the server's code does not see) and served as they
 * are (no bundler), so they import only each other (`./x.js`) and types. This file gives the one
 * helper every view builds elements with:
 * text always goes in as text (never as HTML), so nothing from an event can become markup.
 */

type Child = Node | string | number | false | null | undefined;
type Attrs = Readonly<Record<string, string | number | boolean | undefined | null>>;

/** `h("a", { href, class: "x" }, "text", child)`. `false`/`null` attributes and children are skipped. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, ...children);
  return el;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    parent.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
}

export function replaceChildren(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`missing #${id}`);
  return el as T;
}

/** The content of `<meta name=...>`, set by the server. */
export function meta(name: string): string {
  return document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
}
