#!/usr/bin/env bash
# Runs the PHP client's whole test suite against SNOWMINT_URL, a running `snowmint serve
# --datacenter 1 --worker 7` with the twitter layout, and SNOWMINT_TLS_URL, the same over
# TLS (`--tls-cert`, `--tls-key`, `--tls-client-ca`), whose CA is the PEM file SNOWMINT_CA
# and which takes the client certificate SNOWMINT_CLIENT_CERT with its key
# SNOWMINT_CLIENT_KEY; and decodes the ids of SNOWMINT_VECTORS (default: the repository's
# testdata/vectors.json).
set -euo pipefail
cd "$(dirname "$0")"

: "${SNOWMINT_URL:?set SNOWMINT_URL to a running snowmint serve, such as http://127.0.0.1:8080}"
: "${SNOWMINT_TLS_URL:?set SNOWMINT_TLS_URL to a running snowmint serve over TLS, such as https://127.0.0.1:8443}"
: "${SNOWMINT_CA:?set SNOWMINT_CA to the PEM file of the CA that signs its certificate}"
: "${SNOWMINT_CLIENT_CERT:?set SNOWMINT_CLIENT_CERT to a PEM client certificate that server accepts}"
: "${SNOWMINT_CLIENT_KEY:?set SNOWMINT_CLIENT_KEY to the PEM key of SNOWMINT_CLIENT_CERT}"
export SNOWMINT_URL SNOWMINT_TLS_URL SNOWMINT_CA SNOWMINT_CLIENT_CERT SNOWMINT_CLIENT_KEY
export SNOWMINT_VECTORS="${SNOWMINT_VECTORS:-$(cd ../.. && pwd)/testdata/vectors.json}"

php --version | head -n 1
for ext in gmp json pcntl; do
  php -r "exit(extension_loaded('$ext') ? 0 : 1);" || { echo "php extension $ext is missing" >&2; exit 1; }
done
# Every file parses.
for file in src/*.php tests/*.php snippet.php; do
  php -l "$file" >/dev/null
done
# Prints each failure and "N passed, N failed"; exits non-zero on any failure.
php -d zend.assertions=1 tests/run.php
