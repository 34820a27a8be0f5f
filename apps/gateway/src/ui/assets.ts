/**
 * The page's static files, read once at start and served from memory: the browser modules tsc
 * compiled from src/ui/browser/ (next to this file in dist/), and the stylesheet from
 * ui-assets/. Each carries an ETag, so a reload revalidates instead of downloading again.
 */
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";

export interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
}

const BROWSER_DIR = new URL("./browser/", import.meta.url);
const STATIC_DIR = new URL("../../ui-assets/", import.meta.url);
/** A file name the page may ask for: no path, no dot files. */
export const ASSET_NAME = /^[a-z0-9][a-z0-9-]*\.(?:js|css)$/;

const TYPES: Readonly<Record<string, string>> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};

function asset(body: Buffer, name: string): Asset {
  const ext = name.slice(name.lastIndexOf(".") + 1);
  return {
    body,
    contentType: TYPES[ext] ?? "application/octet-stream",
    etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
  };
}

async function readDir(dir: URL, ext: string): Promise<Map<string, Asset>> {
  const out = new Map<string, Asset>();
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.endsWith(ext) || !ASSET_NAME.test(name)) continue;
    out.set(name, asset(await readFile(new URL(name, dir)), name));
  }
  return out;
}

/**
 * Every asset by file name. Run from sources (not compiled), there are no browser modules: the
 * page then says so instead of failing silently.
 */
export async function loadAssets(): Promise<ReadonlyMap<string, Asset>> {
  const [scripts, styles] = await Promise.all([readDir(BROWSER_DIR, ".js"), readDir(STATIC_DIR, ".css")]);
  return new Map([...scripts, ...styles]);
}
