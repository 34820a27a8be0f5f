/**
 * How the demo agent gets its project into the sandbox and hands its fix back. Today the
 * project is written into the sandbox by the agent's first tool calls and committed to a fresh
 * git repository there ("local"). When the harness passes a session's repositories to the
 * broker, which clones them through the credential proxy at provisioning, "clone" is the same
 * demo: the session names the repository, the agent finds it cloned and pushes its commit. The
 * scenario (scenario.ts) does not change, only which of these two is passed to it.
 */
import type { SessionCreateParams } from "@anthropic-ai/sdk/resources/beta/sessions/sessions";
import type { ToolUseSpec } from "@metaharness/offline-model";
import { PROJECT_DIR, PROJECT_FILES, PROJECT_PATH } from "./project.js";

export interface DemoWorkspace {
  /** What the agent says before getting the project. */
  readonly intro: string;
  /** The session's resources (a repository the broker clones), if any. */
  readonly resources: NonNullable<SessionCreateParams["resources"]>;
  /** The tool calls that leave the project under PROJECT_PATH, as a git repository. */
  readonly setup: readonly ToolUseSpec[];
  /** The command that records the fix (run in the project directory). */
  readonly deliver: string;
  /** How the summary names where the fix went. */
  readonly deliveredTo: string;
}

const GIT_IDENTITY = 'git config user.name "mh demo" && git config user.email demo@metaharness.invalid';
const COMMIT = "git commit -qam 'max: start from the first value, so lists of negatives work' && git log --oneline";

/** The project written file by file, then committed to a new repository in the sandbox. */
export function localWorkspace(): DemoWorkspace {
  return {
    intro: "I'll put the project in the sandbox, then run its tests.",
    resources: [],
    setup: [
      ...PROJECT_FILES.map((f) => ({ name: "write", input: { path: `${PROJECT_DIR}/${f.path}`, content: f.content } })),
      {
        name: "bash",
        input: { command: `cd ${PROJECT_PATH} && git init -q && ${GIT_IDENTITY} && git add -A && git commit -qm 'stats: sum, mean, max' && git log --oneline` },
      },
    ],
    deliver: COMMIT,
    deliveredTo: "committed in the sandbox's repository",
  };
}

/**
 * The project as a repository the session names: the broker clones it into PROJECT_PATH when
 * the sandbox is provisioned (its `origin` reaches the remote through the credential proxy),
 * and the fix is pushed back.
 */
export function cloneWorkspace(url: string): DemoWorkspace {
  return {
    intro: "The repository is cloned into the sandbox; let me look at it, then run its tests.",
    resources: [{ type: "github_repository", url, mount_path: PROJECT_PATH }],
    setup: [{ name: "bash", input: { command: `cd ${PROJECT_PATH} && ${GIT_IDENTITY} && git log --oneline -3` } }],
    deliver: `${COMMIT} && git push -q origin HEAD`,
    deliveredTo: "pushed to the repository",
  };
}

/** The workspace `mh demo` and `mh dev` use: the one place to switch to cloneWorkspace(url). */
export function demoWorkspace(): DemoWorkspace {
  return localWorkspace();
}
