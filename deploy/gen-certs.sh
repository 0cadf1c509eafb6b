#!/bin/sh
# Development certificates for the runner's mTLS (the runner refuses plaintext gRPC off loopback).
#   deploy/gen-certs.sh [OUT_DIR] [EXTRA_SAN...]      (OUT_DIR defaults to deploy/certs)
# Writes three folders, laid out like the Helm chart's kubernetes.io/tls Secrets, so each
# container mounts only its own (docker-compose.yml, read-only):
#   ca/      ca.crt, ca.key  (stays on the host: whoever holds ca.key can mint certificates)
#   runner/  tls.crt, tls.key, ca.crt  the runner's server certificate; SANs sandbox-runner,
#            localhost, 127.0.0.1 and any EXTRA_SAN such as DNS:runner.example.org or IP:10.0.0.5
#   client/  tls.crt, tls.key, ca.crt  task-coordinator and log-ingestor
# Refuses to overwrite an existing CA unless FORCE=1.
#
# The service keys (runner/, client/) are world-readable ON PURPOSE: the containers run as other uids (1000, 65532)
# than the user who runs this script and must read the bind-mounted files. They are development
# keys for one machine; ca.key stays 0600. In production use your PKI (cert-manager in Helm).
set -eu

OUT=${1:-"$(dirname "$0")/certs"}
[ $# -gt 0 ] && shift
DAYS=${DAYS:-825}
command -v openssl >/dev/null 2>&1 || { echo "gen-certs: openssl is required (Debian: apt-get install openssl)" >&2; exit 1; }

if [ -e "$OUT/ca/ca.crt" ] && [ "${FORCE:-0}" != 1 ]; then
  echo "gen-certs: $OUT/ca/ca.crt exists; set FORCE=1 to replace every certificate" >&2
  exit 1
fi
mkdir -p "$OUT/ca" "$OUT/runner" "$OUT/client"

SANS="DNS:sandbox-runner,DNS:localhost,IP:127.0.0.1"
for san in "$@"; do SANS="$SANS,$san"; done

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

CA="$OUT/ca"
key "$CA/ca.key"
openssl req -x509 -new -key "$CA/ca.key" -sha256 -days "$DAYS" -subj "/CN=handplane-runner-ca" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out "$CA/ca.crt"

# sign DIR CN EXTENSIONS: DIR/tls.key and DIR/tls.crt signed by the CA, and the CA's certificate.
sign() {
  key "$OUT/$1/tls.key"
  openssl req -new -key "$OUT/$1/tls.key" -subj "/CN=$2" -out "$TMP/$1.csr"
  printf '%s\n' "$3" > "$TMP/$1.ext"
  openssl x509 -req -in "$TMP/$1.csr" -CA "$CA/ca.crt" -CAkey "$CA/ca.key" -CAcreateserial \
    -CAserial "$TMP/ca.srl" -days "$DAYS" -sha256 -extfile "$TMP/$1.ext" -out "$OUT/$1/tls.crt" 2>/dev/null
  cp "$CA/ca.crt" "$OUT/$1/ca.crt"
  chmod 0644 "$OUT/$1/tls.crt" "$OUT/$1/tls.key" "$OUT/$1/ca.crt"
}

sign runner sandbox-runner "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$SANS"
sign client handplane-control-plane "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"

chmod 0600 "$CA/ca.key"
echo "gen-certs: wrote $OUT (server SANs: $SANS)"
