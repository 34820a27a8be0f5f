#!/usr/bin/env bash
# The README's first command, timed as a newcomer meets it (issue 24): a fresh `git clone`, then
# `npm ci && npm run demo` with an empty npm cache and an empty MH_CACHE (cold), the same again
# (warm), and `npm run demo` alone three times. Each run's breakdown comes from what the demo
# prints: turbo's build time, "embedded stack ready in", and the session's wall time on its
# "── end_turn" line. bubblewrap is timed apart, as a reinstall (`apt-get install --reinstall`),
# because removing it would break every other sandbox on the machine; it runs only as root.
#
#   bash test/bench/first-command.sh [repository, default: this clone]
#
# Prints a table; the clone, caches and logs stay in a temporary folder it names.
set -euo pipefail

source_repo="${1:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}"
work="$(mktemp -d -t mh-first-command.XXXXXX)"
export npm_config_cache="$work/npm-cache" MH_CACHE="$work/mh-cache"
git clone -q "$source_repo" "$work/repo"
cd "$work/repo"

now() { date +%s.%N; }
secs() { printf '%.1f' "$(echo "$2 - $1" | bc)"; }
# The figures the demo printed in its log ($1): build, stack start, session wall time.
breakdown() {
  local build stack session
  build="$(grep -oE 'Time: +[0-9.]+m?s' "$1" | tail -1 | grep -oE '[0-9.]+m?s')"
  stack="$(grep -oE 'embedded stack ready in [0-9.]+ m?s' "$1" | grep -oE '[0-9.]+ m?s')"
  session="$(grep -E '^── end_turn' "$1" | grep -oE '[0-9.]+ s$')"
  echo "build ${build:-?} | stack ${stack:-?} | session ${session:-?}"
}
run_ci() { local t0; t0="$(now)"; npm ci --no-audit --no-fund >"$work/$1.log" 2>&1; secs "$t0" "$(now)"; }
run_demo() {
  local t0; t0="$(now)"
  npm run demo </dev/null >"$work/$1.log" 2>&1
  grep -q '^── pushed' "$work/$1.log" || { echo "the demo did not push (log: $work/$1.log)" >&2; exit 1; }
  secs "$t0" "$(now)"
}

bwrap="not timed (not root)"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  t0="$(now)"; apt-get install --reinstall -y bubblewrap >"$work/bwrap.log" 2>&1; bwrap="$(secs "$t0" "$(now)") s"
fi

ci_cold="$(run_ci ci-cold)"; demo_cold="$(run_demo demo-cold)"
ci_warm="$(run_ci ci-warm)"; demo_warm="$(run_demo demo-warm)"
demo_again=()
for i in 1 2 3; do demo_again+=("$(run_demo "demo-again-$i")"); done

echo "first command on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), node $(node --version), $(date -u +%FT%TZ)"
echo "| run | npm ci | npm run demo | total | inside the demo |"
echo "|---|---|---|---|---|"
echo "| cold: empty caches, first build | ${ci_cold} s | ${demo_cold} s | $(echo "$ci_cold + $demo_cold" | bc) s | $(breakdown "$work/demo-cold.log") |"
echo "| warm: \`npm ci && npm run demo\` again | ${ci_warm} s | ${demo_warm} s | $(echo "$ci_warm + $demo_warm" | bc) s | $(breakdown "$work/demo-warm.log") |"
for i in 0 1 2; do
  echo "| warm: \`npm run demo\` again (#$((i + 1))) | | ${demo_again[$i]} s | ${demo_again[$i]} s | $(breakdown "$work/demo-again-$((i + 1)).log") |"
done
echo "bubblewrap (apt-get install --reinstall): ${bwrap}"
echo "logs: $work"
