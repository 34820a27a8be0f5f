/**
 * A service tokens file (the MH_SERVICE_TOKENS_FILE a guarded service reads) and each caller's
 * token, in a private temp directory: one caller per role, named after it.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface ServiceTokenFiles<R extends string> {
  /** The service's MH_SERVICE_TOKENS_FILE. */
  readonly file: string;
  readonly tokens: Readonly<Record<R, string>>;
  /** Each caller's token in a file of its own (what a calling service reads). */
  readonly tokenFile: Readonly<Record<R, string>>;
  dispose(): Promise<void>;
}

/** One caller per role; `scopes` narrows a role's caller (its entry's "scopes"). */
export async function writeServiceTokens<R extends string>(
  roles: readonly R[],
  scopes: Partial<Record<R, readonly string[]>> = {},
): Promise<ServiceTokenFiles<R>> {
  const dir = await mkdtemp(join(tmpdir(), "mh-service-tokens-"));
  const tokens = {} as Record<R, string>;
  const tokenFile = {} as Record<R, string>;
  for (const role of roles) {
    tokens[role] = randomBytes(32).toString("base64url");
    tokenFile[role] = join(dir, `${role}.token`);
    await writeFile(tokenFile[role], `${tokens[role]}\n`, { mode: 0o600 });
  }
  const file = join(dir, "services.json");
  const services = roles.map((role) => ({ name: `test-${role}`, role, token: tokens[role], ...(scopes[role] === undefined ? {} : { scopes: scopes[role] }) }));
  await writeFile(file, JSON.stringify({ services }), { mode: 0o600 });
  return { file, tokens, tokenFile, dispose: () => rm(dir, { recursive: true, force: true }) };
}
