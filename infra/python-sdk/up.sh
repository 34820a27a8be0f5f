#!/usr/bin/env bash
# Makes the official Python SDK ready for the Python scenarios (test/python/): a virtualenv with
# `anthropic` at the pinned version, from PyPI through pip, kept outside the checkout (MH_CACHE,
# one folder per version) so a fresh clone on the same machine reuses it. Installs Debian's
# python3-venv when `python3 -m venv` cannot make one. Safe to run any number of times: quick
# when the virtualenv is there.
# stdout: the virtualenv's python. Progress goes to stderr.
set -euo pipefail
MH_LOG_TAG=python-sdk
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# The version the scenarios were written against (test/python/scenarios.py).
ANTHROPIC_VERSION=2.16.0

t0=$(now_ms)
venv="${MH_CACHE}/python-sdk/anthropic-${ANTHROPIC_VERSION}"
take_lock "${MH_CACHE}/python-sdk/up.lock"

if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import anthropic, sys; sys.exit(anthropic.__version__ != '${ANTHROPIC_VERSION}')" 2>/dev/null; then
  make_venv "$venv" "anthropic==${ANTHROPIC_VERSION}"
fi
"$venv/bin/python" -c "import anthropic; assert anthropic.__version__ == '${ANTHROPIC_VERSION}'" || die "the virtualenv at $venv has no anthropic ${ANTHROPIC_VERSION}"
log "anthropic ${ANTHROPIC_VERSION} ready ($(elapsed "$t0"))"
echo "$venv/bin/python"
