//! Prometheus metrics, all named `snowmint_*`.
//!
//! Request counts and latencies are recorded as requests pass; the generator's own counts,
//! its identity and the time left in the layout are read at each scrape.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::IdSource;

/// Labels of a request count.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RequestLabels {
    /// `http`, `grpc`, `thrift` or `admin`.
    pub protocol: &'static str,
    /// The route template (`/v1/decode/{id}`), the gRPC method or the Thrift method
    /// (`unmatched` when none matched).
    pub route: &'static str,
    /// The HTTP status, or the gRPC status code's number (0 is OK); for Thrift, 0 when the
    /// call returned, else the gRPC code of the same refusal (3 for a bad user agent or an
    /// unreadable call, 14 for the clock or the lease).
    pub status: u16,
}

/// Labels of a latency histogram.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct RouteLabels {
    /// `http`, `grpc`, `thrift` or `admin`.
    pub protocol: &'static str,
    /// The route template, or the gRPC or Thrift method.
    pub route: &'static str,
}

/// Labels of a connection count.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ConnectionLabels {
    /// The port: `http`, `grpc`, `thrift` or `admin`.
    pub protocol: &'static str,
}

/// Labels of a count of connections closed by a timeout.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct TimeoutLabels {
    /// The port: `http`, `grpc`, `thrift` or `admin`.
    pub protocol: &'static str,
    /// `header_read` (a request head, a Thrift frame or a TLS handshake too slow), `idle`
    /// (nothing to do), `stalled` (a response its reader stopped taking) or `body_read`
    /// (requests waiting for bodies their clients do not send).
    pub timeout: &'static str,
}

/// Labels of a port's TLS metrics.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct PortLabels {
    /// The port: `http`, `grpc`, `thrift` or `admin`.
    pub port: &'static str,
}

/// The server's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Ids handed out, over every protocol.
    pub ids_issued: Counter,
    /// Requests by protocol, route and status.
    pub requests: Family<RequestLabels, Counter>,
    /// Request latency by protocol and route.
    pub latency: Family<RouteLabels, Histogram>,
    /// Connections open, by port.
    pub connections_open: Family<ConnectionLabels, Gauge>,
    /// Connections refused because `max_connections` were open (the admin port's own cap
    /// there), by port.
    pub connections_refused: Family<ConnectionLabels, Counter>,
    /// Connections closed by a timeout, by port and timeout.
    pub connections_timed_out: Family<TimeoutLabels, Counter>,
    /// Ids being issued or waiting in responses to be sent.
    pub ids_in_flight: Gauge,
    /// Ids given back because their response was not taken within its drain deadline.
    pub ids_abandoned: Counter,
    /// When the certificate each TLS port serves expires, in Unix seconds.
    pub tls_certificate_expiry: Family<PortLabels, Gauge>,
    /// TLS files read again and put into service, by port.
    pub tls_reloads: Family<PortLabels, Counter>,
    /// TLS files read again that could not be used (the old pair kept serving), by port.
    pub tls_reload_failures: Family<PortLabels, Counter>,
    /// TLS handshakes that failed (no or an untrusted client certificate, plain text, no
    /// protocol in common), by port; those too slow count in `connections_timed_out`.
    pub tls_handshake_failures: Family<PortLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 10 us to ~2.6 s in 4x steps: covers an in-memory id and a batch of a million.
    Histogram::new(exponential_buckets(0.000_01, 4.0, 10))
}

impl Metrics {
    /// Metrics for a server issuing from `source`.
    #[must_use]
    pub fn new(source: Arc<IdSource>) -> Metrics {
        let mut registry = Registry::with_prefix("snowmint");
        let ids_issued = Counter::default();
        registry.register(
            "ids_issued",
            "Ids handed out to clients",
            ids_issued.clone(),
        );
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests by protocol, route and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        registry.register(
            "request_duration_seconds",
            "Request latency by protocol and route",
            latency.clone(),
        );
        let connections_open = Family::<ConnectionLabels, Gauge>::default();
        registry.register(
            "connections_open",
            "Connections open, by port",
            connections_open.clone(),
        );
        let connections_refused = Family::<ConnectionLabels, Counter>::default();
        registry.register(
            "connections_refused",
            "Connections refused because max_connections (on the admin port, its own cap) were open, by port",
            connections_refused.clone(),
        );
        let connections_timed_out = Family::<TimeoutLabels, Counter>::default();
        registry.register(
            "connections_timed_out",
            "Connections closed by header_read_timeout_ms (header_read: a request head, a Thrift frame or a TLS handshake) or idle_timeout_ms (idle; stalled: a response its reader stopped taking; body_read: requests waiting for bodies their clients do not send)",
            connections_timed_out.clone(),
        );
        let ids_in_flight = Gauge::default();
        registry.register(
            "ids_in_flight",
            "Ids being issued or waiting in responses to be sent",
            ids_in_flight.clone(),
        );
        let ids_abandoned = Counter::default();
        registry.register(
            "ids_abandoned",
            "Ids given back to max_ids_in_flight because their response was not taken within its drain deadline (drain_grace_ms, min_drain_bytes_per_sec); the response is dropped",
            ids_abandoned.clone(),
        );
        let tls_certificate_expiry = Family::<PortLabels, Gauge>::default();
        registry.register(
            "tls_certificate_expiry_timestamp_seconds",
            "When the certificate each TLS port serves expires (its notAfter), in Unix seconds",
            tls_certificate_expiry.clone(),
        );
        let tls_reloads = Family::<PortLabels, Counter>::default();
        registry.register(
            "tls_reloads",
            "TLS certificate, key and client CA files read again (they changed, or SIGHUP) and put into service, by port",
            tls_reloads.clone(),
        );
        let tls_reload_failures = Family::<PortLabels, Counter>::default();
        registry.register(
            "tls_reload_failures",
            "TLS files read again that could not be used, by port: the old certificate keeps serving",
            tls_reload_failures.clone(),
        );
        let tls_handshake_failures = Family::<PortLabels, Counter>::default();
        registry.register(
            "tls_handshake_failures",
            "TLS handshakes that failed, by port: no or an untrusted client certificate, plain text on a TLS port, nothing in common",
            tls_handshake_failures.clone(),
        );
        registry.register_collector(Box::new(GeneratorCollector(source)));
        Metrics {
            registry,
            ids_issued,
            requests,
            latency,
            connections_open,
            connections_refused,
            connections_timed_out,
            ids_in_flight,
            ids_abandoned,
            tls_certificate_expiry,
            tls_reloads,
            tls_reload_failures,
            tls_handshake_failures,
        }
    }

    /// A port begins to accept: its counters of refusals (and, over TLS, of reloads and
    /// failed handshakes) are shown from now on at 0, so that an alert on their increase
    /// has a series to look at before the first refusal.
    pub fn port_opened(&self, port: &'static str, tls: bool) {
        drop(
            self.connections_refused
                .get_or_create(&ConnectionLabels { protocol: port }),
        );
        if tls {
            let labels = PortLabels { port };
            drop(self.tls_reloads.get_or_create(&labels));
            drop(self.tls_reload_failures.get_or_create(&labels));
            drop(self.tls_handshake_failures.get_or_create(&labels));
        }
    }

    /// The request metrics of `route` over `protocol`, for a caller to keep and record
    /// through ([`RouteMetrics::record`]); `ok` is the status most of its requests answer
    /// (200, or gRPC's 0), whose count it keeps at hand.
    #[must_use]
    pub fn route(&self, protocol: &'static str, route: &'static str, ok: u16) -> RouteMetrics {
        RouteMetrics {
            protocol,
            route,
            ok,
            requests: self.requests.clone(),
            latency: self.latency.clone(),
            latency_of_route: OnceLock::new(),
            ok_count: OnceLock::new(),
        }
    }

    /// Counts a request to `route` over `protocol` that answered `status` (an HTTP status,
    /// or a gRPC code's number, as Thrift counts too) after `elapsed`. A route called often
    /// is cheaper to count through a [`RouteMetrics`] kept from [`Metrics::route`].
    pub fn record(
        &self,
        protocol: &'static str,
        route: &'static str,
        status: u16,
        elapsed: Duration,
    ) {
        self.latency
            .get_or_create(&RouteLabels { protocol, route })
            .observe(elapsed.as_secs_f64());
        self.requests
            .get_or_create(&RequestLabels {
                protocol,
                route,
                status,
            })
            .inc();
    }

    /// The OpenMetrics text of every metric.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// One route's request metrics: its latency histogram and the count of its usual status,
/// looked up in the families once, when first needed (so a route never called, or a status
/// never answered, shows no series, as before), then kept. A request that answers the
/// usual status costs an atomic add and a histogram observation, not two lookups in the
/// families' label maps; any other status is rare and is looked up as it comes.
#[derive(Debug)]
pub struct RouteMetrics {
    protocol: &'static str,
    route: &'static str,
    ok: u16,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    latency_of_route: OnceLock<Histogram>,
    ok_count: OnceLock<Counter>,
}

impl RouteMetrics {
    /// Counts a request that answered `status` after `elapsed`.
    pub fn record(&self, status: u16, elapsed: Duration) {
        let (protocol, route) = (self.protocol, self.route);
        self.latency_of_route
            .get_or_init(|| {
                self.latency
                    .get_or_create(&RouteLabels { protocol, route })
                    .clone()
            })
            .observe(elapsed.as_secs_f64());
        if status == self.ok {
            self.ok_count
                .get_or_init(|| self.requests.get_or_create(&self.labels(status)).clone())
                .inc();
        } else {
            self.requests.get_or_create(&self.labels(status)).inc();
        }
    }

    fn labels(&self, status: u16) -> RequestLabels {
        RequestLabels {
            protocol: self.protocol,
            route: self.route,
            status,
        }
    }
}

/// Reads the generator's state at each scrape.
#[derive(Debug)]
struct GeneratorCollector(Arc<IdSource>);

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WorkerLabels {
    layout: &'static str,
    datacenter: u64,
    worker: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LeaseLabels {
    backend: &'static str,
    state: &'static str,
}

impl Collector for GeneratorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use std::sync::atomic::Ordering::Relaxed;
        let source = &self.0;
        let issuer = source.issuer();
        let stats = issuer
            .as_ref()
            .map(|s| s.generator().stats())
            .unwrap_or_default();
        let lease = source
            .with_keeper(|k| {
                let c = k.counters();
                [
                    c.renewals.load(Relaxed),
                    c.renew_failures.load(Relaxed),
                    c.acquire_failures.load(Relaxed),
                    c.exhausted.load(Relaxed),
                ]
            })
            .unwrap_or_default();
        let counters = [
            (
                "clock_rollbacks",
                "Times the clock was found behind the newest id issued",
                stats.clock_rollbacks,
            ),
            (
                "tick_waits",
                "Times a caller parked until a later tick",
                stats.tick_waits,
            ),
            (
                "rollback_refusals",
                "Requests the rollback policy refused while the clock was behind",
                stats.rollback_refusals,
            ),
            (
                "rollback_waits",
                "Waits for a clock that was behind (rollback policies wait and spare)",
                stats.rollback_waits,
            ),
            (
                "logical_ticks",
                "Ticks the logical rollback policy issued ahead of a clock that was behind",
                stats.logical_ticks,
            ),
            (
                "spare_sequence_ids",
                "Ids the spare rollback policy issued from the newest tick's unused sequence numbers",
                stats.spare_ids,
            ),
            (
                "high_water_mark_writes",
                "High-water marks written to the state file",
                stats.reservations,
            ),
            (
                "lease_renewals",
                "Worker-id lease renewals confirmed",
                lease[0],
            ),
            (
                "lease_renewal_failures",
                "Worker-id lease renewals that failed",
                lease[1],
            ),
            (
                "lease_acquire_failures",
                "Worker-id acquisitions that failed",
                lease[2],
            ),
            (
                "lease_exhausted",
                "Acquisitions that found every worker id held",
                lease[3],
            ),
        ];
        for (name, help, value) in counters {
            let metric = ConstCounter::new(value);
            metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)?;
        }
        let waited = ConstCounter::new(stats.rollback_wait_ms as f64 / 1000.0);
        waited.encode(encoder.encode_descriptor(
            "rollback_wait_seconds",
            "Time spent waiting for a clock that was behind",
            None,
            waited.metric_type(),
        )?)?;
        let status = source.lease_status();
        let (state, valid_until_ms, ttl_ms) = match &status {
            snowmint_lease::LeaseStatus::Held(h) => ("held", Some(h.valid_until_ms), h.ttl_ms),
            snowmint_lease::LeaseStatus::Acquiring { .. } => ("acquiring", None, 0),
            snowmint_lease::LeaseStatus::Released => ("released", None, 0),
        };
        let info = ConstGauge::new(1i64);
        let mut family = encoder.encode_descriptor(
            "lease_info",
            "The lease backend and whether a worker id is held",
            None,
            info.metric_type(),
        )?;
        info.encode(family.encode_family(&LeaseLabels {
            backend: source.backend(),
            state,
        })?)?;
        let layout = source.layout();
        let now_ms = snowmint::Clock::now_ms(source.clock());
        if let Some(issuer) = &issuer {
            let generator = issuer.generator();
            let info = ConstGauge::new(1i64);
            let labels = WorkerLabels {
                layout: layout.name(),
                datacenter: generator.datacenter(),
                worker: generator.worker(),
            };
            let mut family = encoder.encode_descriptor(
                "worker_info",
                "The layout, datacenter and worker this process issues for",
                None,
                info.metric_type(),
            )?;
            info.encode(family.encode_family(&labels)?)?;
        }
        let mut gauges = vec![
            (
                "time_field_remaining_seconds",
                "Seconds until the layout's time field runs out",
                layout.capacity().runs_out_ms.saturating_sub(now_ms) as f64 / 1000.0,
            ),
            (
                "capacity_ids_per_second",
                "Ids one worker id can issue per second under the layout: the cap ids_issued_total rises toward",
                layout.capacity().ids_per_second as f64,
            ),
            (
                "ready",
                "1 while the process may issue ids",
                f64::from(u8::from(source.readiness().is_ok())),
            ),
        ];
        if let Some(issuer) = &issuer {
            let generator = issuer.generator();
            gauges.push(("datacenter", "Datacenter id", generator.datacenter() as f64));
            gauges.push(("worker", "Worker id", generator.worker() as f64));
            gauges.push((
                "clock_lag_seconds",
                "How far the clock is behind the next id's time (after a restart behind the high-water mark)",
                generator.clock_lag_ms() as f64 / 1000.0,
            ));
        }
        if let Some(until) = valid_until_ms.filter(|ms| *ms != u64::MAX) {
            gauges.push((
                "lease_valid_seconds",
                "Seconds the worker-id lease is certainly valid for (negative: expired)",
                (until as f64 - now_ms as f64) / 1000.0,
            ));
        }
        if ttl_ms > 0 {
            gauges.push((
                "lease_ttl_seconds",
                "How long the worker-id lease lasts without renewal: the TTL asked for, or the one the registry granted",
                ttl_ms as f64 / 1000.0,
            ));
        }
        for (name, help, value) in gauges {
            let metric = ConstGauge::new(value);
            metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)?;
        }
        Ok(())
    }
}
