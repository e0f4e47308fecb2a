#!/usr/bin/env bash
# Runs the Ruby client's whole test suite against SNOWMINT_URL, a running `snowmint serve
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

ruby --version
# Minitest prints "N runs, N assertions, N failures, N errors, N skips" and exits non-zero
# on any failure or error.
ruby -w -Ilib -Itest -e 'Dir.glob("test/*_test.rb").sort.each { |f| require File.expand_path(f) }'
