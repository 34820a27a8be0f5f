/**
 * The small project the demo agent fixes: a bash library of integer statistics and its test
 * script. Only bash is assumed (a sandbox sees the host's /usr, nothing more). The bug: max()
 * starts from 0, so it can never answer a negative number; one of the four tests catches it.
 */

export const PROJECT_DIR = "stats";
/** Where the project lives in the sandbox. Commands use it absolutely: bash keeps its cwd between calls. */
export const PROJECT_PATH = `/workspace/${PROJECT_DIR}`;

export interface ProjectFile {
  /** Relative to the project directory. */
  readonly path: string;
  readonly content: string;
}

/** The line with the bug, and what the agent replaces it with. */
export const BUG = { file: "lib/stats.sh", before: "local best=0 n", after: 'local best=$1 n' } as const;

const STATS_SH = `# stats.sh: integer statistics over the arguments.

sum() {
  local total=0 n
  for n in "$@"; do total=$((total + n)); done
  echo "$total"
}

# The mean, rounded down.
mean() {
  echo $(( $(sum "$@") / $# ))
}

max() {
  ${BUG.before}
  for n in "$@"; do
    if (( n > best )); then best=$n; fi
  done
  echo "$best"
}
`;

const TEST_SH = `#!/usr/bin/env bash
# The tests of lib/stats.sh: one line per check, exit status 1 if any fails.
cd "$(dirname "$0")" || exit 2
source lib/stats.sh
passed=0 failed=0

check() { # name expected actual
  if [[ "$3" == "$2" ]]; then
    echo "ok   $1 = $2"; passed=$((passed + 1))
  else
    echo "FAIL $1: expected $2, got $3"; failed=$((failed + 1))
  fi
}

check "sum 1 2 3" 6 "$(sum 1 2 3)"
check "mean 2 4 9" 5 "$(mean 2 4 9)"
check "max 3 9 4" 9 "$(max 3 9 4)"
check "max -7 -2 -5" -2 "$(max -7 -2 -5)"
echo "$passed passed, $failed failed"
(( failed == 0 ))
`;

const README = `# stats

Integer statistics in bash: \`source lib/stats.sh\`, then \`sum\`, \`mean\`, \`max\`.
Run the tests with \`bash test.sh\`.
`;

export const PROJECT_FILES: readonly ProjectFile[] = [
  { path: "README.md", content: README },
  { path: "lib/stats.sh", content: STATS_SH },
  { path: "test.sh", content: TEST_SH },
];
