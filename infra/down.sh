#!/usr/bin/env bash
# Stops every service the tests use. Data is kept under .local/; safe to run when nothing runs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rc=0
"$here/prometheus/down.sh" || rc=1
"$here/jaeger/down.sh" || rc=1
"$here/seaweedfs/down.sh" || rc=1
"$here/kafka/down.sh" || rc=1
"$here/postgres/down.sh" || rc=1
exit "$rc"
