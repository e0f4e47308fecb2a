#!/usr/bin/env bash
# Builds the Java client with javac, then runs its tests and its snippet against a running
# `snowmint serve --datacenter 1 --worker 7` at SNOWMINT_URL and the same over TLS at
# SNOWMINT_TLS_URL (`--tls-cert`, `--tls-key`, `--tls-client-ca`), whose CA is the PEM file
# SNOWMINT_CA and which takes the client certificate SNOWMINT_CLIENT_CERT with its key
# SNOWMINT_CLIENT_KEY, with the shared vectors at SNOWMINT_VECTORS. Prints the tests' "N
# passed, N failed"; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
: "${SNOWMINT_URL:?set SNOWMINT_URL to a running snowmint serve, such as http://127.0.0.1:8080}"
: "${SNOWMINT_TLS_URL:?set SNOWMINT_TLS_URL to a running snowmint serve over TLS, such as https://127.0.0.1:8443}"
: "${SNOWMINT_CA:?set SNOWMINT_CA to the PEM file of the CA that signs its certificate}"
: "${SNOWMINT_CLIENT_CERT:?set SNOWMINT_CLIENT_CERT to a PEM client certificate that server accepts}"
: "${SNOWMINT_CLIENT_KEY:?set SNOWMINT_CLIENT_KEY to the PEM key of SNOWMINT_CLIENT_CERT}"
: "${SNOWMINT_VECTORS:?set SNOWMINT_VECTORS to the path of testdata/vectors.json}"

# Debian's libgoogle-gson-java: the JDK has no JSON parser.
gson=${GSON_JAR:-/usr/share/java/gson.jar}
[ -f "$gson" ] || { echo "test.sh: $gson is missing: install libgoogle-gson-java" >&2; exit 1; }

rm -rf build
javac --release 17 -Xlint:all -Werror -d build/classes -cp "$gson" $(find src/main/java -name '*.java')
jar --create --file build/snowmint-client.jar -C build/classes .
javac --release 17 -Xlint:all -Werror -d build/test-classes -cp "build/classes:$gson" \
  $(find src/test/java -name '*.java')
java -cp "build/test-classes:build/classes:$gson" snowmint.TestRunner

# The page swaps the layout's one "twitter" literal for the layout it shows.
if [ "$(grep -o '"twitter"' snippet.java | wc -l)" -ne 1 ]; then
  echo 'test.sh: snippet.java must write the layout as the literal "twitter" exactly once' >&2
  exit 1
fi
# The snippet the page shows, run as a single-file program against the same server.
out=$(java -cp "build/snowmint-client.jar:$gson" snippet.java)
echo "snippet: $out"
if [[ $out != *"datacenter=1, worker=7,"* ]]; then
  echo "test.sh: the snippet printed no id of datacenter 1 and worker 7" >&2
  exit 1
fi
