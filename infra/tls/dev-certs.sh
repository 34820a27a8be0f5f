#!/usr/bin/env bash
# Mints a development CA and a certificate per name, for TLS between our services:
#   infra/tls/dev-certs.sh <dir> <name>...
# writes <dir>/ca.pem (the roots every service trusts: MH_GRPC_TLS_CA_FILE) and, per name,
# <dir>/<name>.pem and <dir>/<name>.key (MH_GRPC_TLS_CERT_FILE, MH_GRPC_TLS_KEY_FILE), valid for
# the host names localhost and <name> and the addresses 127.0.0.1 and ::1, as server and as
# client (mutual TLS). Idempotent: an existing CA or certificate is kept until it is within 7 days
# of expiry, then issued again (a new CA re-issues every certificate). Keys are P-256, valid 30
# days: for a laptop, a test or a small deployment, not for production (use your own PKI there).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 <dir> <name>..." >&2; exit 2; }
command -v openssl >/dev/null || { echo "dev-certs: openssl is not installed (apt-get install openssl)" >&2; exit 1; }
dir=$1
shift
mkdir -p "$dir"
chmod 700 "$dir"
umask 077
# fresh <file>: a certificate there that is valid for at least 7 more days.
fresh() { [ -f "$1" ] && openssl x509 -in "$1" -noout -checkend 604800 >/dev/null 2>&1; }
if ! fresh "$dir/ca.pem"; then
  rm -f "$dir"/*.pem "$dir"/*.key "$dir/ca.srl"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=metaharness development CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
fi
for name in "$@"; do
  [[ "$name" =~ ^[A-Za-z0-9.-]+$ ]] || { echo "dev-certs: '$name' is not a host name" >&2; exit 2; }
  fresh "$dir/$name.pem" && continue
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,DNS:%s,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth,clientAuth\n' "$name" \
    > "$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 30 \
    -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null
  rm -f "$dir/$name.csr" "$dir/$name.ext"
done
