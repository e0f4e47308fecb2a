"""How the 64 bits of an id are split, and taking an id apart, with Python's exact integers."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Tuple, Union

from ._presets import ENCODING_NAMES as _ENCODING_NAMES
from ._presets import ENCODINGS as _TEXT_ENCODINGS
from ._presets import PRESETS
from .errors import DecodeError, LayoutError

U64_MAX = (1 << 64) - 1
#: The fields below the timestamp, in Twitter's order, most significant first.
FIELDS = ("datacenter", "worker", "sequence")
#: The digits of 2**64 - 1: no decimal id is longer.
_DECIMAL_MAX_LEN = 20
_UNIX_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)

#: The presets' numbers, from the core (generated from testdata/vectors.json).
_PRESETS = PRESETS
#: Twitter's epoch, 2010-11-04T01:42:54.657Z: a custom layout's epoch unless given.
TWITTER_EPOCH_MS = _PRESETS["twitter"][3]

#: The presets' names, in the core's order.
PRESET_NAMES: Tuple[str, ...] = tuple(_PRESETS)

IdLike = Union[str, int]

#: The encodings, in the core's order.
ENCODINGS: Tuple[str, ...] = tuple(_TEXT_ENCODINGS)


@dataclass(frozen=True)
class Bits:
    """Bit widths of the four fields."""

    timestamp: int
    datacenter: int
    worker: int
    sequence: int

    @property
    def total(self) -> int:
        """Bits used by all four fields together."""
        return self.timestamp + self.datacenter + self.worker + self.sequence


@dataclass(frozen=True)
class Decoded:
    """An id taken apart."""

    #: Ticks since the layout's epoch.
    timestamp: int
    #: The start of that tick, in ms since the Unix epoch.
    unix_ms: int
    datacenter: int
    worker: int
    sequence: int

    @property
    def time(self) -> _dt.datetime:
        """``unix_ms`` as an aware UTC datetime.

        Raises ``OverflowError`` past the year 9999, where ``datetime`` ends.
        """
        try:
            return _UNIX_EPOCH + _dt.timedelta(milliseconds=self.unix_ms)
        except OverflowError:
            raise OverflowError(
                f"time {self.unix_ms} ms is past the last datetime, in the year 9999"
            ) from None


class Layout:
    """A validated split of the 64 bits: widths, order of the low fields, tick and epoch."""

    __slots__ = ("name", "bits", "order", "tick_ms", "epoch_ms", "max_id", "_shifts")

    def __init__(
        self,
        bits: Union[Bits, Mapping[str, int]],
        *,
        order: Iterable[str] = FIELDS,
        tick_ms: int = 1,
        epoch_ms: int = TWITTER_EPOCH_MS,
        name: str = "custom",
    ) -> None:
        if isinstance(bits, Mapping):
            bits = Bits(**bits)
        for field in ("timestamp",) + FIELDS:
            width = getattr(bits, field)
            if not _is_int(width) or not 0 <= width <= 64:
                raise LayoutError(f"{field} width {width!r} is out of range 0..=64")
        if bits.total > 64:
            raise LayoutError(f"layout needs {bits.total} bits but an id has 64")
        if bits.timestamp == 0:
            raise LayoutError("layout needs at least 1 timestamp bit, got 0")
        order = tuple(order)
        if len(order) != 3 or set(order) != set(FIELDS):
            raise LayoutError(
                f"layout order {list(order)!r} must name datacenter, worker and sequence once each"
            )
        if not _is_int(tick_ms):
            raise TypeError(f"tick_ms must be an int, got {type(tick_ms).__name__}")
        if tick_ms < 1:
            raise LayoutError(f"tick length must be at least 1 ms, got {tick_ms}")
        if not _is_int(epoch_ms):
            raise TypeError(f"epoch_ms must be an int, got {type(epoch_ms).__name__}")
        if not 0 <= epoch_ms <= U64_MAX:
            raise LayoutError(f"epoch {epoch_ms} is out of range 0..={U64_MAX}")
        if epoch_ms + (tick_ms << bits.timestamp) - 1 > U64_MAX:
            raise LayoutError(
                f"epoch {epoch_ms} ms puts the layout's last tick past the largest millisecond count"
            )
        self.name = name
        self.bits = bits
        self.order = order
        self.tick_ms = tick_ms
        self.epoch_ms = epoch_ms
        self.max_id = (1 << bits.total) - 1
        # Shifts: the last field of the order holds the lowest bits, the timestamp the top ones.
        shifts = {}
        shift = 0
        for field in reversed(order):
            shifts[field] = shift
            shift += getattr(bits, field)
        shifts["timestamp"] = shift
        self._shifts = shifts

    @classmethod
    def named(
        cls, spec: str, *, tick_ms: Optional[int] = None, epoch_ms: Optional[int] = None
    ) -> "Layout":
        """A preset by name (in any case), or ``custom:T/D/W/S``: the timestamp, datacenter,
        worker and sequence widths, adding up to 63 or 64, in Twitter's field order.

        ``tick_ms`` and ``epoch_ms`` replace the preset's (a custom layout's: 1 ms and
        Twitter's epoch).
        """
        if not isinstance(spec, str):
            raise TypeError(
                f'layout must be a str such as "twitter", got {type(spec).__name__}'
            )
        if spec[:7].lower() == "custom:":
            name, bits, order, tick, epoch = spec, _custom_bits(spec), FIELDS, 1, TWITTER_EPOCH_MS
        else:
            name = spec.lower()
            if name not in _PRESETS:
                raise LayoutError(
                    f"unknown layout {_quote(spec)}: expected one of "
                    f"{', '.join(PRESET_NAMES)} or custom:T/D/W/S"
                )
            widths, order, tick, epoch = _PRESETS[name]
            bits = Bits(*widths)
        return cls(
            bits,
            order=order,
            tick_ms=tick if tick_ms is None else tick_ms,
            epoch_ms=epoch if epoch_ms is None else epoch_ms,
            name=name,
        )

    def read_id(self, text: str, encoding: str = "decimal") -> int:
        """Reads id text in ``encoding`` (decimal, hex, base32, base62 or binary; no guessing).

        A negative decimal is an id as a signed 64-bit column (SQL ``bigint``, a Java
        ``long``) holds it: for a layout of 64 bits it is read as the two's complement; a
        layout of 63 bits has no negative ids, so it is refused.
        """
        if not isinstance(text, str):
            raise TypeError(f"id text must be a str, got {type(text).__name__}")
        if _encoding(encoding) != "decimal" or not text.startswith("-") or text == "-":
            return parse_id(text, encoding)
        try:
            magnitude = parse_id(text[1:])
        except DecodeError as e:
            if str(e) == "decimal id does not fit in 64 bits":
                magnitude = U64_MAX
            elif str(e).startswith("invalid character "):
                # Positions count the sign.
                head, _, position = str(e).rpartition(" at position ")
                number, _, rest = position.partition(" ")
                raise DecodeError(f"{head} at position {int(number) + 1} {rest}") from None
            else:
                raise
        if magnitude > 1 << 63:
            raise DecodeError(
                f"id {_quote(text)} is below -9223372036854775808, "
                "the smallest signed 64-bit number"
            )
        if magnitude != 0 and self.bits.total < 64:
            name = "custom" if self.name.startswith("custom") else self.name
            raise DecodeError(
                f"id {_quote(text)} is negative, but layout {name} uses 63 bits: "
                "none of its ids is negative, even in a signed 64-bit column"
            )
        return -magnitude % (1 << 64)

    def decode(self, id: IdLike, encoding: str = "decimal") -> Decoded:
        """Takes an id (text in ``encoding``, as :meth:`read_id` reads it, or an int) apart."""
        value = self.read_id(id, encoding) if isinstance(id, str) else parse_id(id)
        if value > self.max_id:
            raise DecodeError(
                f"id {value} is out of range for this layout: its largest id is {self.max_id}"
            )

        def field(name: str, width: int) -> int:
            return (value >> self._shifts[name]) & ((1 << width) - 1)

        timestamp = field("timestamp", self.bits.timestamp)
        return Decoded(
            timestamp=timestamp,
            unix_ms=self.epoch_ms + timestamp * self.tick_ms,
            datacenter=field("datacenter", self.bits.datacenter),
            worker=field("worker", self.bits.worker),
            sequence=field("sequence", self.bits.sequence),
        )

    def __repr__(self) -> str:
        return (
            f"Layout({self.name!r}, bits={self.bits}, order={self.order}, "
            f"tick_ms={self.tick_ms}, epoch_ms={self.epoch_ms})"
        )


def decode(
    id: IdLike,
    layout: str = "twitter",
    tick_ms: Optional[int] = None,
    epoch_ms: Optional[int] = None,
    encoding: str = "decimal",
) -> Decoded:
    """Takes an id apart: ``layout`` is a preset or ``custom:T/D/W/S``, and ``tick_ms`` and
    ``epoch_ms`` replace the layout's own; text is read in ``encoding``
    (:meth:`Layout.read_id`)."""
    return Layout.named(layout, tick_ms=tick_ms, epoch_ms=epoch_ms).decode(id, encoding)


def _encoding(name: str) -> str:
    """The encoding a name stands for, in any case, as the core reads names."""
    found = _ENCODING_NAMES.get(name.lower()) if isinstance(name, str) else None
    if found is None:
        raise ValueError(
            f"unknown encoding {_quote(str(name))}: expected one of {', '.join(ENCODINGS)}"
        )
    return found


def _read_digits(text: str, encoding: str) -> int:
    """Reads ``text`` in ``encoding`` as the core does, with its error messages: the first
    character outside the alphabet, else too many digits, else a value past 64 bits."""
    alphabet, fold_case, prefixes, max_len, aliases = _TEXT_ENCODINGS[encoding]
    offset = 0
    for prefix in prefixes:
        if text.startswith(prefix):
            text, offset = text[len(prefix):], len(prefix)
            break
    if text == "":
        raise DecodeError("empty input: expected an id")
    value = 0
    for position, ch in enumerate(text):
        digit = -1
        if ch.isascii():
            digit = alphabet.upper().find(ch.upper()) if fold_case else alphabet.find(ch)
            digit = aliases.get(ch.upper(), digit)
        if digit < 0:
            raise DecodeError(
                f"invalid character {_quote_char(ch)} at position {offset + position} "
                f"in {encoding} id"
            )
        value = value * len(alphabet) + digit
    if len(text) > max_len:
        raise DecodeError(
            f"{encoding} id has {len(text)} characters, more than the {max_len} a 64-bit id takes"
        )
    if value > U64_MAX:
        raise DecodeError(f"{encoding} id does not fit in 64 bits")
    return value


def parse_id(id: IdLike, encoding: str = "decimal") -> int:
    """Reads an id: a str in ``encoding`` (decimal by default: at most 20 ASCII digits;
    hex, base32, base62 or binary as the core writes and reads them), or an int, within
    0..=2**64-1."""
    if _is_int(id):
        if not 0 <= id <= U64_MAX:
            raise DecodeError(f"id {id} is out of range 0..={U64_MAX}")
        return id
    if not isinstance(id, str):
        raise TypeError(f"id must be a decimal str or an int, got {type(id).__name__}")
    if _encoding(encoding) != "decimal":
        return _read_digits(id, _encoding(encoding))
    if id == "":
        raise DecodeError("empty input: expected an id")
    # int() would take spaces, underscores and other scripts' digits: the core takes none.
    for position, ch in enumerate(id):
        if not "0" <= ch <= "9":
            raise DecodeError(
                f"invalid character {_quote_char(ch)} at position {position} in decimal id"
            )
    if len(id) > _DECIMAL_MAX_LEN:
        raise DecodeError(
            f"decimal id has {len(id)} characters, "
            f"more than the {_DECIMAL_MAX_LEN} a 64-bit id takes"
        )
    value = int(id)
    if value > U64_MAX:
        raise DecodeError("decimal id does not fit in 64 bits")
    return value


def _custom_bits(spec: str) -> Bits:
    """The widths of ``custom:T/D/W/S``, checked as the core checks them."""
    parts = spec[7:].split("/")
    if len(parts) != 4:
        raise LayoutError(
            f"custom layout {_quote(spec)} must be custom:T/D/W/S, four bit widths "
            "(timestamp/datacenter/worker/sequence) such as custom:41/5/5/12"
        )
    widths = []
    for field, text in zip(("timestamp",) + FIELDS, parts):
        # Plain digits only, as the core takes them: no sign, no space.
        digits = text
        if not (1 <= len(digits) <= 3 and all("0" <= c <= "9" for c in digits)) or int(digits) > 64:
            raise LayoutError(
                f"custom layout {field} width {_quote(text)} is not a number of bits 0..=64"
            )
        widths.append(int(digits))
    bits = Bits(*widths)
    if bits.total not in (63, 64):
        raise LayoutError(
            f"custom layout widths add up to {bits.total} bits: "
            "they must add up to 63 (bit 63 stays 0) or 64"
        )
    if bits.timestamp == 0:
        raise LayoutError("layout needs at least 1 timestamp bit, got 0")
    if bits.sequence == 0:
        raise LayoutError("custom layout needs at least 1 sequence bit, got 0")
    return bits


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _quote(text: str) -> str:
    """Text in double quotes, as the core's messages show it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _quote_char(ch: str) -> str:
    """A character in single quotes, control characters escaped, as the core shows one."""
    return "'\\''" if ch == "'" else "'" + repr(ch)[1:-1].replace("\\'", "'") + "'"
