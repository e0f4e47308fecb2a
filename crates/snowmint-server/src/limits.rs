//! What one client may take from the server: connections, time, header bytes, streams and
//! ids in flight. Each limit is a configuration key (file, `SNOWMINT_*` variable and flag);
//! the defaults suit a 2-core box serving other services over a private network.

use std::time::Duration;

use crate::config::{ConfigError, ServeSettings, invalid};

/// Open connections over both ports. A connection that waits for its request head costs
/// at most `max_header_bytes` of buffer plus a few KiB of state, so 10,000 stay well under
/// 1 GiB; the process needs a file-descriptor limit (`ulimit -n`) above this.
pub const DEFAULT_MAX_CONNECTIONS: u64 = 10_000;
/// Open connections on the admin port (`admin_addr`), apart from `max_connections`, so
/// that the API's clients cannot take them: its callers are a few probes and scrapers (a
/// kubelet's liveness and readiness probes, a Prometheus or two, an operator's curl), each
/// with a connection or two at a time; 32 leaves room for probes that time out and retry,
/// and holds at most 32 request heads of memory.
pub const ADMIN_MAX_CONNECTIONS: u32 = 32;
/// How long a client may take to send a request head, from its first byte (or from
/// connecting, for the first request). Loopback and LAN clients send a head in
/// milliseconds; 10 s leaves room for a congested link and closes slowloris connections.
pub const DEFAULT_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
/// How long a connection may make no progress (no request, no response byte taken)
/// before it is closed: longer than common client pools keep an idle connection warm.
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 60_000;
/// The request line and headers, together. Twice the longest request target
/// ([`crate::MAX_URI_BYTES`]), so a long target gets the API's own 414 and leaves 8 KiB
/// for headers (a bearer token, a proxy's forwarding headers).
pub const DEFAULT_MAX_HEADER_BYTES: u64 = 16 * 1024;
/// HTTP/2 streams one connection may have open: 100 is the least RFC 9113 recommends,
/// and more than the ids a client can use in parallel from one process.
pub const DEFAULT_MAX_CONCURRENT_STREAMS: u64 = 100;
/// Ids being issued or waiting in responses to be sent, over all connections: about one
/// second of the default layout's capacity (4,096,000 ids/s), and under 100 MB of JSON.
pub const DEFAULT_MAX_IDS_IN_FLIGHT: u64 = 4 * 1024 * 1024;
/// Ids one connection may have in flight: a sixteenth of the whole, so one client's slow
/// reads cannot hold every id the server may have in flight (raised to `max_batch` when
/// that is larger, so every request fits).
pub const DEFAULT_MAX_IDS_IN_FLIGHT_PER_CONNECTION: u64 = DEFAULT_MAX_IDS_IN_FLIGHT / 16;
/// How long any response of ids may take to drain before its rate counts: a round trip or
/// two and a scheduler's hiccup on a loaded host, with room to spare, and well inside the
/// time a small request may wait for the room an unread response holds.
pub const DEFAULT_DRAIN_GRACE_MS: u64 = 2_000;
/// The slowest rate, in bytes a second, at which a response's ids keep their room in the
/// budget: 1 MiB/s, a hundredth of a LAN's and far more than the trickle of a reader that
/// means to hold ids. A 100,000-id JSON response (up to 2.3 MB) has 4.2 s in all.
pub const DEFAULT_MIN_DRAIN_BYTES_PER_SEC: u64 = 1024 * 1024;
/// Response bytes one HTTP/2 stream may buffer for a reader that does not keep up, and the
/// largest piece a response body is handed to the transport in.
pub const DEFAULT_STREAM_BUFFER_BYTES: u64 = 64 * 1024;

/// hyper cannot read a request head into less than this.
const MIN_HEADER_BYTES: u64 = 8 * 1024;
/// Semaphore permits are `u32`: one permit per id in flight.
const MAX_IDS: u64 = u32::MAX as u64;

/// The limits, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Open connections over every port but the admin port; beyond it new ones are
    /// refused.
    pub max_connections: u32,
    /// Longest time to receive a request head.
    pub header_read_timeout: Duration,
    /// Longest time a connection may make no progress.
    pub idle_timeout: Duration,
    /// Largest request head (request line and headers, or an HTTP/2 header list), in bytes.
    pub max_header_bytes: u32,
    /// HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`, advertised on both ports.
    pub max_concurrent_streams: u32,
    /// Ids being issued or buffered in responses, over all connections.
    pub max_ids_in_flight: u32,
    /// Ids being issued or buffered in responses, on one connection.
    pub max_ids_in_flight_per_connection: u32,
    /// Response bytes one HTTP/2 stream may buffer, and the largest piece of a body.
    pub stream_buffer_bytes: u32,
    /// Time any response of ids has to drain, beyond its bytes at `min_drain_bytes_per_sec`.
    pub drain_grace: Duration,
    /// The rate below which a response's ids lose their room: its drain deadline is
    /// `drain_grace` plus its bytes at this rate.
    pub min_drain_bytes_per_sec: u64,
}

impl Limits {
    /// The defaults for a server whose largest batch is `max_batch`.
    ///
    /// # Examples
    ///
    /// ```
    /// let limits = snowmint_server::Limits::defaults(100_000);
    /// assert_eq!(limits.max_concurrent_streams, 100);
    /// assert_eq!(limits.max_ids_in_flight_per_connection, 262_144);
    /// assert_eq!(snowmint_server::Limits::defaults(1_000_000).max_ids_in_flight_per_connection, 1_000_000);
    /// ```
    #[must_use]
    pub fn defaults(max_batch: u64) -> Limits {
        let per_connection = DEFAULT_MAX_IDS_IN_FLIGHT_PER_CONNECTION
            .max(max_batch)
            .min(MAX_IDS);
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS as u32,
            header_read_timeout: Duration::from_millis(DEFAULT_HEADER_READ_TIMEOUT_MS),
            idle_timeout: Duration::from_millis(DEFAULT_IDLE_TIMEOUT_MS),
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES as u32,
            max_concurrent_streams: DEFAULT_MAX_CONCURRENT_STREAMS as u32,
            max_ids_in_flight: DEFAULT_MAX_IDS_IN_FLIGHT.max(per_connection) as u32,
            max_ids_in_flight_per_connection: per_connection as u32,
            stream_buffer_bytes: DEFAULT_STREAM_BUFFER_BYTES as u32,
            drain_grace: Duration::from_millis(DEFAULT_DRAIN_GRACE_MS),
            min_drain_bytes_per_sec: DEFAULT_MIN_DRAIN_BYTES_PER_SEC,
        }
    }

    /// The limits `s` sets, over the defaults, for a server whose largest batch is
    /// `max_batch`.
    ///
    /// # Errors
    ///
    /// A key is out of its range; the error names the key, the value and the range.
    pub(crate) fn from_settings(s: &ServeSettings, max_batch: u64) -> Result<Limits, ConfigError> {
        let d = Limits::defaults(max_batch);
        let max_connections = ranged(
            "max_connections",
            s.max_connections,
            u64::from(d.max_connections),
            1,
            1_000_000,
        )?;
        let header_read_timeout_ms = ranged(
            "header_read_timeout_ms",
            s.header_read_timeout_ms,
            DEFAULT_HEADER_READ_TIMEOUT_MS,
            1,
            3_600_000,
        )?;
        let idle_timeout_ms = ranged(
            "idle_timeout_ms",
            s.idle_timeout_ms,
            DEFAULT_IDLE_TIMEOUT_MS,
            1,
            86_400_000,
        )?;
        let max_header_bytes = ranged(
            "max_header_bytes",
            s.max_header_bytes,
            DEFAULT_MAX_HEADER_BYTES,
            MIN_HEADER_BYTES,
            1024 * 1024,
        )?;
        let max_concurrent_streams = ranged(
            "max_concurrent_streams",
            s.max_concurrent_streams,
            DEFAULT_MAX_CONCURRENT_STREAMS,
            1,
            10_000,
        )?;
        // The two shares of ids in flight are bounded below by other keys, which the
        // errors name: a connection must hold the largest batch, the server a connection.
        let per_connection = ranged(
            "max_ids_in_flight_per_connection",
            s.max_ids_in_flight_per_connection,
            u64::from(d.max_ids_in_flight_per_connection),
            max_batch,
            MAX_IDS,
        )
        .map_err(|e| e.because("at least max_batch, so the largest batch fits"))?;
        let max_ids_in_flight = ranged(
            "max_ids_in_flight",
            s.max_ids_in_flight,
            u64::from(d.max_ids_in_flight).max(per_connection),
            per_connection,
            MAX_IDS,
        )
        .map_err(|e| e.because("at least max_ids_in_flight_per_connection"))?;
        let stream_buffer_bytes = ranged(
            "stream_buffer_bytes",
            s.stream_buffer_bytes,
            DEFAULT_STREAM_BUFFER_BYTES,
            1024,
            16 * 1024 * 1024,
        )?;
        let drain_grace_ms = ranged(
            "drain_grace_ms",
            s.drain_grace_ms,
            DEFAULT_DRAIN_GRACE_MS,
            1,
            600_000,
        )?;
        let min_drain_bytes_per_sec = ranged(
            "min_drain_bytes_per_sec",
            s.min_drain_bytes_per_sec,
            DEFAULT_MIN_DRAIN_BYTES_PER_SEC,
            1,
            1 << 40,
        )?;
        // Every value is within u32 by its range.
        Ok(Limits {
            max_connections: max_connections as u32,
            header_read_timeout: Duration::from_millis(header_read_timeout_ms),
            idle_timeout: Duration::from_millis(idle_timeout_ms),
            max_header_bytes: max_header_bytes as u32,
            max_concurrent_streams: max_concurrent_streams as u32,
            max_ids_in_flight: max_ids_in_flight as u32,
            max_ids_in_flight_per_connection: per_connection as u32,
            stream_buffer_bytes: stream_buffer_bytes as u32,
            drain_grace: Duration::from_millis(drain_grace_ms),
            min_drain_bytes_per_sec,
        })
    }
}

/// `value`, or `default` when unset, if it is within `min..=max`.
fn ranged(
    key: &'static str,
    value: Option<u64>,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    let value = value.unwrap_or(default);
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(invalid(
            key,
            value,
            format!("is out of range {min}..={max}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(toml: &str, max_batch: u64) -> Result<Limits, ConfigError> {
        Limits::from_settings(
            &crate::Settings::from_toml(toml, "t.toml".as_ref())?.serve,
            max_batch,
        )
    }

    #[test]
    fn defaults_fit_every_batch() {
        assert_eq!(limits("", 100_000).unwrap(), Limits::defaults(100_000));
        let big = Limits::defaults(1_000_000);
        assert_eq!(big.max_ids_in_flight_per_connection, 1_000_000);
        assert_eq!(big.max_ids_in_flight, 4_194_304);
        let set = limits(
            "max_connections = 5\nheader_read_timeout_ms = 250\nidle_timeout_ms = 1000\nmax_header_bytes = 9000\nmax_concurrent_streams = 7\nmax_ids_in_flight = 300000\nmax_ids_in_flight_per_connection = 200000\nstream_buffer_bytes = 4096\ndrain_grace_ms = 500\nmin_drain_bytes_per_sec = 65536",
            100_000,
        )
        .unwrap();
        assert_eq!(
            set,
            Limits {
                max_connections: 5,
                header_read_timeout: Duration::from_millis(250),
                idle_timeout: Duration::from_secs(1),
                max_header_bytes: 9000,
                max_concurrent_streams: 7,
                max_ids_in_flight: 300_000,
                max_ids_in_flight_per_connection: 200_000,
                stream_buffer_bytes: 4096,
                drain_grace: Duration::from_millis(500),
                min_drain_bytes_per_sec: 65536,
            }
        );
        // A smaller per-connection share lowers nothing else; a larger one raises the whole.
        assert_eq!(
            limits("max_ids_in_flight_per_connection = 5000000", 100)
                .unwrap()
                .max_ids_in_flight,
            5_000_000
        );
    }

    #[test]
    fn errors_name_the_key_the_value_and_the_range() {
        let cases = [
            (
                "max_connections = 0",
                "config key `max_connections`: \"0\" is out of range 1..=1000000",
            ),
            (
                "header_read_timeout_ms = 0",
                "config key `header_read_timeout_ms`: \"0\" is out of range 1..=3600000",
            ),
            (
                "idle_timeout_ms = 0",
                "config key `idle_timeout_ms`: \"0\" is out of range 1..=86400000",
            ),
            (
                "max_header_bytes = 4096",
                "config key `max_header_bytes`: \"4096\" is out of range 8192..=1048576",
            ),
            (
                "max_concurrent_streams = 0",
                "config key `max_concurrent_streams`: \"0\" is out of range 1..=10000",
            ),
            (
                "max_ids_in_flight_per_connection = 99999",
                "config key `max_ids_in_flight_per_connection`: \"99999\" is out of range 100000..=4294967295: at least max_batch, so the largest batch fits",
            ),
            (
                "max_ids_in_flight = 200000",
                "config key `max_ids_in_flight`: \"200000\" is out of range 262144..=4294967295: at least max_ids_in_flight_per_connection",
            ),
            (
                "stream_buffer_bytes = 100",
                "config key `stream_buffer_bytes`: \"100\" is out of range 1024..=16777216",
            ),
            (
                "drain_grace_ms = 0",
                "config key `drain_grace_ms`: \"0\" is out of range 1..=600000",
            ),
            (
                "min_drain_bytes_per_sec = 0",
                "config key `min_drain_bytes_per_sec`: \"0\" is out of range 1..=1099511627776",
            ),
        ];
        for (toml, expected) in cases {
            assert_eq!(
                limits(toml, 100_000).unwrap_err().to_string(),
                expected,
                "{toml}"
            );
        }
    }
}
