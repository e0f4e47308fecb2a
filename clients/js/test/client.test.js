// The client against a real `snowmint serve` (SNOWMINT_URL, started with --datacenter 1
// --worker 7), and against stand-ins on loopback for what a healthy server never does.

import assert from "node:assert/strict";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer } from "node:net";
import { describe, test } from "node:test";

import { Client, ConfigError, decode, ConnectionError, ServerError } from "snowmint";

const SERVER = process.env.SNOWMINT_URL;
const needsServer = { skip: SERVER ? false : "SNOWMINT_URL is not set" };
/** A client that waits on a failed server forever fails here instead of hanging the suite. */
const bounded = { timeout: 10_000 };

/** A fetch that records each request's URL and how many ids the client held when it began. */
function recording() {
  const calls = [];
  const box = { client: null, calls };
  box.fetch = (url, init) => {
    calls.push({ url: String(url), buffered: box.client.buffered });
    return fetch(url, init);
  };
  return box;
}

function assertIncreasing(ids) {
  for (let i = 1; i < ids.length; i++) {
    assert.ok(BigInt(ids[i - 1]) < BigInt(ids[i]), `${ids[i - 1]} then ${ids[i]}`);
  }
}

function assertOurs(id) {
  assert.match(id, /^[0-9]+$/);
  const { datacenter, worker } = decode(id, "twitter");
  assert.deepEqual([datacenter, worker], [1n, 7n], id);
}

/** An HTTP server on loopback that answers with `handler(request number, request)`. */
async function stub(handler) {
  const requests = [];
  const server = createHttpServer((req, res) => {
    requests.push(req);
    const { status, body, type = "application/json" } = handler(requests.length, req);
    res.writeHead(status, { "content-type": type, connection: "close" });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe("against snowmint serve", bounded, () => {
  test("one id, then a batch: decimal strings, distinct and increasing, from datacenter 1 worker 7", needsServer, async () => {
    const client = new Client(SERVER);
    const ids = [await client.nextId(), await client.nextId(), ...(await client.nextIds(5)), await client.nextId()];
    assert.equal(ids.length, 8);
    assert.equal(new Set(ids).size, 8);
    assertIncreasing(ids);
    ids.forEach(assertOurs);
  });

  test("the buffer is refilled in the background before it runs dry", needsServer, async () => {
    const box = recording();
    const client = new Client(SERVER, { batchSize: 10, refillBelow: 3, fetch: box.fetch });
    box.client = client;
    const ids = [];
    for (let i = 0; i < 8; i++) {
      ids.push(await client.nextId());
    }
    // The 8th id left 2, below the threshold: a refill began while ids remained.
    assert.deepEqual(box.calls, [
      { url: `${SERVER}/v1/ids?count=10`, buffered: 0 },
      { url: `${SERVER}/v1/ids?count=10`, buffered: 2 },
    ]);
    // The next three calls use the 2 left, then wait for that refill instead of asking again.
    for (let i = 0; i < 3; i++) {
      ids.push(await client.nextId());
    }
    assert.equal(box.calls.length, 2);
    assert.equal(client.buffered, 9);
    for (let i = 0; i < 30; i++) {
      ids.push(await client.nextId());
    }
    assert.ok(box.calls.length >= 5, `${box.calls.length} requests for 41 ids`);
    assert.ok(box.calls.slice(1).every((call) => call.buffered === 2), JSON.stringify(box.calls));
    assert.equal(new Set(ids).size, ids.length);
    assertIncreasing(ids);
    ids.forEach(assertOurs);
  });

  test("a batch larger than the buffer takes the buffer, then the rest in parts of the max batch", needsServer, async () => {
    const box = recording();
    const client = new Client(SERVER, { batchSize: 10, refillBelow: 0, maxBatch: 40, fetch: box.fetch });
    box.client = client;
    const first = await client.nextId();
    const ids = await client.nextIds(100);
    assert.deepEqual(
      box.calls.map((call) => call.url),
      [10, 40, 40, 11].map((n) => `${SERVER}/v1/ids?count=${n}`),
    );
    assert.equal(ids.length, 100);
    assert.equal(client.buffered, 0);
    const all = [first, ...ids, await client.nextId()];
    assert.equal(new Set(all).size, 102);
    assertIncreasing(all);
  });

  test("a batch size of 1 takes ids one by one from /v1/id", needsServer, async () => {
    const box = recording();
    const client = new Client(SERVER, { batchSize: 1, fetch: box.fetch });
    box.client = client;
    const ids = [await client.nextId(), ...(await client.nextIds(1))];
    assert.deepEqual(
      box.calls.map((call) => call.url),
      [`${SERVER}/v1/id`, `${SERVER}/v1/id`],
    );
    assertIncreasing(ids);
    ids.forEach(assertOurs);
  });

  test("the server's error is an error with its status and its text, and the buffer keeps its ids", needsServer, async () => {
    const client = new Client(SERVER, { batchSize: 150000, maxBatch: 200000 });
    const refused = {
      name: "ServerError",
      status: 400,
      detail: 'count "150000" is out of range: expected a whole number 1..=100000',
      message: `server answered 400 Bad Request to ${SERVER}/v1/ids?count=150000: count "150000" is out of range: expected a whole number 1..=100000`,
    };
    await assert.rejects(client.nextId(), refused);
    await assert.rejects(client.nextIds(150000), refused);

    const small = new Client(SERVER, { batchSize: 10, maxBatch: 200000 });
    await small.nextId();
    await assert.rejects(small.nextIds(150000), ServerError);
    assert.equal(small.buffered, 9);
  });
});

describe("when the server fails", bounded, () => {
  test("an unreachable server is a ConnectionError naming the URL", async () => {
    const closed = createNetServer();
    await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address();
    await new Promise((resolve) => closed.close(resolve));
    const client = new Client(`http://127.0.0.1:${port}`);
    await assert.rejects(client.nextId(), {
      name: "ConnectionError",
      message: `cannot reach http://127.0.0.1:${port}/v1/ids?count=100: connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  });

  test("a server that never answers is a ConnectionError after the timeout, not a hang", async () => {
    const sockets = [];
    const silent = createNetServer((socket) => sockets.push(socket));
    await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${silent.address().port}`;
    try {
      const client = new Client(url, { timeoutMs: 200 });
      await assert.rejects(client.nextIds(3), {
        name: "ConnectionError",
        message: `no answer from ${url}/v1/ids?count=3 within 200 ms`,
      });
    } finally {
      sockets.forEach((socket) => socket.destroy());
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  test("the token goes as a bearer header, and a refusal carries the server's text", async () => {
    const server = await stub(() => ({
      status: 401,
      body: { error: "missing or wrong bearer token: send `Authorization: Bearer <token>`" },
    }));
    try {
      const client = new Client(`${server.url}/`, { token: "s3cret" });
      await assert.rejects(client.nextId(), {
        name: "ServerError",
        status: 401,
        message: `server answered 401 Unauthorized to ${server.url}/v1/ids?count=100: missing or wrong bearer token: send \`Authorization: Bearer <token>\``,
      });
      assert.equal(server.requests[0].headers.authorization, "Bearer s3cret");
    } finally {
      await server.close();
    }
  });

  test("a base URL's path is kept, and an answer that is no JSON or holds no ids is an error", async () => {
    const server = await stub((n) =>
      n === 1
        ? { status: 502, body: "<html>bad gateway</html>\n", type: "text/html" }
        : n === 2
          ? { status: 200, body: "not json" }
          : { status: 200, body: { ids: [1, 2] } },
    );
    try {
      const base = `${server.url}/snowmint`;
      const client = new Client(base);
      await assert.rejects(client.nextIds(2), {
        status: 502,
        message: `server answered 502 Bad Gateway to ${base}/v1/ids?count=2: <html>bad gateway</html>`,
      });
      await assert.rejects(client.nextIds(2), {
        name: "ServerError",
        message: `server answered ${base}/v1/ids?count=2 with no JSON: not json`,
      });
      await assert.rejects(client.nextIds(2), {
        name: "ServerError",
        message: `server answered ${base}/v1/ids?count=2 without an "ids" list of 2 decimal strings`,
      });
      assert.deepEqual(
        server.requests.map((req) => req.url),
        ["/snowmint/v1/ids?count=2", "/snowmint/v1/ids?count=2", "/snowmint/v1/ids?count=2"],
      );
    } finally {
      await server.close();
    }
  });

  test("a refill that fails reaches the call that finds the buffer empty; the next call tries again", async () => {
    let next = 1;
    const server = await stub((n) => {
      if (n === 2) {
        return { status: 503, body: { error: "not ready: lease lost" } };
      }
      const ids = Array.from({ length: 4 }, () => String(next++));
      return { status: 200, body: { ids } };
    });
    try {
      const client = new Client(server.url, { batchSize: 4, refillBelow: 2 });
      const ids = [];
      for (let i = 0; i < 4; i++) {
        ids.push(await client.nextId());
      }
      assert.deepEqual(ids, ["1", "2", "3", "4"]);
      await assert.rejects(client.nextId(), { status: 503, detail: "not ready: lease lost" });
      assert.equal(await client.nextId(), "5");
      assert.equal(server.requests.length, 3);
    } finally {
      await server.close();
    }
  });
});

test("settings out of range are refused, naming the value and the limit", () => {
  const cases = [
    [["localhost:8080"], 'base url "localhost:8080" must start with http:// or https://'],
    [["nowhere"], 'base url "nowhere" is not a URL'],
    [["http://h", { batchSize: 0 }], "batch size 0 is out of range 1..=100000 (the max batch)"],
    [["http://h", { batchSize: 100001 }], "batch size 100001 is out of range 1..=100000 (the max batch)"],
    [["http://h", { batchSize: 10, refillBelow: 11 }], "refill threshold 11 is out of range 0..=10 (the batch size)"],
    [["http://h", { timeoutMs: 0 }], "timeout 0 is out of range 1..=2147483647"],
  ];
  for (const [args, message] of cases) {
    assert.throws(() => new Client(...args), { name: "ConfigError", message });
  }
  assert.ok(new ConfigError("x") instanceof Error);
  assert.ok(new ConnectionError("x") instanceof Error);
});

test("a count below 1 is a RangeError", async () => {
  const client = new Client("http://127.0.0.1:9");
  await assert.rejects(client.nextIds(0), { name: "RangeError", message: "count 0 is out of range 1..=9007199254740991" });
  await assert.rejects(client.nextIds(2.5), RangeError);
});
