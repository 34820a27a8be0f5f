/**
 * infra/k8s as the tests read it, without a cluster or kustomize: the objects of the
 * kustomization's resources (and of any other YAML file given), the generated ConfigMaps'
 * literals, and the generated Secrets' keys (a literal's value, or the file a key comes from).
 */
import { readFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { parse, parseAllDocuments } from "yaml";
import type { IContainer as Container, IPodSpec as PodSpec } from "kubernetes-models/v1";

/** Any Kubernetes object, as parsed. */
export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly spec?: unknown;
  readonly data?: Record<string, string>;
}

/** A generated Secret's key: a literal value, or the file (under the secrets folder) it is made of. */
export type SecretSource = { readonly literal: string } | { readonly file: string };

export interface Manifests {
  readonly objects: K8sObject[];
  /** configMapGenerator: name -> variable -> value. */
  readonly configMaps: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** secretGenerator: name -> key -> source. */
  readonly secrets: ReadonlyMap<string, ReadonlyMap<string, SecretSource>>;
}

interface Kustomization {
  resources: string[];
  configMapGenerator?: Array<{ name: string; literals?: string[] }>;
  secretGenerator?: Array<{ name: string; literals?: string[]; files?: string[] }>;
}

/** `KEY=value` lines as a record. */
function literals(entries: readonly string[] = []): Record<string, string> {
  return Object.fromEntries(entries.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
}

/** Every document of a YAML file, as objects. */
export async function readObjects(file: string): Promise<K8sObject[]> {
  return parseAllDocuments(await readFile(file, "utf8")).map((d) => d.toJS() as K8sObject);
}

/** The kustomization in `dir`; secret files are looked up under `secretsDir` (what infra/secrets.sh wrote). */
export async function loadManifests(dir: string, secretsDir: string): Promise<Manifests> {
  const k = parse(await readFile(join(dir, "kustomization.yaml"), "utf8")) as Kustomization;
  const objects: K8sObject[] = [];
  for (const resource of k.resources) objects.push(...(await readObjects(join(dir, resource))));
  const configMaps = new Map((k.configMapGenerator ?? []).map((g) => [g.name, literals(g.literals)]));
  const secrets = new Map(
    (k.secretGenerator ?? []).map((g) => [
      g.name,
      new Map<string, SecretSource>([
        ...Object.entries(literals(g.literals)).map(([key, literal]) => [key, { literal }] as const),
        ...(g.files ?? []).map((f) => [basename(f), { file: join(secretsDir, f.replace(/^secrets\//, "")) }] as const),
      ]),
    ]),
  );
  return { objects, configMaps, secrets };
}

/** A workload's name, pod spec and labels (Deployments and StatefulSets). */
export interface Workload {
  readonly kind: "Deployment" | "StatefulSet";
  readonly name: string;
  readonly object: K8sObject;
  readonly labels: Readonly<Record<string, string>>;
  readonly pod: PodSpec;
}

export function workloads(objects: readonly K8sObject[]): Workload[] {
  return objects
    .filter((o) => o.kind === "Deployment" || o.kind === "StatefulSet")
    .map((o) => {
      const template = (o.spec as { template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } }).template;
      return { kind: o.kind as Workload["kind"], name: o.metadata.name, object: o, labels: template.metadata?.labels ?? {}, pod: template.spec };
    });
}

/** A container's variables: its envFrom ConfigMaps' (in order), then its own env, with each variable's source for messages. */
export function variablesOf(m: Manifests, container: Container): Map<string, { value: string | { secret: string; key: string }; from: string }> {
  const out = new Map<string, { value: string | { secret: string; key: string }; from: string }>();
  for (const e of container.envFrom ?? []) {
    const name = e.configMapRef?.name ?? "";
    for (const [k, v] of Object.entries(m.configMaps.get(name) ?? {})) out.set(k, { value: v, from: `ConfigMap ${name}` });
  }
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    out.set(e.name, { value: ref === undefined ? (e.value ?? "") : { secret: ref.name ?? "", key: ref.key }, from: "env" });
  }
  return out;
}

/** A secret reference's value when it is a literal of the kustomization (undefined for a file). */
export function literalOf(m: Manifests, ref: { secret: string; key: string }): string | undefined {
  const source = m.secrets.get(ref.secret)?.get(ref.key);
  return source !== undefined && "literal" in source ? source.literal : undefined;
}
