#!/usr/bin/env bash
# Generates src/gen/ (git-ignored, never edited by hand): ts-proto code for every contract in
# /proto, buf's descriptor set of them, and buf's descriptor of grpc.health.v1 (from the
# grpc-health-check package, whose proto the health service implements). Reflection serves these
# descriptors as compiled by buf: protobufjs's reconstruction of health.proto names its map entry
# "Statuses" instead of "StatusesEntry", which Go clients (grpcurl, ghz) refuse.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf src/gen
buf generate ../../proto --template buf.gen.yaml
buf build ../../proto -o src/gen/metaharness.binpb
health="$(node -p "require('node:path').dirname(require.resolve('grpc-health-check/package.json'))")/proto"
buf build "$health" -o src/gen/health.binpb
