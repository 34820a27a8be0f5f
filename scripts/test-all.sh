#!/usr/bin/env bash
# The whole test suite, from a fresh clone of a fresh machine: installs dependencies, installs and
# starts the real PostgreSQL and Kafka (infra/up.sh, idempotent), builds, lints, then runs every
# package's unit tests and the cross-service tests against those real services.
set -euo pipefail
cd "$(dirname "$0")/.."
# turbo sends usage telemetry unless told not to: nothing phones home from a user's machine.
export TURBO_TELEMETRY_DISABLED=1

step() { printf '\n== %s\n' "$*" >&2; }

step "dependencies"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

step "services (PostgreSQL, Kafka, bubblewrap, Jaeger)"
# Jaeger is built from the Go module proxy on first use (about 6 min on 2 cores, then cached in
# .local/); the trace tests require it here rather than skipping.
export MH_WITH_JAEGER=1 MH_REQUIRE_JAEGER=1
# Not `eval "$(infra/up.sh)"`: that would go on with the defaults when up.sh fails.
services_env=$(infra/up.sh)
set -a
eval "$services_env"
set +a

step "the official Python SDK (a virtualenv with anthropic from PyPI, for test/python/)"
MH_PYTHON_SDK=$(infra/python-sdk/up.sh)
export MH_PYTHON_SDK

step "the Python tools (kubernetes-validate, grpcio-tools, confluent-kafka from PyPI, for the k8s and analytics tests)"
MH_PYTHON_TOOLS=$(infra/python-tools/up.sh)
export MH_PYTHON_TOOLS

step "build (generate contracts, compile)"
npx turbo run build

step "lint (buf, eslint)"
npm run lint

step "contracts: buf breaking against the parent commit's proto/"
# A break must be a new package version or a documented exception (scripts/proto-breaking.sh).
npm run breaking:proto

step "unit tests"
# Two packages at a time: 1m23s-1m26s against 2m01s one at a time on a 2-core VM (all passing).
npx turbo run test --concurrency=2

step "integration tests (real PostgreSQL and Kafka)"
# Every answer and event the tests' SDK clients read is recorded (test/conformance/recorder.ts)
# and then held against the types the official SDK declares.
MH_CONFORMANCE_DIR="$PWD/.local/conformance"
rm -rf "$MH_CONFORMANCE_DIR"
export MH_CONFORMANCE_DIR
npm run test:integration

step "conformance: what the integration suite read, against the SDK's .d.ts types"
(cd test && npx tsx conformance/conform.ts "$MH_CONFORMANCE_DIR")

step "all tests passed"
