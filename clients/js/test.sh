#!/usr/bin/env bash
# Runs the JavaScript client's whole test suite (decoding, the client, the snippet) against a
# running `snowmint serve --datacenter 1 --worker 7` at SNOWMINT_URL, with the core's test
# vectors at SNOWMINT_VECTORS. Node's own test runner: no dependencies to install.
set -euo pipefail
cd "$(dirname "$0")"

: "${SNOWMINT_URL:?set SNOWMINT_URL to a running snowmint serve, such as http://127.0.0.1:8080}"
: "${SNOWMINT_VECTORS:?set SNOWMINT_VECTORS to the path of testdata/vectors.json}"
export SNOWMINT_URL SNOWMINT_VECTORS

node --version
node --test --test-reporter=spec test/*.test.js
