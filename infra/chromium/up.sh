#!/usr/bin/env bash
# Makes sure headless Chromium can run here for the page tests (test/integration/ui/): installs
# Debian's `chromium` (apt-get) when /usr/bin/chromium is missing, then renders a blank page
# headless with the flags the tests use, so a browser that cannot start fails here, loudly, and
# not in the middle of a test run. Never downloads a browser of its own (no `playwright install`).
# Safe to run any number of times: quick when chromium is already there.
# stdout: the path of chromium. Progress goes to stderr.
set -euo pipefail
MH_LOG_TAG=chromium
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

t0=$(now_ms)
take_lock "$MH_LOCAL/chromium/up.lock"

bin=/usr/bin/chromium
if [[ ! -x $bin ]]; then
  apt_install chromium fonts-dejavu-core
fi
[[ -x $bin ]] || die "chromium was installed but $bin is missing"

# The flags of test/integration/ui/browser.ts: no sandbox (root), nothing that dials out.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
if ! out=$(timeout 60 "$bin" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --dump-dom 'data:text/html,<p id=ok>ok</p>' 2>&1); then
  log "chromium is installed but cannot render a page headless: ${out:0:2000}"
  die "see the output above"
fi
[[ $out == *'id="ok"'* ]] || die "chromium started but rendered no page: ${out:0:2000}"

log "$("$bin" --version 2>/dev/null) works ($(elapsed "$t0"))"
echo "$bin"
