// Every id of testdata/vectors.json, written by the core, decodes here to the same fields.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";

import { decode, Layout, PRESET_NAMES } from "snowmint";

const file =
  process.env.SNOWMINT_VECTORS ?? fileURLToPath(new URL("../../../testdata/vectors.json", import.meta.url));
const { layouts, vectors } = JSON.parse(readFileSync(file, "utf8"));

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
          const { date, ...fields } = decode(id, spec, tickMs, epochMs);
          assert.deepEqual(fields, expected, `${spec} ${v.id}`);
          assert.equal(date.getTime(), Number(v.unix_ms), `${spec} ${v.id}`);
        }
      }
    });
  }
});
