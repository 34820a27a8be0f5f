# shellcheck shell=bash disable=SC2034  # variables here are used by the scripts that source this file
# Settings shared by infra/stack/up.sh and down.sh. Source it after ../lib.sh.
STACK_DIR="${MH_STACK_DIR:-$MH_LOCAL/stack}"
STACK_HARNESSES="${MH_STACK_HARNESSES:-2}"
STACK_START_TIMEOUT="${MH_STACK_START_TIMEOUT:-30}"
STACK_STOP_TIMEOUT="${MH_STACK_STOP_TIMEOUT:-15}"
base="${MH_STACK_PORT_BASE:-15050}"
PORT_LOG=$(( base + 1 ))
PORT_BROKER=$(( base + 3 ))
PORT_PROXY=$(( base + 4 ))
PORT_PROXY_REMOTE=$(( base + 5 ))
PORT_HARNESS=$(( base + 10 ))
PORT_HTTP="${MH_STACK_HTTP_PORT:-8080}"
PORT_MODEL="${MH_STACK_MODEL_PORT:-8790}"
