"""testdata/vectors.json, written by the core: every id decodes here to the same fields,
every documented id to what its source says, and every bad input is refused in the core's
words."""

from __future__ import annotations

import json
import unittest

from snowmint import PRESET_NAMES, DecodeError, Layout, LayoutError, decode, parse_id

from .support import VECTORS

FILE = json.loads(VECTORS.read_text(encoding="utf-8"))


def overrides(spec: str) -> dict:
    """The tick and epoch a custom layout of the file needs; presets take their own."""
    if not spec.startswith("custom:"):
        return {}
    layout = next(l for l in FILE["layouts"] if l["layout"] == spec)
    return {"tick_ms": int(layout["tick_ms"]), "epoch_ms": int(layout["epoch_ms"])}


class Vectors(unittest.TestCase):
    def test_the_file_holds_every_preset_and_the_presets_hold_the_cores_numbers(self) -> None:
        specs = [l["layout"] for l in FILE["layouts"]]
        self.assertEqual([s for s in specs if not s.startswith("custom:")], list(PRESET_NAMES))
        for expected in FILE["layouts"]:
            with self.subTest(layout=expected["layout"]):
                layout = Layout.named(expected["layout"], **overrides(expected["layout"]))
                bits = layout.bits
                self.assertEqual(
                    {f: getattr(bits, f) for f in expected["bits"]}, expected["bits"]
                )
                self.assertEqual(list(layout.order), expected["order"])
                self.assertEqual(layout.tick_ms, int(expected["tick_ms"]))
                self.assertEqual(layout.epoch_ms, int(expected["epoch_ms"]))
                self.assertEqual(layout.max_id, int(expected["max_id"]))

    def test_every_vector_decodes_to_the_cores_fields(self) -> None:
        decoded = 0
        for layout in FILE["layouts"]:
            spec = layout["layout"]
            mine = [v for v in FILE["vectors"] if v["layout"] == spec]
            with self.subTest(layout=spec):
                self.assertTrue(mine, f"no vectors for {spec}")
                for v in mine:
                    expected = {
                        k: int(v[k])
                        for k in ("timestamp", "unix_ms", "datacenter", "worker", "sequence")
                    }
                    for id in (v["id"], int(v["id"])):
                        parts = decode(id, spec, **overrides(spec))
                        self.assertEqual(vars(parts), expected, f"{spec} {id!r}")
                    decoded += 1
        # Every vector belongs to a layout of the file, so none went unchecked.
        self.assertEqual(decoded, len(FILE["vectors"]))

    def test_every_documented_id_decodes_as_its_source_says(self) -> None:
        self.assertTrue(FILE["documented"])
        for d in FILE["documented"]:
            with self.subTest(source=d["source"]):
                extra = {k: int(d[k]) for k in ("tick_ms", "epoch_ms") if k in d}
                parts = decode(d["id"], d["layout"], **extra)
                expected = {
                    k: int(d[k]) for k in ("timestamp", "unix_ms", "datacenter", "worker", "sequence")
                }
                self.assertEqual(vars(parts), expected)
                self.assertEqual(parts.time.isoformat(timespec="milliseconds"), d["time"].replace("Z", "+00:00"))

    def test_every_text_reads_as_the_core_reads_it(self) -> None:
        self.assertTrue(FILE["texts"])
        for t in FILE["texts"]:
            with self.subTest(case=t):
                layout = Layout.named(t["layout"], **overrides(t["layout"]))
                self.assertEqual(layout.read_id(t["text"], t.get("encoding", "decimal")), int(t["id"]))
                parts = decode(t["text"], t["layout"], encoding=t.get("encoding", "decimal"), **overrides(t["layout"]))
                self.assertEqual(vars(parts), vars(layout.decode(int(t["id"]))))

    def test_every_bad_input_is_refused_in_the_cores_words(self) -> None:
        self.assertTrue(FILE["errors"])
        for e in FILE["errors"]:
            with self.subTest(case=e):
                if e["what"] == "parse":
                    error, run = DecodeError, lambda: parse_id(e["id"])
                elif e["what"] == "decode":
                    error, run = DecodeError, lambda: decode(e["id"], e["layout"])
                elif e["what"] == "read":
                    layout = Layout.named(e["layout"], **overrides(e["layout"]))
                    error, run = DecodeError, lambda: layout.read_id(e["id"], e.get("encoding", "decimal"))
                else:
                    extra = {k: int(e[k]) for k in ("tick_ms", "epoch_ms") if k in e}
                    error, run = LayoutError, lambda: Layout.named(e["layout"], **extra)
                with self.assertRaises(error) as caught:
                    run()
                self.assertEqual(str(caught.exception), e["message"])
