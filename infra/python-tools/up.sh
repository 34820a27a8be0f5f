#!/usr/bin/env bash
# Makes the test command's Python tools ready (requirements.txt: kubernetes-validate, grpcio-tools'
# protoc, confluent-kafka): a virtualenv from PyPI through pip, kept outside the checkout (MH_CACHE,
# one folder per content of requirements.txt) so a fresh clone on the same machine reuses it.
# Safe to run any number of times: quick when the virtualenv is there.
# stdout: the virtualenv's python. Progress goes to stderr.
set -euo pipefail
MH_LOG_TAG=python-tools
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$here/../lib.sh"

t0=$(now_ms)
requirements="$here/requirements.txt"
digest=$(sha256sum "$requirements" | cut -c1-16)
venv="${MH_CACHE}/python-tools/${digest}"
take_lock "${MH_CACHE}/python-tools/up.lock"

if [[ ! -f $venv/.complete ]]; then
  make_venv "$venv" -r "$requirements"
  # Written last: a virtualenv half made by an interrupted run is made again.
  touch "$venv/.complete"
fi
"$venv/bin/python" -c "import kubernetes_validate, grpc_tools.protoc, confluent_kafka, google.protobuf" \
  || die "the virtualenv at $venv lacks one of requirements.txt's packages"
log "python tools ready ($(elapsed "$t0"))"
echo "$venv/bin/python"
