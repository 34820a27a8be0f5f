/**
 * What infra/k8s must keep, as checks that name what is missing: every container probed, with
 * requests and limits, non-root, no capability, no escalation, a read-only root (unless listed
 * with its reason); gRPC services probed through their health port; every workload under a
 * NetworkPolicy of its own and a default deny; the stateless services autoscaled with a
 * disruption budget. And the calls the NetworkPolicies allow between the pods, computed the way
 * Kubernetes combines them (an egress rule of the caller and an ingress rule of the callee), to be
 * compared with the calls the services' settings make.
 */
import type { IContainer as Container, IProbe as Probe } from "kubernetes-models/v1";
import type { INetworkPolicyPeer as NetworkPolicyPeer, INetworkPolicyPort as NetworkPolicyPort, INetworkPolicySpec as NetworkPolicySpec } from "kubernetes-models/networking.k8s.io/v1";
import { workloads, type K8sObject, type Workload } from "./k8s-manifests.js";

/** Containers allowed a writable root, and why. */
export const WRITABLE_ROOT: Readonly<Record<string, string>> = {
  kafka: "apache/kafka's start script writes its configuration under /opt/kafka",
};
/** Containers allowed seccomp and AppArmor unconfined and an unmasked /proc, and why (infra/k8s/services.yaml says more). */
export const RELAXED: Readonly<Record<string, string>> = {
  "sandbox-broker": "bubblewrap makes namespaces, mounts and a fresh /proc in them, which the runtime's defaults refuse; each sandbox gets the broker's own filter",
};
/** The stateless services: autoscaled, with a disruption budget, and no replica count of their own. */
export const SCALED: Readonly<Record<string, { readonly metrics: readonly string[] }>> = {
  harness: { metrics: ["cpu", "metaharness_sessions_active"] },
  gateway: { metrics: ["cpu", "metaharness_gateway_requests_per_second"] },
  "session-log": { metrics: ["cpu"] },
};

const BOTH_WAYS = ["Ingress", "Egress"] as const;
const isProbe = (p: Probe | undefined): boolean => p !== undefined && (p.grpc ?? p.httpGet ?? p.tcpSocket ?? p.exec) !== undefined;

function containerProblems(w: Workload, c: Container): string[] {
  const at = `${w.name}/${c.name}`;
  const out: string[] = [];
  for (const probe of ["readinessProbe", "livenessProbe"] as const) if (!isProbe(c[probe])) out.push(`${at}: no ${probe}`);
  // A gRPC service's probes ask its health service (the kubelet's gRPC probe, on the plaintext health port).
  const health = c.ports?.find((p) => p.name === "health")?.containerPort;
  if (c.ports?.some((p) => p.name === "grpc") === true) {
    if (health === undefined) out.push(`${at}: a gRPC service without a health port`);
    for (const probe of ["readinessProbe", "livenessProbe"] as const) {
      if (isProbe(c[probe]) && c[probe]?.grpc?.port !== health) out.push(`${at}: ${probe} is not a gRPC health check on the health port`);
    }
    if (c.env?.find((e) => e.name === "MH_GRPC_HEALTH_PORT")?.value !== String(health)) out.push(`${at}: MH_GRPC_HEALTH_PORT is not its health port`);
  }
  for (const kind of ["requests", "limits"] as const) {
    for (const resource of ["cpu", "memory"]) if (c.resources?.[kind]?.[resource] === undefined) out.push(`${at}: no ${kind}.${resource}`);
  }
  const sc = c.securityContext;
  if (sc?.allowPrivilegeEscalation !== false) out.push(`${at}: allowPrivilegeEscalation is not false`);
  if (sc?.privileged === true) out.push(`${at}: privileged`);
  if (!(sc?.capabilities?.drop ?? []).includes("ALL")) out.push(`${at}: capabilities not dropped (drop: [ALL])`);
  if ((sc?.capabilities?.add ?? []).length > 0) out.push(`${at}: adds capabilities ${String(sc?.capabilities?.add)}`);
  if (sc?.readOnlyRootFilesystem !== true && WRITABLE_ROOT[w.name] === undefined) out.push(`${at}: root filesystem not read-only`);
  const seccomp = sc?.seccompProfile?.type ?? w.pod.securityContext?.seccompProfile?.type;
  if (RELAXED[w.name] === undefined) {
    if (seccomp !== "RuntimeDefault") out.push(`${at}: seccomp profile ${seccomp ?? "unset"}, not RuntimeDefault`);
    const appArmor = sc?.appArmorProfile?.type ?? w.pod.securityContext?.appArmorProfile?.type;
    if (appArmor === "Unconfined") out.push(`${at}: AppArmor unconfined`);
    if (sc?.procMount === "Unmasked") out.push(`${at}: /proc unmasked`);
  } else if (sc?.procMount === "Unmasked" && w.pod.hostUsers !== false) {
    out.push(`${at}: /proc unmasked in a pod that shares the node's user namespace`);
  }
  return out;
}

function selects(policy: K8sObject, labels: Readonly<Record<string, string>>): boolean {
  const match = (policy.spec as NetworkPolicySpec).podSelector?.matchLabels ?? {};
  return Object.entries(match).every(([k, v]) => labels[k] === v);
}

/** Everything the manifests lack of the rules above; [] when they keep them all. */
export function policyProblems(objects: readonly K8sObject[]): string[] {
  const out: string[] = [];
  const policies = objects.filter((o) => o.kind === "NetworkPolicy");
  const denyAll = policies.find((p) => {
    const spec = p.spec as NetworkPolicySpec;
    return Object.keys(spec.podSelector?.matchLabels ?? {}).length === 0 && spec.ingress === undefined && spec.egress === undefined;
  });
  if (denyAll === undefined || !BOTH_WAYS.every((t) => (denyAll.spec as NetworkPolicySpec).policyTypes?.includes(t) === true)) {
    out.push("no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rule)");
  }
  for (const w of workloads(objects)) {
    if (w.pod.securityContext?.runAsNonRoot !== true) out.push(`${w.name}: pod not runAsNonRoot`);
    if (w.pod.automountServiceAccountToken !== false) out.push(`${w.name}: mounts a service account token it never uses`);
    for (const c of w.pod.containers) out.push(...containerProblems(w, c));
    const own = policies.find((p) => p.metadata.name === w.name);
    if (own === undefined || !selects(own, w.labels)) out.push(`${w.name}: no NetworkPolicy of its own`);
    else if (!BOTH_WAYS.every((t) => (own.spec as NetworkPolicySpec).policyTypes?.includes(t) === true)) out.push(`${w.name}: its NetworkPolicy does not rule both ways`);
  }
  for (const [name, { metrics }] of Object.entries(SCALED)) {
    const deployment = objects.find((o) => o.kind === "Deployment" && o.metadata.name === name);
    if (deployment === undefined) continue;
    if ((deployment.spec as { replicas?: number }).replicas !== undefined) out.push(`${name}: sets replicas, which its autoscaler owns`);
    const hpa = objects.find(
      (o) => o.kind === "HorizontalPodAutoscaler" && (o.spec as { scaleTargetRef: { kind: string; name: string } }).scaleTargetRef.name === name,
    );
    if (hpa === undefined) out.push(`${name}: no HorizontalPodAutoscaler`);
    else {
      const spec = hpa.spec as { minReplicas?: number; metrics?: Array<{ type: string; resource?: { name: string }; pods?: { metric: { name: string } } }> };
      const named = (spec.metrics ?? []).map((m) => m.resource?.name ?? m.pods?.metric.name ?? m.type);
      for (const metric of metrics) if (!named.includes(metric)) out.push(`${name}: its autoscaler does not scale on ${metric}`);
      if ((spec.minReplicas ?? 1) < 2) out.push(`${name}: its autoscaler may leave one replica`);
    }
    const labels = (deployment.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
    const pdb = objects.find(
      (o) => o.kind === "PodDisruptionBudget" && Object.entries((o.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels).every(([k, v]) => labels[k] === v),
    );
    if (pdb === undefined) out.push(`${name}: no PodDisruptionBudget`);
  }
  return out;
}

/** A call between two workloads: "harness -> session-log:15051". */
export type Call = string;

const peerMatches = (peer: NetworkPolicyPeer, labels: Readonly<Record<string, string>>): boolean =>
  peer.ipBlock === undefined &&
  (peer.namespaceSelector === undefined || Object.keys(peer.namespaceSelector.matchLabels ?? {}).length === 0) &&
  Object.entries(peer.podSelector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
  (peer.podSelector !== undefined || peer.namespaceSelector !== undefined);

const portMatches = (ports: readonly NetworkPolicyPort[] | undefined, port: number): boolean =>
  ports === undefined || ports.some((p) => (p.protocol ?? "TCP") === "TCP" && (p.port === undefined || p.port === port));

/**
 * Every call from one workload's pods to another's container port that the NetworkPolicies let
 * through: some policy selecting the caller allows it out, and some policy selecting the callee
 * lets it in (a pod no policy selects for a direction is open that way, as in Kubernetes).
 */
export function allowedCalls(objects: readonly K8sObject[]): Set<Call> {
  const policies = objects.filter((o) => o.kind === "NetworkPolicy").map((o) => ({ o, spec: o.spec as NetworkPolicySpec }));
  const all = workloads(objects);
  const out = new Set<Call>();
  for (const from of all) {
    for (const to of all) {
      if (from === to) continue;
      for (const port of to.pod.containers.flatMap((c) => c.ports ?? []).map((p) => p.containerPort)) {
        const outOf = policies.filter((p) => selects(p.o, from.labels) && p.spec.policyTypes?.includes("Egress") === true);
        const into = policies.filter((p) => selects(p.o, to.labels) && p.spec.policyTypes?.includes("Ingress") === true);
        const leaves =
          outOf.length === 0 ||
          outOf.some((p) => (p.spec.egress ?? []).some((r) => (r.to === undefined || r.to.some((peer) => peerMatches(peer, to.labels))) && portMatches(r.ports, port)));
        const enters =
          into.length === 0 ||
          into.some((p) => (p.spec.ingress ?? []).some((r) => (r.from === undefined || r.from.some((peer) => peerMatches(peer, from.labels))) && portMatches(r.ports, port)));
        if (leaves && enters) out.add(`${from.name} -> ${to.name}:${port}`);
      }
    }
  }
  return out;
}

/** The egress rules of a workload's policies that reach outside the cluster's private ranges (ipBlock), as "cidr:ports". */
export function publicEgress(objects: readonly K8sObject[], name: string): string[] {
  const policy = objects.find((o) => o.kind === "NetworkPolicy" && o.metadata.name === name);
  return ((policy?.spec as NetworkPolicySpec | undefined)?.egress ?? []).flatMap((r) =>
    (r.to ?? []).filter((p) => p.ipBlock !== undefined).map((p) => `${p.ipBlock?.cidr}:${(r.ports ?? []).map((x) => x.port).join(",") || "any"}`),
  );
}
