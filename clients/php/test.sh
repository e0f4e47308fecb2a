#!/usr/bin/env bash
# Runs the PHP client's whole test suite against SNOWMINT_URL, a running
# `snowmint serve --datacenter 1 --worker 7` with the twitter layout, and decodes the ids
# of SNOWMINT_VECTORS (default: the repository's testdata/vectors.json).
set -euo pipefail
cd "$(dirname "$0")"

: "${SNOWMINT_URL:?set SNOWMINT_URL to a running snowmint serve, such as http://127.0.0.1:8080}"
export SNOWMINT_URL
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
