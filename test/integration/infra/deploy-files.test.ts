/**
 * The deploy files against the code, since no CI here runs Docker or a cluster: for every service
 * of infra/compose/compose.yaml and infra/k8s, its settings pass its own config loader (the one
 * typed place a service reads them), which reads every one of them; every secret file it names
 * is mounted and is one that infra/secrets.sh writes; every address it calls names a service that
 * listens there; and the certificate of each service it reaches is valid for the name it is
 * reached by. The Kubernetes objects are also checked against the API's schemas, offline
 * (kubernetes-models, and kubernetes-validate --strict); what they must hold beyond a valid shape
 * (probes, limits, isolation, scaling) is k8s-policy.test.ts's. Every place that starts a service
 * (these files, the image's CMD, its package's start script) gives node the flags its
 * package.json declares (support/node-flags.ts).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { ConfigMap, Namespace, Service } from "kubernetes-models/v1";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { configProblems, dnsNames, endpointOf, interpolate, LOADERS, variablesRead } from "../../support/deploy-files.js";
import { loadManifests, readObjects, variablesOf, workloads, type SecretSource } from "../../support/k8s-manifests.js";
import { nodeFlagsOf } from "../../support/node-flags.js";
import { pythonTools } from "../../support/python-tools.js";

const ROOT = new URL("../../../", import.meta.url).pathname;
const API_KEY = "mh-deploy-files-test-key-0123456789";

let secrets: string;
beforeAll(async () => {
  secrets = await mkdtemp(join(tmpdir(), "mh-deploy-secrets-"));
  await promisify(execFile)("bash", [join(ROOT, "infra/secrets.sh"), secrets]);
});
afterAll(() => rm(secrets, { recursive: true, force: true }));

/** A service as a deploy file describes it: its script, node's flags, settings and mounted secrets (path in the container -> file here). */
interface Described {
  readonly name: string;
  readonly script: string;
  readonly flags: readonly string[];
  readonly env: Record<string, string>;
  readonly mounted: ReadonlyMap<string, string>;
}

const ADDRESS_KEYS = /^MH_.*_ADDR$|^MH_REMOTE_HTTP_URL$|^MH_MODEL_BASE_URL$/;
const PORT_OF: Readonly<Record<string, string>> = { grpc: "MH_GRPC_PORT", http: "MH_HTTP_PORT" };

async function checkAll(services: readonly Described[], listens: (host: string, port: number) => Described | undefined): Promise<void> {
  expect(services.map((s) => s.script).sort()).toEqual(Object.keys(LOADERS).sort());
  for (const s of services) {
    expect([s.name, configProblems(s.script, s.env)]).toEqual([s.name, []]);
    // Every variable given is one its config reads: a renamed or misspelt one is not silently ignored.
    const read = variablesRead(s.script, s.env);
    expect([s.name, Object.keys(s.env).filter((k) => !read.has(k))]).toEqual([s.name, []]);
    expect([s.name, s.flags]).toEqual([s.name, nodeFlagsOf(s.script)]);
    for (const [key, value] of Object.entries(s.env)) {
      if (value.startsWith("/secrets/")) {
        const file = s.mounted.get(value);
        expect([s.name, key, file !== undefined && existsSync(file)]).toEqual([s.name, key, true]);
      }
      if (!ADDRESS_KEYS.test(key)) continue;
      const at = endpointOf(value);
      const target = at === undefined ? undefined : listens(at.host, at.port);
      expect([s.name, key, target?.name]).toEqual([s.name, key, at?.host]);
      // Reached over TLS: the target's certificate must be valid for the name it is reached by.
      const cert = target?.env["MH_GRPC_TLS_CERT_FILE"];
      if (at !== undefined && cert !== undefined && key !== "MH_MODEL_BASE_URL") {
        expect([s.name, key, await dnsNames(target?.mounted.get(cert) ?? "")]).toEqual([s.name, key, expect.arrayContaining([at.host])]);
      }
    }
  }
}

describe("infra/compose/compose.yaml", () => {
  it("gives every service settings its config accepts, its own secrets, and addresses that answer", async () => {
    const dir = join(ROOT, "infra/compose");
    const doc = parse(await readFile(join(dir, "compose.yaml"), "utf8"), { merge: true }) as {
      services: Record<string, { command?: string[]; environment?: Record<string, string | number>; secrets?: Array<{ source: string; target: string }>; ports?: string[] }>;
      secrets: Record<string, { file: string }>;
    };
    const services: Described[] = [];
    for (const [name, svc] of Object.entries(doc.services)) {
      const script = svc.command?.at(-1);
      if (script === undefined) continue;
      const flags = svc.command?.slice(1, -1) ?? [];
      const env = Object.fromEntries(Object.entries(svc.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), { MH_API_KEY: API_KEY })]));
      const mounted = new Map(
        (svc.secrets ?? []).map((m) => [m.target, join(secrets, (doc.secrets[m.source]?.file ?? "").replace(/^\.\/secrets\//, ""))]),
      );
      services.push({ name, script, flags, env, mounted });
    }
    const listens = (host: string, port: number): Described | undefined =>
      services.find((s) => s.name === host && [s.env["MH_GRPC_PORT"], s.env["MH_HTTP_PORT"], s.env["MH_REMOTE_HTTP_PORT"], s.env["MH_OFFLINE_MODEL_PORT"]].includes(String(port)));
    await checkAll(services, listens);
  });
});

describe("infra/k8s", () => {
  it("holds valid Kubernetes objects whose services pass their config, with their own secrets, reaching each other", async () => {
    const dir = join(ROOT, "infra/k8s");
    const m = await loadManifests(dir, secrets);
    for (const keys of m.secrets.values()) for (const f of keys.values()) if ("file" in f) expect([f.file, existsSync(f.file)]).toEqual([f.file, true]);

    // Every object against its API schema: the kustomization's, and prometheus-adapter.yaml's, applied apart.
    const objects = [...m.objects, ...(await readObjects(join(dir, "prometheus-adapter.yaml")))];
    const models = { Deployment, StatefulSet, Service, Namespace, ConfigMap, NetworkPolicy, HorizontalPodAutoscaler, PodDisruptionBudget } as const;
    for (const o of objects) {
      const Model = models[o.kind as keyof typeof models];
      expect([o.kind, Model !== undefined]).toEqual([o.kind, true]);
      expect(() => new Model(o as never).validate()).not.toThrow();
    }

    const services: Described[] = [];
    for (const w of workloads(m.objects).filter((x) => x.kind === "Deployment")) {
      const container = w.pod.containers[0]!;
      const script = container.command?.at(-1);
      if (script === undefined) continue;
      const flags = container.command?.slice(1, -1) ?? [];
      const secretName = w.pod.volumes?.find((v) => v.secret !== undefined)?.secret?.secretName;
      const keys = secretName === undefined ? new Map<string, SecretSource>() : (m.secrets.get(secretName) ?? new Map<string, SecretSource>());
      const env: Record<string, string> = {};
      for (const [name, { value }] of variablesOf(m, container)) {
        if (typeof value === "string") env[name] = value;
        else {
          const source = m.secrets.get(value.secret)?.get(value.key);
          env[name] = source === undefined ? "" : "literal" in source ? source.literal : (await readFile(source.file, "utf8")).trim();
        }
      }
      const mounted = new Map([...keys].flatMap(([k, f]) => ("file" in f ? [[`/secrets/${k}`, f.file] as const] : [])));
      services.push({ name: w.name, script, flags, env, mounted });
    }
    const k8sServices = m.objects.filter((o) => o.kind === "Service") as unknown as Array<Service & { metadata: { name: string } }>;
    const listens = (host: string, port: number): Described | undefined => {
      const svc = k8sServices.find((s) => s.metadata.name === host);
      const portName = svc?.spec?.ports?.find((p) => p.port === port)?.targetPort;
      const target = services.find((s) => s.name === host);
      const declared = typeof portName === "string" ? target?.env[PORT_OF[portName] ?? ""] ?? target?.env["MH_OFFLINE_MODEL_PORT"] : undefined;
      const remote = portName === "remote" ? target?.env["MH_REMOTE_HTTP_PORT"] : undefined;
      return (remote ?? declared) === String(port) ? target : undefined;
    };
    await checkAll(services, listens);
  });
});

describe("infra/k8s against the Kubernetes API's schemas, strictly (kubernetes-validate, offline)", () => {
  const FILES = ["namespace.yaml", "data.yaml", "services.yaml", "scaling.yaml", "network.yaml", "prometheus-adapter.yaml"];
  const validate = async (files: readonly string[], version: string): Promise<{ code: number; out: string }> => {
    const python = await pythonTools();
    const args = ["-m", "kubernetes_validate", "--strict", "--quiet", "--no-warn", "-k", version, ...files];
    return promisify(execFile)(python, args, { maxBuffer: 64 * 1024 * 1024 }).then(
      ({ stdout }) => ({ code: 0, out: stdout }),
      (err: { code?: number; stdout?: string }) => ({ code: err.code ?? -1, out: (err.stdout ?? "").split("\n").filter((l) => l.startsWith("ERROR")).join("\n") }),
    );
  };

  it("holds no unknown field and no bad value, on Kubernetes 1.30 (the oldest with every field used) and 1.37", async () => {
    const files = FILES.map((f) => join(ROOT, "infra/k8s", f));
    expect(await validate(files, "1.30.0")).toEqual({ code: 0, out: "" });
    expect(await validate(files, "1.37.0")).toEqual({ code: 0, out: "" });
    expect(await readdir(join(ROOT, "infra/k8s")).then((all) => all.filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml").sort())).toEqual([...FILES].sort());
  }, 600_000);

  it("fails on a misspelt field, which kubernetes-models lets through", async () => {
    const services = await readFile(join(ROOT, "infra/k8s/services.yaml"), "utf8");
    const bad = join(secrets, "misspelt.yaml");
    await writeFile(bad, services.replace("readinessProbe: { grpc: { port: 15060 }, periodSeconds: 5 }", "readinessProbes: { grpc: { port: 15060 }, periodSeconds: 5 }"));
    const { code, out } = await validate([bad], "1.37.0");
    expect(code).not.toBe(0);
    expect(out).toContain("deployment/session-log");
    expect(out).toContain("'readinessProbes' was unexpected");
  }, 600_000);
});

describe("node's flags outside the deploy files", () => {
  it("are the declared ones in the image's CMD and in every service's start script", async () => {
    const dockerfile = await readFile(join(ROOT, "infra/docker/Dockerfile"), "utf8");
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)?.[1] ?? "[]") as string[];
    const script = cmd.at(-1) ?? "";
    expect([cmd[0], cmd.slice(1, -1)]).toEqual(["node", nodeFlagsOf(script)]);
    for (const main of Object.keys(LOADERS)) {
      const dir = main.replace(/\/dist\/main\.js$/, "");
      const pkg = JSON.parse(await readFile(join(ROOT, dir, "package.json"), "utf8")) as { scripts?: Record<string, string> };
      const start = pkg.scripts?.["start"];
      if (start !== undefined) expect([dir, start]).toEqual([dir, ["node", ...nodeFlagsOf(main), "dist/main.js"].join(" ")]);
    }
  });
});

describe("default ports", () => {
  it("lie below the kernel's ephemeral range, where no outgoing connection can take one before the service binds it", async () => {
    // Linux's default range is 32768-60999; this machine's is read when it says.
    const range = await readFile("/proc/sys/net/ipv4/ip_local_port_range", "utf8").catch(() => "32768 60999");
    const [low = 32768, high = 60999] = range.trim().split(/\s+/).map(Number);
    const files = [
      ...Object.keys(LOADERS).map((script) => script.replace("/dist/main.js", "/src/config.ts")),
      "apps/sandbox-broker/src/examples/kv-device.ts",
      "infra/compose/compose.yaml",
      "infra/k8s/services.yaml",
      "infra/stack/common.sh",
      "infra/README.md",
      "docs/api.md",
      "README.md",
      "apps/sandbox-broker/README.md",
      "apps/credential-vault-proxy/README.md",
    ];
    const ports: Array<[string, number]> = [];
    for (const file of files) {
      const text = await readFile(join(ROOT, file), "utf8");
      const found = [
        ...text.matchAll(/env\.port\("[A-Z_]+", \{ default: (\d+) \}\)/g),
        ...text.matchAll(/(?:127\.0\.0\.1|localhost|[a-z][a-z-]*[a-z]):(\d{4,5})\b/g),
        ...text.matchAll(/(?:PORT|[pP]ort)["']?:? ?"?(\d{4,5})\b/g),
        ...text.matchAll(/MH_STACK_PORT_BASE:-(\d+)/g),
      ];
      for (const m of found) ports.push([file, Number(m[1])]);
    }
    // The stack's ports run from its base to the base + 10 + one per harness.
    const base = ports.find(([file]) => file === "infra/stack/common.sh")?.[1];
    expect(base).toBeDefined();
    ports.push(["infra/stack/common.sh (the harnesses, up to 9)", base! + 19]);
    expect(ports.length).toBeGreaterThan(20);
    expect(ports.filter(([, port]) => port >= low && port <= high)).toEqual([]);
  });
});
