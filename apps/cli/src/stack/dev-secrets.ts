/**
 * The files the embedded stack's guarded services need: the credential vault proxy's master key,
 * and for each guarded service (session log, proxy, sandbox broker, harness) the service tokens file it
 * reads, with one token per caller. A caller holds a different token for each service it calls,
 * so no service can replay what it was shown to another. Secrets are files, never settings (as in
 * a distributed deployment), written 0600 in a directory only this user reads. With a data
 * directory the master key is kept, so the vaults stored in PGlite stay readable across `mh dev`
 * restarts; the service tokens are new at each start. Without one, the files live in a temporary
 * directory removed at stop.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { newMasterKeyText } from "@metaharness/credential-vault-proxy";

/** The kind of external hand `mh dev` issues a token for: the broker's example device. */
export const DEV_HAND_KIND = "kv-device";

/**
 * Who calls which guarded service, with which role there, and the scopes some roles take. The
 * broker's `hand` is for an external hand the developer runs, the example kv device (as
 * infra/secrets.sh issues one to the distributed stack): it may register that kind only; its
 * `operator` is the developer, to provision sandboxes on such a hand over gRPC.
 */
const CALLERS = {
  log: { gateway: "admin", harness: "harness", broker: "broker", proxy: "proxy" },
  proxy: { gateway: "admin", harness: "harness", broker: "broker" },
  broker: { harness: "harness", hand: "hand", operator: "admin", gateway: "gateway" },
  harness: { gateway: "admin" },
} as const;
const SCOPES: Readonly<Record<string, readonly string[]>> = { "broker/hand": [DEV_HAND_KIND] };

type Service = keyof typeof CALLERS;
type CallerOf<S extends Service> = keyof (typeof CALLERS)[S];

export interface DevSecrets {
  readonly masterKeyFile: string;
  /** Each guarded service's MH_SERVICE_TOKENS_FILE. */
  readonly tokensFile: Readonly<Record<Service, string>>;
  /** The file holding `caller`'s token for `service`. */
  tokenFile<S extends Service>(service: S, caller: CallerOf<S>): string;
  /** Removes what is not meant to outlive the stack. */
  dispose(): Promise<void>;
}

export async function writeDevSecrets(dataDir: string | undefined): Promise<DevSecrets> {
  // Made and watched in one synchronous stretch: a signal is handled between awaits, and one
  // that came after the directory existed but before its exit handler did would leave it behind.
  const dir = dataDir === undefined ? mkdtempSync(join(tmpdir(), "mh-dev-secrets-")) : resolve(dataDir, "secrets");
  const written: string[] = [];
  // A process that exits before its stack is stopped (Ctrl-C while it starts ends `mh run` at
  // once) takes its secrets with it: the exit handlers run even on process.exit, and
  // synchronously, so the tokens and a temporary master key do not stay behind in /tmp.
  const removeNow = (): void => {
    if (dataDir === undefined) rmSync(dir, { recursive: true, force: true });
    else for (const f of written) rmSync(f, { force: true });
  };
  process.once("exit", removeNow);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);

  const masterKeyFile = join(dir, "master.key");
  const existing = await readFile(masterKeyFile, "utf8").catch(() => undefined);
  if (existing === undefined || existing.trim() === "") await writeFile(masterKeyFile, newMasterKeyText(), { mode: 0o600 });

  const secretFile = async (name: string, text: string): Promise<string> => {
    const file = join(dir, name);
    written.push(file); // before it exists, for the exit handler
    await writeFile(file, text, { mode: 0o600 });
    return file;
  };
  const tokensFile = {} as Record<Service, string>;
  for (const service of Object.keys(CALLERS) as Service[]) {
    const services = [];
    for (const [caller, role] of Object.entries(CALLERS[service])) {
      const token = randomBytes(32).toString("base64url");
      await secretFile(`${caller}-${service}.token`, token);
      const scopes = SCOPES[`${service}/${caller}`];
      services.push({ name: caller, role, token, ...(scopes === undefined ? {} : { scopes }) });
    }
    tokensFile[service] = await secretFile(`${service}-services.json`, JSON.stringify({ services }));
  }


  return {
    masterKeyFile,
    tokensFile,
    tokenFile: (service, caller) => join(dir, `${String(caller)}-${service}.token`),
    dispose: async () => {
      process.off("exit", removeNow);
      if (dataDir === undefined) await rm(dir, { recursive: true, force: true });
      else await Promise.all(written.map((f) => rm(f, { force: true })));
    },
  };
}
