#!/usr/bin/env bash
# The whole test suite, from a fresh clone of a fresh machine: installs dependencies, installs and
# starts the real PostgreSQL and Kafka (infra/up.sh, idempotent), builds, lints, then runs every
# package's unit tests and the cross-service tests against those real services.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*" >&2; }

step "dependencies"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

step "services (PostgreSQL, Kafka, bubblewrap; Jaeger in the background)"
# Jaeger is built from the Go module proxy on first use (6 to 8 min on 2 cores, then cached in
# .local/). Only the integration tests use it, so it builds and starts while the code builds,
# lints and runs its unit tests (on a cold machine that took 23 min in all, one after the other);
# the trace tests then require it rather than skipping.
export MH_REQUIRE_JAEGER=1
jaeger_env=$(mktemp)
infra/jaeger/up.sh >"$jaeger_env" &
jaeger_pid=$!
# A failed step ends the run without waiting for the build: stop it (its compiler is a child).
trap 'if kill -0 "$jaeger_pid" 2>/dev/null; then pkill -TERM -P "$jaeger_pid" || true; kill "$jaeger_pid" || true; fi; rm -f "$jaeger_env"' EXIT
# Not `eval "$(infra/up.sh)"`: that would go on with the defaults when up.sh fails.
services_env=$(MH_WITH_JAEGER=0 infra/up.sh)
set -a
eval "$services_env"
set +a

step "build (generate contracts, compile)"
npx turbo run build

step "lint (buf, eslint)"
npm run lint

step "unit tests"
npx turbo run test --concurrency=1

step "Jaeger (for the trace tests)"
wait "$jaeger_pid" || { echo "infra/jaeger/up.sh failed" >&2; exit 1; }
set -a
eval "$(cat "$jaeger_env")"
set +a

step "integration tests (real PostgreSQL and Kafka)"
npm run test:integration

step "all tests passed"
