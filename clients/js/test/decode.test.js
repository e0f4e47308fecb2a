// Decoding: layouts by name, custom layouts, and the errors of bad input, pinned word for word.

import assert from "node:assert/strict";
import { test } from "node:test";

import { decode, DecodeError, IdError, Layout, LayoutError, parseId } from "snowmint";

const U64_MAX = "18446744073709551615";

// The documented ids (Discord's and the others) are in the shared vectors: vectors.test.js.

test("an id decodes from a string and from a BigInt, with its time", () => {
  const parts = decode("2125144477650808832");
  assert.deepEqual(decode(2125144477650808832n), parts);
  assert.equal(parts.time.getTime(), Number(parts.unixMs));
  // The old name of `time` still reads it, and is no field of its own.
  assert.equal(parts.date, parts.time);
  assert.ok(!Object.keys(parts).includes("date"));
});

test("twitter is the default layout, and names are read in any case", () => {
  const id = "2125144477650808832";
  assert.deepEqual(decode(id), decode(id, "twitter"));
  assert.deepEqual(decode(id, "TWITTER"), decode(id, "twitter"));
  assert.deepEqual(decode(id, "Custom:41/5/5/12"), decode(id, "twitter"));
});

test("a custom layout takes Twitter's epoch and a 1 ms tick unless given others", () => {
  const id = (5n << 22n) | (1n << 17n) | (7n << 12n) | 3n;
  const parts = decode(id, "custom:41/5/5/12");
  assert.equal(parts.unixMs, 1288834974657n + 5n);
  assert.deepEqual([parts.datacenter, parts.worker, parts.sequence], [1n, 7n, 3n]);
  const other = decode(id, "custom:41/5/5/12", 10, "1700000000000");
  assert.equal(other.timestamp, 5n);
  assert.equal(other.unixMs, 1700000000000n + 50n);
  // A preset takes another tick and epoch too, as the command line's --tick-ms and --epoch.
  assert.equal(decode(id, "twitter", 1n, 0n).unixMs, 5n);
});

test("a 64-bit layout decodes the largest id with unsigned arithmetic", () => {
  const parts = decode(U64_MAX, "discord");
  assert.equal(parts.timestamp, (1n << 42n) - 1n);
  assert.deepEqual([parts.datacenter, parts.worker, parts.sequence], [31n, 31n, 4095n]);
  const wide = new Layout({ bits: { timestamp: 64, datacenter: 0, worker: 0, sequence: 0 }, epochMs: 0 });
  assert.equal(wide.maxId, BigInt(U64_MAX));
  assert.equal(wide.decode(U64_MAX).unixMs, BigInt(U64_MAX));
  assert.throws(() => new Layout({ bits: wide.bits, epochMs: 1 }), {
    message: "epoch 1 ms puts the layout's last tick past the largest millisecond count",
  });
});

// Bad decimal text, ids past their layout and bad layouts are in the shared vectors, with
// the core's words: vectors.test.js. Here, what only JavaScript can be given.

test("ids that are no decimal string or BigInt within 64 bits are refused, naming the problem", () => {
  const cases = [
    [-1n, `id -1 is out of range 0..=${U64_MAX}`],
    [1n << 64n, `id 18446744073709551616 is out of range 0..=${U64_MAX}`],
    [12, "id must be a decimal string or a BigInt, got the number 12: numbers lose precision above 2^53"],
    [null, "id must be a decimal string or a BigInt, got the object null"],
  ];
  for (const [id, message] of cases) {
    assert.throws(() => decode(id), { name: "DecodeError", message }, JSON.stringify(String(id)));
  }
  assert.equal(parseId("00000000000000000012"), 12n);
  assert.equal(parseId(U64_MAX), BigInt(U64_MAX));
});

test("the old name of DecodeError still catches it", () => {
  assert.equal(IdError, DecodeError);
  assert.throws(() => decode(U64_MAX, "sonyflake"), IdError);
});

test("bad layouts are refused, naming the problem", () => {
  const cases = [
    [["twitter", 1.5], 'tick length "1.5" is not a whole number 0..=18446744073709551615'],
    [["twitter", undefined, -1], "epoch -1 is out of range 0..=18446744073709551615"],
    [["twitter", undefined, "soon"], 'epoch "soon" is not a whole number 0..=18446744073709551615'],
    [["mastodon", undefined, U64_MAX], `epoch ${U64_MAX} ms puts the layout's last tick past the largest millisecond count`],
    [[42], "layout must be a string such as \"twitter\", got number"],
  ];
  for (const [[layout, tick, epoch], message] of cases) {
    assert.throws(() => decode("1", layout, tick, epoch), { name: "LayoutError", message }, String(layout));
  }
  assert.throws(() => new Layout({ bits: { timestamp: 41, datacenter: 5, worker: 5, sequence: 14 } }), {
    message: "layout needs 65 bits but an id has 64",
  });
  assert.throws(
    () => new Layout({ bits: { timestamp: 41, datacenter: 5, worker: 5, sequence: 12 }, order: ["worker", "worker", "sequence"] }),
    { message: 'layout order ["worker","worker","sequence"] must name datacenter, worker and sequence once each' },
  );
  assert.throws(() => Layout.named("twitter", { tickMs: -2 }), LayoutError);
});

test("a date past what Date holds is an invalid Date, while the fields stay exact", () => {
  const parts = decode(U64_MAX, "custom:32/8/8/16", "4000000000");
  assert.equal(parts.unixMs, 1288834974657n + ((1n << 32n) - 1n) * 4000000000n);
  assert.ok(Number.isNaN(parts.time.getTime()));
});
