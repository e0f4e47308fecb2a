"""snippet.py, the program the docs page shows, runs against the server and prints the id
it got, decoded. The page swaps its one "twitter" for the layout it shows."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

from .support import SERVER, needs_server

SNIPPET = Path(__file__).resolve().parents[1] / "snippet.py"
SRC = SNIPPET.parent / "src"


class Snippet(unittest.TestCase):
    def test_the_snippet_is_short_and_names_its_layout_once_as_the_literal_twitter(self) -> None:
        text = SNIPPET.read_text(encoding="utf-8")
        self.assertEqual(text.count('"twitter"'), 1)
        code = [line for line in text.splitlines() if line.strip()]
        self.assertLessEqual(len(code), 12)

    @needs_server
    def test_the_snippet_gets_an_id_from_the_server_and_prints_it_decoded(self) -> None:
        path = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "SNOWMINT_URL": SERVER or "", "PYTHONPATH": path}
        out = subprocess.run(
            [sys.executable, str(SNIPPET)], env=env, capture_output=True, text=True, timeout=30
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        print(f"\nsnippet printed:\n{out.stdout}", end="", file=sys.stderr)
        self.assertRegex(
            out.stdout,
            r"\A[0-9]+ 20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}\+00:00\n"
            r"datacenter=1 worker=7 sequence=[0-9]+\n\Z",
        )
