/**
 * infra/k8s keeps what an operator relies on (support/k8s-policy.ts): probes on the gRPC health
 * service, requests and limits, non-root pods with no capability, a NetworkPolicy per workload
 * allowing exactly the calls the services' settings make (the broker never reaching the vaults'
 * database nor the internet), autoscalers and disruption budgets for the stateless services; and
 * every variable a manifest gives a service is one its typed config reads. Each rule is also shown
 * failing on a manifest that breaks it. The schemas are deploy-files.test.ts's.
 */
import { join } from "node:path";
import { METRICS, promName } from "@metaharness/telemetry";
import type { IContainer as Container } from "kubernetes-models/v1";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { endpointOf, LOADERS, variablesRead } from "../../support/deploy-files.js";
import { literalOf, loadManifests, readObjects, variablesOf, workloads, type K8sObject, type Manifests } from "../../support/k8s-manifests.js";
import { allowedCalls, policyProblems, publicEgress, type Call } from "../../support/k8s-policy.js";

const DIR = join(new URL("../../../", import.meta.url).pathname, "infra/k8s");

let m: Manifests;
beforeAll(async () => {
  // Secret files are not read here: only their names and the literals.
  m = await loadManifests(DIR, "/nonexistent");
});

const copy = (objects: readonly K8sObject[]): K8sObject[] => structuredClone(objects) as K8sObject[];
const containerOf = (objects: readonly K8sObject[], name: string): Container => workloads(objects).find((w) => w.name === name)!.pod.containers[0]!;

/** A variable's value as the container sees it ("" for a secret read from a file). */
function valuesOf(manifests: Manifests, c: Container): Record<string, string> {
  return Object.fromEntries([...variablesOf(manifests, c)].map(([k, v]) => [k, typeof v.value === "string" ? v.value : (literalOf(manifests, v.value) ?? "")]));
}

/** Every variable given to one of our services that its config does not read. */
function unreadVariables(manifests: Manifests): string[] {
  const out: string[] = [];
  for (const w of workloads(manifests.objects)) {
    const c = w.pod.containers[0]!;
    const script = c.command?.at(-1);
    if (script === undefined || LOADERS[script] === undefined) continue;
    const env = valuesOf(manifests, c);
    const read = variablesRead(script, env);
    for (const [name, { from }] of variablesOf(manifests, c)) if (!read.has(name)) out.push(`${w.name}: ${name} (${from}) is not read by its config`);
  }
  return out;
}

const URL_KEYS = new Set(["MH_MODEL_BASE_URL", "MH_OTLP_ENDPOINT", "MH_JAEGER_QUERY_URL", "MH_DATABASE_URL"]);

/**
 * The calls the services' settings make, as workload -> workload:container port: every address,
 * URL, database and Kafka broker they are given, resolved through the Services. The credential
 * proxy's MH_REMOTE_HTTP_URL is the address it hands the broker, so the broker calls it.
 */
function callsMade(manifests: Manifests): Set<Call> {
  const all = workloads(manifests.objects);
  const services = manifests.objects.filter((o) => o.kind === "Service");
  const out = new Set<Call>();
  for (const w of all) {
    for (const [key, value] of Object.entries(valuesOf(manifests, w.pod.containers[0]!))) {
      const caller = key === "MH_REMOTE_HTTP_URL" ? "sandbox-broker" : w.name;
      const addresses = /_ADDR$/.test(key) || URL_KEYS.has(key) || key === "MH_REMOTE_HTTP_URL" ? [value] : key === "MH_KAFKA_BROKERS" ? value.split(",") : [];
      for (const address of addresses) {
        const at = endpointOf(address);
        const svc = services.find((s) => s.metadata.name === at?.host);
        const spec = svc?.spec as { selector: Record<string, string>; ports: Array<{ port: number; targetPort: string | number }> } | undefined;
        const target = all.find((t) => Object.entries(spec?.selector ?? { none: "" }).every(([k, v]) => t.labels[k] === v));
        const targetPort = spec?.ports.find((p) => p.port === at?.port)?.targetPort;
        const port = target?.pod.containers.flatMap((c) => c.ports ?? []).find((p) => p.name === targetPort || p.containerPort === targetPort)?.containerPort;
        expect([w.name, key, address, target?.name !== undefined && port !== undefined]).toEqual([w.name, key, address, true]);
        out.add(`${caller} -> ${target!.name}:${port!}`);
      }
    }
  }
  return out;
}

describe("infra/k8s's policy", () => {
  it("holds: probes, limits, security contexts, a NetworkPolicy each, autoscalers and budgets", () => {
    expect(policyProblems(m.objects)).toEqual([]);
  });

  it("fails when a manifest loses a probe, a limit, its NetworkPolicy, its autoscaler or its hardening", () => {
    const noProbe = copy(m.objects);
    delete containerOf(noProbe, "harness").readinessProbe;
    expect(policyProblems(noProbe)).toEqual(["harness/harness: no readinessProbe"]);

    const tcpProbe = copy(m.objects);
    containerOf(tcpProbe, "session-log").livenessProbe = { tcpSocket: { port: "grpc" }, periodSeconds: 10 };
    expect(policyProblems(tcpProbe)).toEqual(["session-log/session-log: livenessProbe is not a gRPC health check on the health port"]);

    const noLimit = copy(m.objects);
    delete containerOf(noLimit, "gateway").resources!.limits!["memory"];
    expect(policyProblems(noLimit)).toEqual(["gateway/gateway: no limits.memory"]);

    const noPolicy = copy(m.objects).filter((o) => !(o.kind === "NetworkPolicy" && o.metadata.name === "sandbox-broker"));
    expect(policyProblems(noPolicy)).toEqual(["sandbox-broker: no NetworkPolicy of its own"]);
    // And the broker, under the default deny alone, reaches nothing: its calls are refused.
    expect([...callsMade(m)].filter((c) => c.startsWith("sandbox-broker") && !allowedCalls(noPolicy).has(c))).not.toEqual([]);

    const noDeny = copy(m.objects).filter((o) => o.metadata.name !== "default-deny");
    expect(policyProblems(noDeny)).toEqual(["no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rule)"]);

    const noScaling = copy(m.objects).filter((o) => !(o.kind === "HorizontalPodAutoscaler" && o.metadata.name === "harness") && !(o.kind === "PodDisruptionBudget" && o.metadata.name === "gateway"));
    expect(policyProblems(noScaling)).toEqual(["harness: no HorizontalPodAutoscaler", "gateway: no PodDisruptionBudget"]);

    const hostUsers = copy(m.objects);
    delete workloads(hostUsers).find((w) => w.name === "sandbox-broker")!.pod.hostUsers;
    expect(policyProblems(hostUsers)).toEqual(["sandbox-broker/sandbox-broker: /proc unmasked in a pod that shares the node's user namespace"]);
    const unconfined = copy(m.objects);
    containerOf(unconfined, "harness").securityContext!.appArmorProfile = { type: "Unconfined" };
    expect(policyProblems(unconfined)).toEqual(["harness/harness: AppArmor unconfined"]);

    const privileged = copy(m.objects);
    containerOf(privileged, "sandbox-broker").securityContext = { privileged: true };
    expect(policyProblems(privileged)).toEqual([
      "sandbox-broker/sandbox-broker: allowPrivilegeEscalation is not false",
      "sandbox-broker/sandbox-broker: privileged",
      "sandbox-broker/sandbox-broker: capabilities not dropped (drop: [ALL])",
      "sandbox-broker/sandbox-broker: root filesystem not read-only",
    ]);
  });

  it("lets through exactly the calls the services' settings make", () => {
    const made = callsMade(m);
    expect([...allowedCalls(m.objects)].sort()).toEqual([...made].sort());
    // What docs/architecture.md draws, checked by name.
    expect([...made].filter((c) => c.startsWith("sandbox-broker ->")).sort()).toEqual([
      "sandbox-broker -> credential-vault-proxy:15054",
      "sandbox-broker -> credential-vault-proxy:15055",
      "sandbox-broker -> jaeger:4318",
      "sandbox-broker -> postgres:5432",
      "sandbox-broker -> session-log:15051",
    ]);
    expect([...made].filter((c) => c.includes("-> vault-postgres:"))).toEqual(["credential-vault-proxy -> vault-postgres:5432"]);
  });

  it("gives the internet to the harness (the model, HTTPS) and the credential proxy alone; the broker and its sandboxes none", () => {
    const reach = Object.fromEntries(workloads(m.objects).map((w) => [w.name, publicEgress(m.objects, w.name)]));
    expect(reach).toEqual({
      "session-log": [],
      "credential-vault-proxy": ["0.0.0.0/0:any"],
      "sandbox-broker": [],
      "offline-model": [],
      harness: ["0.0.0.0/0:443"],
      gateway: [],
      postgres: [],
      "vault-postgres": [],
      kafka: [],
      jaeger: [],
    });
  });

  it("fails when a NetworkPolicy lets one more call through", () => {
    const wider = copy(m.objects);
    const vaultDb = wider.find((o) => o.kind === "NetworkPolicy" && o.metadata.name === "vault-postgres")!;
    (vaultDb.spec as { ingress: unknown[] }).ingress.push({ from: [{ podSelector: { matchLabels: { app: "sandbox-broker" } } }], ports: [{ port: 5432 }] });
    const broker = wider.find((o) => o.kind === "NetworkPolicy" && o.metadata.name === "sandbox-broker")!;
    (broker.spec as { egress: unknown[] }).egress.push({ to: [{ podSelector: { matchLabels: { app: "vault-postgres" } } }], ports: [{ port: 5432 }] });
    expect([...allowedCalls(wider)].filter((c) => !callsMade(m).has(c))).toEqual(["sandbox-broker -> vault-postgres:5432"]);
  });
});

describe("the manifests' variables", () => {
  it("are each read by the service's typed config", () => {
    expect(unreadVariables(m)).toEqual([]);
  });

  it("fail the test when one is renamed", () => {
    const renamed = { ...m, objects: copy(m.objects) };
    const env = containerOf(renamed.objects, "harness").env!;
    env.find((e) => e.name === "MH_SESSION_LOG_ADDR")!.name = "MH_SESSION_LOG_ADDRESS";
    expect(unreadVariables(renamed)).toEqual(["harness: MH_SESSION_LOG_ADDRESS (env) is not read by its config"]);
    const shared = { ...m, configMaps: new Map([...m.configMaps, ["metaharness-kafka", { MH_KAFKA_BROKER: "kafka:9092" }]]) };
    expect(unreadVariables(shared)).toEqual([
      "session-log: MH_KAFKA_BROKER (ConfigMap metaharness-kafka) is not read by its config",
      "harness: MH_KAFKA_BROKER (ConfigMap metaharness-kafka) is not read by its config",
    ]);
  });
});

describe("the autoscalers' custom metrics", () => {
  it("are the ones prometheus-adapter.yaml serves, over metrics of the catalog", async () => {
    const [adapter] = await readObjects(join(DIR, "prometheus-adapter.yaml"));
    const rules = (parse(adapter?.data?.["config.yaml"] ?? "") as { rules: Array<{ seriesQuery: string; name: { as: string } }> }).rules;
    const served = new Map(rules.map((r) => [r.name.as, /^[a-z_]+/.exec(r.seriesQuery)?.[0]]));
    const wanted = m.objects
      .filter((o) => o.kind === "HorizontalPodAutoscaler")
      .flatMap((o) => ((o.spec as { metrics: Array<{ pods?: { metric: { name: string } } }> }).metrics ?? []).flatMap((x) => (x.pods === undefined ? [] : [x.pods.metric.name])));
    expect(wanted.sort()).toEqual([...served.keys()].sort());
    const catalog = Object.values(METRICS).flatMap((d) => (d.kind === "histogram" ? [`${promName(d)}_count`, `${promName(d)}_sum`] : [promName(d)]));
    for (const series of served.values()) expect(catalog).toContain(series);
  });
});
