#!/usr/bin/env bash
# Writes the secrets files of a Meta-Harness deployment into <dir>, keeping any that exist:
#   infra/secrets.sh <dir>
#   master.key                  the credential vault proxy's master key (MH_MASTER_KEY_FILE)
#   <service>-services.json     the tokens a guarded service accepts, each with its caller's role
#                               (MH_SERVICE_TOKENS_FILE): log, proxy, broker, harness; the broker's
#                               include one for an external hand of kind kv-device (hand-broker.token)
#   <caller>-<service>.token    a caller's token for one service it calls, so no service can
#                               replay a token it was shown to another (MH_*_TOKEN_FILE)
#   api-keys                    a gateway API key for tenant "local" (key:tenant, the format of
#                               MH_GATEWAY_API_KEYS), for deployments that read it from a file
#   tls/ca.pem, tls/<name>.pem, tls/<name>.key
#                               unless MH_SECRETS_TLS=off: a development CA and a certificate per
#                               service, named as the services are reached (session-log,
#                               credential-vault-proxy, sandbox-broker, harness, gateway), and
#                               one for the example hand (hand), for mutual TLS between them
#                               (MH_GRPC_TLS_*; infra/tls/dev-certs.sh)
# Used by infra/stack/up.sh, before `docker compose up` (infra/compose/compose.yaml) and before
# `kubectl apply -k infra/k8s` (infra/k8s/README.md). Secrets are files, never settings.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 <dir>" >&2; exit 2; }
dir=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$dir"
chmod 700 "$dir"
umask 077

secret() { head -c 32 /dev/urandom | base64 | tr -d '/+=\n'; }

[[ -s $dir/master.key ]] || head -c 32 /dev/urandom | base64 >"$dir/master.key"
[[ -s $dir/api-keys ]] || echo "mh-$(secret):local" >"$dir/api-keys"

# tokens <service> <caller>:<role>[:<scope>,...]...: the service's tokens file and each caller's
# token for it (scopes: what the entry is limited to, e.g. the kinds a hand may register).
tokens() {
  local service=$1 entries="" caller role scopes pair rest item items; shift
  [[ -s $dir/$service-services.json ]] && return 0
  for pair in "$@"; do
    caller=${pair%%:*} rest=${pair#*:}
    role=${rest%%:*} scopes=""
    if [[ $rest == *:* ]]; then
      IFS=, read -ra items <<<"${rest#*:}"
      for item in "${items[@]}"; do scopes+="${scopes:+,}\"$item\""; done
      scopes=",\"scopes\":[$scopes]"
    fi
    secret >"$dir/$caller-$service.token"
    entries+="${entries:+,}{\"name\":\"$caller\",\"role\":\"$role\",\"token\":\"$(<"$dir/$caller-$service.token")\"$scopes}"
  done
  printf '{"services":[%s]}\n' "$entries" >"$dir/$service-services.json"
}
# Who calls whom, with which role (each service's src/auth/policy.ts says what a role may do).
tokens log gateway:admin harness:harness broker:broker proxy:proxy
tokens proxy gateway:admin harness:harness broker:broker
# hand: the example external hand (apps/sandbox-broker/src/examples/kv-device.ts), kind kv-device only.
tokens broker harness:harness hand:hand:kv-device gateway:gateway
tokens harness gateway:admin

if [[ ${MH_SECRETS_TLS:-on} != off ]]; then
  "$here/tls/dev-certs.sh" "$dir/tls" session-log credential-vault-proxy sandbox-broker harness gateway hand
fi
