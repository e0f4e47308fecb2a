// testdata/vectors.json, written by the core: every id decodes here to the same fields,
// every documented id to what its source says, and every bad input is refused in the
// core's words.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

import { decode, DecodeError, Layout, LayoutError, parseId, PRESET_NAMES } from "snowmint";

const file =
  process.env.SNOWMINT_VECTORS ?? fileURLToPath(new URL("../../../testdata/vectors.json", import.meta.url));
const { layouts, vectors, documented, texts, errors } = JSON.parse(readFileSync(file, "utf8"));

/** The tick and epoch a custom layout of the file needs; presets take their own. */
function overrides(spec) {
  if (!spec.startsWith("custom:")) {
    return {};
  }
  const layout = layouts.find((l) => l.layout === spec);
  return { tickMs: layout.tick_ms, epochMs: layout.epoch_ms };
}

test("the file holds every preset, and the presets hold the core's numbers", () => {
  const presets = layouts.map((l) => l.layout).filter((spec) => !spec.startsWith("custom:"));
  assert.deepEqual(presets, [...PRESET_NAMES]);
  for (const expected of layouts) {
    const layout = Layout.named(expected.layout, overrides(expected.layout));
    assert.deepEqual({ ...layout.bits }, expected.bits, expected.layout);
    assert.deepEqual([...layout.order], expected.order, expected.layout);
    assert.equal(layout.tickMs, BigInt(expected.tick_ms), expected.layout);
    assert.equal(layout.epochMs, BigInt(expected.epoch_ms), expected.layout);
    assert.equal(layout.maxId, BigInt(expected.max_id), expected.layout);
  }
});

describe("every vector decodes to the core's fields", () => {
  for (const { layout: spec } of layouts) {
    test(spec, () => {
      const mine = vectors.filter((v) => v.layout === spec);
      assert.ok(mine.length > 0, `no vectors for ${spec}`);
      const { tickMs, epochMs } = overrides(spec);
      for (const v of mine) {
        const expected = {
          timestamp: BigInt(v.timestamp),
          unixMs: BigInt(v.unix_ms),
          datacenter: BigInt(v.datacenter),
          worker: BigInt(v.worker),
          sequence: BigInt(v.sequence),
        };
        for (const id of [v.id, BigInt(v.id)]) {
          const { time, ...fields } = decode(id, spec, tickMs, epochMs);
          assert.deepEqual(fields, expected, `${spec} ${v.id}`);
          assert.equal(time.getTime(), Number(v.unix_ms), `${spec} ${v.id}`);
        }
      }
    });
  }
});

describe("every documented id decodes as its source says", () => {
  for (const d of documented) {
    test(d.source, () => {
      const parts = decode(d.id, d.layout, d.tick_ms, d.epoch_ms);
      assert.deepEqual(
        { ...parts, time: parts.time.toISOString() },
        {
          timestamp: BigInt(d.timestamp),
          unixMs: BigInt(d.unix_ms),
          datacenter: BigInt(d.datacenter),
          worker: BigInt(d.worker),
          sequence: BigInt(d.sequence),
          time: d.time,
        },
      );
    });
  }
});

test("every text reads as the core reads it", () => {
  assert.ok(texts.length > 0);
  for (const t of texts) {
    const o = overrides(t.layout);
    const layout = Layout.named(t.layout, o);
    const encoding = t.encoding ?? "decimal";
    assert.equal(layout.readId(t.text, encoding), BigInt(t.id), JSON.stringify(t));
    const parts = decode(t.text, t.layout, o.tickMs, o.epochMs, encoding);
    assert.deepEqual(parts, layout.decode(BigInt(t.id)), JSON.stringify(t));
  }
});

test("every bad input is refused in the core's words", () => {
  assert.ok(errors.length > 0);
  for (const e of errors) {
    const [run, Err] = {
      parse: [() => parseId(e.id), DecodeError],
      decode: [() => decode(e.id, e.layout), DecodeError],
      read: [() => Layout.named(e.layout, overrides(e.layout)).readId(e.id, e.encoding ?? "decimal"), DecodeError],
      layout: [() => Layout.named(e.layout, { tickMs: e.tick_ms, epochMs: e.epoch_ms }), LayoutError],
    }[e.what];
    assert.throws(run, (err) => err instanceof Err && err.message === e.message, JSON.stringify(e));
  }
});
