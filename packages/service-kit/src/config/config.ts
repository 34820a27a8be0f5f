/**
 * Typed configuration read from the environment in one place per service. A spec object maps
 * config keys to variable readers (see env.ts); `readConfig` evaluates all of them and reports
 * every bad variable at once, so a misconfigured deployment is fixed in one round.
 */

/** The outcome of reading one variable. */
export type EnvResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly problem: string };

/** Reads one environment variable; built by the `env.*` helpers. */
export interface EnvVar<T> {
  readonly name: string;
  /** `raw` is the variable's value, or undefined when it is unset or blank. */
  read(raw: string | undefined): EnvResult<T>;
}

/** Where variables come from: `process.env`, or a plain object in tests. */
export type EnvSource = Readonly<Record<string, string | undefined>>;

export type ConfigSpec = Readonly<Record<string, EnvVar<unknown>>>;

/** The typed configuration a spec describes. */
export type ConfigOf<S extends ConfigSpec> = {
  readonly [K in keyof S]: S[K] extends EnvVar<infer T> ? T : never;
};

/** Thrown by `readConfig` with one message per bad or missing variable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.problems = problems;
  }
}

/**
 * Reads every variable of `spec` from `source` (blank values count as unset). Throws a
 * ConfigError listing all problems; otherwise returns the frozen, fully typed config.
 */
export function readConfig<const S extends ConfigSpec>(spec: S, source: EnvSource): ConfigOf<S> {
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const [key, variable] of Object.entries(spec)) {
    const raw = source[variable.name];
    const result = variable.read(raw === undefined || raw.trim() === "" ? undefined : raw.trim());
    if (result.ok) out[key] = result.value;
    else problems.push(result.problem);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as ConfigOf<S>;
}
