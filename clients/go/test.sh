#!/usr/bin/env bash
# Checks the Go client's formatting and vets it, then runs its tests and its snippet against
# a running `snowmint serve --datacenter 1 --worker 7` at SNOWMINT_URL and the same over TLS
# at SNOWMINT_TLS_URL (`--tls-cert`, `--tls-key`, `--tls-client-ca`), whose CA is the PEM
# file SNOWMINT_CA and which takes the client certificate SNOWMINT_CLIENT_CERT with its key
# SNOWMINT_CLIENT_KEY, with the shared vectors at SNOWMINT_VECTORS. Prints "N passed, N
# failed"; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
: "${SNOWMINT_URL:?set SNOWMINT_URL to a running snowmint serve, such as http://127.0.0.1:8080}"
: "${SNOWMINT_TLS_URL:?set SNOWMINT_TLS_URL to a running snowmint serve over TLS, such as https://127.0.0.1:8443}"
: "${SNOWMINT_CA:?set SNOWMINT_CA to the PEM file of the CA that signs its certificate}"
: "${SNOWMINT_CLIENT_CERT:?set SNOWMINT_CLIENT_CERT to a PEM client certificate that server accepts}"
: "${SNOWMINT_CLIENT_KEY:?set SNOWMINT_CLIENT_KEY to the PEM key of SNOWMINT_CLIENT_CERT}"
: "${SNOWMINT_VECTORS:?set SNOWMINT_VECTORS to the path of testdata/vectors.json}"
command -v go >/dev/null || { echo "test.sh: go is missing: install golang-go" >&2; exit 1; }

# The standard library only: nothing is fetched, and the installed Go builds it.
export GOPROXY=off GOTOOLCHAIN=local GOFLAGS=-mod=readonly

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "test.sh: gofmt would change: $unformatted" >&2
  exit 1
fi
go vet ./...

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
go test -count=1 -v ./... >"$log" 2>&1 || status=$?
cat "$log"
echo "$(grep -c -- '^--- PASS' "$log" || true) passed, $(grep -c -- '^--- FAIL' "$log" || true) failed"
[ "$status" -eq 0 ] || exit "$status"

# The page swaps the layout's one "twitter" literal for the layout it shows.
if [ "$(grep -o '"twitter"' snippet.go | wc -l)" -ne 1 ]; then
  echo 'test.sh: snippet.go must write the layout as the literal "twitter" exactly once' >&2
  exit 1
fi
# The snippet the page shows, run against the same server.
out=$(go run snippet.go)
echo "snippet: $out"
if [[ $out != *" datacenter 1 worker 7 "* ]]; then
  echo "test.sh: the snippet printed no id of datacenter 1 and worker 7" >&2
  exit 1
fi
