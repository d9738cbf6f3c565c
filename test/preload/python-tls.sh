#!/bin/sh
# rw-real.sh's workload: python_tls.py (TLS handshakes in 4 threads of
# Debian's python3 on OpenSSL 3.0's rwlocks), run as $PLK_RUN python3,
# with a P-256 certificate made here by openssl.
#   usage: python-tls.sh PYTHON_TLS.PY
set -eu
for p in /usr/bin/python3 openssl; do
	command -v "$p" >/dev/null 2>&1 || { echo "SKIP: $p is not installed"; exit 77; }
done
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=localhost -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
$PLK_RUN /usr/bin/python3 "$1" "$d/cert.pem" "$d/key.pem" 150 4
