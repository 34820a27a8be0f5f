#!/usr/bin/env bash
# Exit 0 when every service the tests use is up and answering; changes nothing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rc=0
"$here/postgres/check.sh" || rc=1
"$here/kafka/check.sh" || rc=1
"$here/seaweedfs/check.sh" || rc=1
exit "$rc"
