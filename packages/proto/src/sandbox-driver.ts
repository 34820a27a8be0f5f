/**
 * `Sandbox.driver` of a sandbox bound to an external hand: "external:<kind>". The broker writes
 * it; the harness and the gateway read it to tell a hand's sandbox from the session's own, so
 * the spelling lives here once.
 */
const EXTERNAL_PREFIX = "external:";

/** The driver of a sandbox on a hand of `kind`. */
export function externalDriver(kind: string): string {
  return `${EXTERNAL_PREFIX}${kind}`;
}

/** Whether `driver` is an external hand's (any kind). */
export function isExternalDriver(driver: string): boolean {
  return driver.startsWith(EXTERNAL_PREFIX);
}
