"""snowmint: ids from a snowmint server, and decoding of any Snowflake-style id for the
presets and custom layouts, with exact integers.

>>> from snowmint import decode
>>> parts = decode("175928847299117063", "discord")
>>> (parts.unix_ms, parts.worker, parts.sequence)
(1462015105796, 1, 7)
>>> parts.time.isoformat()
'2016-04-30T11:18:25.796000+00:00'
"""

from .client import Client
from .errors import (
    ConfigError,
    ConnectionError,
    DecodeError,
    IdError,
    LayoutError,
    RequestError,
    ServerError,
    SnowmintError,
)
from .layout import ENCODINGS, PRESET_NAMES, TWITTER_EPOCH_MS, Bits, Decoded, Layout, decode, parse_id
from .version import __version__

__all__ = [
    "ENCODINGS",
    "Bits",
    "Client",
    "ConfigError",
    "ConnectionError",
    "DecodeError",
    "Decoded",
    "IdError",
    "Layout",
    "LayoutError",
    "PRESET_NAMES",
    "RequestError",
    "ServerError",
    "SnowmintError",
    "TWITTER_EPOCH_MS",
    "__version__",
    "decode",
    "parse_id",
]
