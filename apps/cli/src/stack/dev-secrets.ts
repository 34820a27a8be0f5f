/**
 * The files the embedded stack's guarded services need: the credential vault proxy's master key and
 * the service tokens it accepts (the gateway as admin, the harness, the sandbox broker), and the
 * token the sandbox broker accepts from the harness (another than the harness shows the proxy, so
 * neither service can replay it to the other). Secrets are files,
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
  /** The proxy's MH_SERVICE_TOKENS_FILE. */
  readonly serviceTokensFile: string;
  /** The sandbox broker's MH_SERVICE_TOKENS_FILE. */
  readonly brokerServiceTokensFile: string;
  /** Each caller's own token: for the proxy (gateway, harness, broker), and the harness's for the broker. */
  readonly tokenFile: { readonly gateway: string; readonly harness: string; readonly broker: string; readonly harnessToBroker: string };
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
  const tokens = { gateway: token(), harness: token(), broker: token(), harnessToBroker: token() };
  const services = [
    { name: "gateway", role: "admin", token: tokens.gateway },
    { name: "harness", role: "harness", token: tokens.harness },
    { name: "sandbox-broker", role: "broker", token: tokens.broker },
  ];
  const serviceTokensFile = join(dir, "services.json");
  await writeFile(serviceTokensFile, JSON.stringify({ services }), { mode: 0o600 });
  const brokerServiceTokensFile = join(dir, "broker-services.json");
  const brokerServices = [{ name: "harness", role: "harness", token: tokens.harnessToBroker }];
  await writeFile(brokerServiceTokensFile, JSON.stringify({ services: brokerServices }), { mode: 0o600 });
  const tokenFile = {
    gateway: join(dir, "gateway.token"),
    harness: join(dir, "harness.token"),
    broker: join(dir, "broker.token"),
    harnessToBroker: join(dir, "harness-broker.token"),
  };
  for (const name of ["gateway", "harness", "broker", "harnessToBroker"] as const) await writeFile(tokenFile[name], tokens[name], { mode: 0o600 });

  return {
    masterKeyFile,
    serviceTokensFile,
    brokerServiceTokensFile,
    tokenFile,
    dispose: async () => {
      if (dataDir === undefined) await rm(dir, { recursive: true, force: true });
      else await Promise.all(Object.values(tokenFile).map((f) => rm(f, { force: true })));
    },
  };
}
