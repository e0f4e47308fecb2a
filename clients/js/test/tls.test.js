// The client over TLS: a real `snowmint serve --tls-cert ... --tls-key ... --tls-client-ca
// ...` (SNOWMINT_TLS_URL, started with --datacenter 1 --worker 7) whose CA is SNOWMINT_CA,
// and which takes the client certificate SNOWMINT_CLIENT_CERT with its key
// SNOWMINT_CLIENT_KEY.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";

import { Client, ConfigError, ConnectionError, decode } from "snowmint";

const SERVER = process.env.SNOWMINT_TLS_URL;
const CA = process.env.SNOWMINT_CA;
const CERT = process.env.SNOWMINT_CLIENT_CERT;
const KEY = process.env.SNOWMINT_CLIENT_KEY;
const needsServer = {
  skip: SERVER && CA && CERT && KEY ? false : "SNOWMINT_TLS_URL, SNOWMINT_CA, SNOWMINT_CLIENT_CERT or SNOWMINT_CLIENT_KEY is not set",
};
const bounded = { timeout: 10_000 };

describe("over TLS", bounded, () => {
  test("ids come over https from a server the caFile vouches for", needsServer, async () => {
    const client = new Client(SERVER, { caFile: CA, certFile: CERT, keyFile: KEY, batchSize: 10 });
    const ids = [await client.nextId(), ...(await client.nextIds(20))];
    assert.equal(new Set(ids).size, 21);
    for (let i = 1; i < ids.length; i++) {
      assert.ok(BigInt(ids[i - 1]) < BigInt(ids[i]), `${ids[i - 1]} then ${ids[i]}`);
    }
    const { datacenter, worker } = decode(ids[0], "twitter");
    assert.deepEqual([datacenter, worker], [1n, 7n]);
  });

  test("without the caFile the server's certificate is not trusted", needsServer, async () => {
    await assert.rejects(new Client(SERVER).nextId(), (error) => {
      assert.ok(error instanceof ConnectionError, String(error));
      assert.ok(error.message.startsWith(`cannot reach ${SERVER}/v1/ids?count=100: `), error.message);
      assert.match(error.message, /the server's certificate is not trusted: /);
      return true;
    });
  });

  test("without a client certificate the server refuses", needsServer, async () => {
    await assert.rejects(new Client(SERVER, { caFile: CA }).nextId(), (error) => {
      assert.ok(error instanceof ConnectionError, String(error));
      assert.ok(error.message.startsWith(`cannot reach ${SERVER}/v1/ids?count=100: `), error.message);
      return true;
    });
  });
});

describe("TLS settings", () => {
  test("a caFile that cannot be read is named", () => {
    assert.throws(
      () => new Client("https://localhost:8443", { caFile: "/nonexistent/ca.pem" }),
      (error) => {
        assert.ok(error instanceof ConfigError);
        assert.ok(
          error.message.startsWith('caFile "/nonexistent/ca.pem": cannot read it: ENOENT'),
          error.message,
        );
        return true;
      },
    );
  });

  test("a certFile without its keyFile is refused", () => {
    assert.throws(
      () => new Client("https://localhost:8443", { certFile: "/etc/client.pem" }),
      new ConfigError("certFile and keyFile go together: give both or neither"),
    );
  });

  test("TLS files and a fetch function are not given together", () => {
    const dir = mkdtempSync(join(tmpdir(), "snowmint-js-"));
    try {
      const ca = join(dir, "ca.pem");
      writeFileSync(ca, "");
      assert.throws(
        () => new Client("https://localhost:8443", { caFile: ca, fetch: globalThis.fetch }),
        /give caFile, certFile and keyFile, or a fetch function, not both/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
