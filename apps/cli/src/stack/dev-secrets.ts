/**
 * The files the credential vault proxy of the embedded stack needs: its master key and the
 * service tokens of the gateway (admin), the harness and the sandbox broker. Secrets are files,
 * never settings (as in a distributed deployment), written 0600 in a directory only this user
 * reads. With a data directory the master key is kept, so the vaults stored in PGlite stay
 * readable across `mh dev` restarts; the service tokens are new at each start. Without one, the
 * files live in a temporary directory removed at stop.
 */
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { newMasterKeyText } from "@metaharness/credential-vault-proxy";

export interface DevSecrets {
  readonly masterKeyFile: string;
  readonly serviceTokensFile: string;
  readonly tokenFile: { readonly gateway: string; readonly harness: string; readonly broker: string };
  /** Removes what is not meant to outlive the stack. */
  dispose(): Promise<void>;
}

export async function writeDevSecrets(dataDir: string | undefined): Promise<DevSecrets> {
  const dir = dataDir === undefined ? await mkdtemp(join(tmpdir(), "mh-dev-secrets-")) : resolve(dataDir, "secrets");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);

  const masterKeyFile = join(dir, "master.key");
  const existing = await readFile(masterKeyFile, "utf8").catch(() => undefined);
  if (existing === undefined || existing.trim() === "") await writeFile(masterKeyFile, newMasterKeyText(), { mode: 0o600 });

  const token = (): string => randomBytes(32).toString("base64url");
  const tokens = { gateway: token(), harness: token(), broker: token() };
  const services = [
    { name: "gateway", role: "admin", token: tokens.gateway },
    { name: "harness", role: "harness", token: tokens.harness },
    { name: "sandbox-broker", role: "broker", token: tokens.broker },
  ];
  const serviceTokensFile = join(dir, "services.json");
  await writeFile(serviceTokensFile, JSON.stringify({ services }), { mode: 0o600 });
  const tokenFile = { gateway: join(dir, "gateway.token"), harness: join(dir, "harness.token"), broker: join(dir, "broker.token") };
  for (const name of ["gateway", "harness", "broker"] as const) await writeFile(tokenFile[name], tokens[name], { mode: 0o600 });

  return {
    masterKeyFile,
    serviceTokensFile,
    tokenFile,
    dispose: async () => {
      if (dataDir === undefined) await rm(dir, { recursive: true, force: true });
      else await Promise.all(Object.values(tokenFile).map((f) => rm(f, { force: true })));
    },
  };
}
