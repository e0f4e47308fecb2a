#!/usr/bin/env bash
# Runs the Python client's whole test suite (decoding, the client, the snippet, the
# docstring examples) against a running `snowmint serve --datacenter 1 --worker 7` at
# SNOWMINT_URL and the same over TLS at SNOWMINT_TLS_URL (`--tls-cert`, `--tls-key`,
# `--tls-client-ca`), whose CA is the PEM file SNOWMINT_CA and which takes the client
# certificate SNOWMINT_CLIENT_CERT with its key SNOWMINT_CLIENT_KEY, with the core's test
# vectors at SNOWMINT_VECTORS. Standard library only: nothing to install.
set -euo pipefail
cd "$(dirname "$0")"

: "${SNOWMINT_URL:?set SNOWMINT_URL to a running snowmint serve, such as http://127.0.0.1:8080}"
: "${SNOWMINT_TLS_URL:?set SNOWMINT_TLS_URL to a running snowmint serve over TLS, such as https://127.0.0.1:8443}"
: "${SNOWMINT_CA:?set SNOWMINT_CA to the PEM file of the CA that signs its certificate}"
: "${SNOWMINT_CLIENT_CERT:?set SNOWMINT_CLIENT_CERT to a PEM client certificate that server accepts}"
: "${SNOWMINT_CLIENT_KEY:?set SNOWMINT_CLIENT_KEY to the PEM key of SNOWMINT_CLIENT_CERT}"
: "${SNOWMINT_VECTORS:?set SNOWMINT_VECTORS to the path of testdata/vectors.json}"
export SNOWMINT_URL SNOWMINT_VECTORS SNOWMINT_TLS_URL SNOWMINT_CA SNOWMINT_CLIENT_CERT SNOWMINT_CLIENT_KEY

python3 --version
PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests -t . -v
