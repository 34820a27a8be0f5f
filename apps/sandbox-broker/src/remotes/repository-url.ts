/**
 * Repository URLs in one canonical form, so that what a sandbox names (as git writes it) and what
 * Provision asked for compare equal: http(s) only, no user info, lower-case host, no default
 * port, no trailing slash, no fragment.
 */
export function normalizeRepositoryUrl(raw: string): string | undefined {
  if (!URL.canParse(raw)) return undefined;
  const url = new URL(raw);
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username !== "" || url.password !== "") return undefined;
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}${url.search}`;
}
