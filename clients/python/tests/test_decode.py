"""Decoding: layouts by name, custom layouts, and the errors of bad input, pinned word for
word."""

from __future__ import annotations

import datetime as dt
import doctest
import unittest

import snowmint
from snowmint import Bits, DecodeError, IdError, Layout, LayoutError, decode, parse_id

U64_MAX = (1 << 64) - 1


def load_tests(loader, tests, pattern):  # noqa: ARG001 (unittest's protocol)
    """The package's docstring examples run as tests too."""
    tests.addTests(doctest.DocTestSuite(snowmint))
    return tests


class Decode(unittest.TestCase):
    # The documented ids (Discord's and the others), bad decimal text, ids past their layout
    # and bad layouts are in the shared vectors, with the core's words: test_vectors.py.

    def test_an_id_decodes_from_a_str_and_from_an_int_with_its_time(self) -> None:
        parts = decode("2125144477650808832")
        self.assertEqual(decode(2125144477650808832), parts)
        self.assertEqual(
            parts.time, dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=parts.unix_ms)
        )

    def test_twitter_is_the_default_and_names_are_read_in_any_case(self) -> None:
        id = "2125144477650808832"
        self.assertEqual(decode(id), decode(id, "twitter"))
        self.assertEqual(decode(id, "TWITTER"), decode(id, "twitter"))
        self.assertEqual(decode(id, "Custom:41/5/5/12"), decode(id, "twitter"))

    def test_a_custom_layout_takes_twitters_epoch_and_1_ms_unless_given_others(self) -> None:
        id = (5 << 22) | (1 << 17) | (7 << 12) | 3
        parts = decode(id, "custom:41/5/5/12")
        self.assertEqual(parts.unix_ms, 1288834974657 + 5)
        self.assertEqual((parts.datacenter, parts.worker, parts.sequence), (1, 7, 3))
        other = decode(id, "custom:41/5/5/12", tick_ms=10, epoch_ms=1700000000000)
        self.assertEqual((other.timestamp, other.unix_ms), (5, 1700000000000 + 50))
        # A preset takes another tick and epoch too, as the command line's --tick-ms and --epoch.
        self.assertEqual(decode(id, "twitter", 1, 0).unix_ms, 5)

    def test_a_64_bit_layout_decodes_the_largest_id_with_unsigned_arithmetic(self) -> None:
        parts = decode(str(U64_MAX), "discord")
        self.assertEqual(parts.timestamp, (1 << 42) - 1)
        self.assertEqual((parts.datacenter, parts.worker, parts.sequence), (31, 31, 4095))
        wide = Layout(Bits(64, 0, 0, 0), epoch_ms=0)
        self.assertEqual(wide.max_id, U64_MAX)
        self.assertEqual(wide.decode(U64_MAX).unix_ms, U64_MAX)
        with self.assertRaisesRegex(
            LayoutError,
            "^epoch 1 ms puts the layout's last tick past the largest millisecond count$",
        ):
            Layout({"timestamp": 64, "datacenter": 0, "worker": 0, "sequence": 0}, epoch_ms=1)

    def test_ints_past_64_bits_and_other_types_are_refused_naming_the_problem(self) -> None:
        cases = [
            (-1, f"id -1 is out of range 0..={U64_MAX}"),
            (1 << 64, f"id 18446744073709551616 is out of range 0..={U64_MAX}"),
        ]
        for id, message in cases:
            with self.subTest(id=id):
                with self.assertRaises(DecodeError) as caught:
                    decode(id)
                self.assertEqual(str(caught.exception), message)
        for id, kind in [(12.0, "float"), (True, "bool"), (None, "NoneType")]:
            with self.subTest(id=id):
                with self.assertRaises(TypeError) as caught:
                    decode(id)  # type: ignore[arg-type]
                self.assertEqual(str(caught.exception), f"id must be a decimal str or an int, got {kind}")
        self.assertEqual(parse_id("00000000000000000012"), 12)
        self.assertEqual(parse_id(str(U64_MAX)), U64_MAX)

    def test_the_old_names_of_the_errors_still_catch_them(self) -> None:
        self.assertIs(IdError, DecodeError)
        self.assertIs(snowmint.RequestError, snowmint.ConnectionError)
        with self.assertRaises(IdError):
            decode(U64_MAX, "sonyflake")

    def test_bad_layouts_are_refused_naming_the_problem(self) -> None:
        cases = [
            (("twitter", None, -1), f"epoch -1 is out of range 0..={U64_MAX}"),
            (
                ("mastodon", None, U64_MAX),
                f"epoch {U64_MAX} ms puts the layout's last tick past the largest millisecond count",
            ),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                with self.assertRaises(LayoutError) as caught:
                    decode("1", *args)
                self.assertEqual(str(caught.exception), message)
        with self.assertRaisesRegex(LayoutError, "^layout needs 65 bits but an id has 64$"):
            Layout(Bits(41, 5, 5, 14))
        with self.assertRaisesRegex(
            LayoutError,
            r"^layout order \['worker', 'worker', 'sequence'\] must name datacenter, worker and sequence once each$",
        ):
            Layout(Bits(41, 5, 5, 12), order=("worker", "worker", "sequence"))
        with self.assertRaisesRegex(TypeError, "^tick_ms must be an int, got float$"):
            decode("1", "twitter", 1.5)  # type: ignore[arg-type]
        with self.assertRaisesRegex(TypeError, '^layout must be a str such as "twitter", got int$'):
            decode("1", 42)  # type: ignore[arg-type]

    def test_a_time_past_what_datetime_holds_is_an_overflow_error_while_fields_stay_exact(self) -> None:
        parts = decode(U64_MAX, "custom:32/8/8/16", 4000000000)
        self.assertEqual(parts.unix_ms, 1288834974657 + ((1 << 32) - 1) * 4000000000)
        with self.assertRaises(OverflowError) as caught:
            parts.time
        self.assertEqual(
            str(caught.exception), f"time {parts.unix_ms} ms is past the last datetime, in the year 9999"
        )
