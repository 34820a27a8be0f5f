/**
 * Which programs may be a session's brain. The operator names them (MH_EXTERNAL_AGENTS, a JSON
 * object of name -> argv); a session picks one by name with its `mh.external.agent` label
 * ("default" when unset). A session never names a command itself: its metadata comes from API
 * clients, and letting them choose what the harness host executes would be remote code execution.
 * Read through the typed env helpers, in this one place, when a session starts.
 */
import { env, readConfig, type EnvResult, type EnvSource, type EnvVar } from "@metaharness/service-kit/config";

export const AGENT_LABEL = "mh.external.agent";
export const DEFAULT_AGENT = "default";

export type AgentCommands = ReadonlyMap<string, readonly string[]>;

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** `{"echo": ["node", "/opt/agents/echo.js"]}`: each argv is run without a shell. */
function agentCommands(name: string): EnvVar<AgentCommands> {
  const expected = 'a JSON object of agent name -> argv array, e.g. {"echo": ["node", "/opt/echo.js"]}';
  return {
    name,
    read(raw): EnvResult<AgentCommands> {
      if (raw === undefined) return { ok: true, value: new Map() };
      const bad = (why: string): EnvResult<AgentCommands> => ({ ok: false, problem: `${name} is invalid: ${why} (expected ${expected})` });
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        return bad("not JSON");
      }
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return bad("not an object");
      const out = new Map<string, readonly string[]>();
      for (const [agent, argv] of Object.entries(parsed)) {
        if (!NAME.test(agent)) return bad(`agent name "${agent}" must match ${String(NAME)}`);
        if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a): a is string => typeof a === "string" && a !== "")) {
          return bad(`"${agent}" must be a non-empty array of non-empty strings`);
        }
        out.set(agent, Object.freeze([...argv]));
      }
      return { ok: true, value: out };
    },
  };
}

export function loadExternalConfig(source: EnvSource = process.env) {
  return readConfig(
    {
      agents: agentCommands("MH_EXTERNAL_AGENTS"),
      /** The longest an agent may stay silent in a turn (or not read its input) before the turn fails. */
      silenceTimeoutMs: env.durationMs("MH_EXTERNAL_SILENCE_TIMEOUT_MS", { default: 10 * 60_000, min: 100, max: 24 * 3_600_000 }),
      maxLineBytes: env.int("MH_EXTERNAL_MAX_LINE_BYTES", { default: 1024 * 1024, min: 1024, max: 64 * 1024 * 1024 }),
      /** The only variables of the harness an agent inherits: never its credentials. */
      passEnv: env.list("MH_EXTERNAL_PASS_ENV", { default: ["PATH", "HOME", "LANG", "TZ", "TMPDIR"] }),
    },
    source,
  );
}

/** The environment an agent starts with: the passed-through variables and the session's id. */
export function agentEnv(config: ExternalConfig, sessionId: string, source: EnvSource = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of config.passEnv) {
    const value = source[name];
    if (value !== undefined) out[name] = value;
  }
  return { ...out, MH_SESSION_ID: sessionId };
}

export type ExternalConfig = ReturnType<typeof loadExternalConfig>;
