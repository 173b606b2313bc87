//! Prometheus metrics: `GET /metrics` on its own listener (`--metrics-listen`), in the
//! Prometheus text format, encoded by `prometheus-client`.
//!
//! The hot path only adds to atomics: requests by transport, operation and outcome live in one
//! flat array indexed by positions fixed at compile time (the [`operations`] table and
//! [`ErrorKind::ALL`]), the latency histogram is an array of atomic buckets, and the per-shard
//! counters are a table swapped only when the map changes. Nothing allocates or locks per
//! request. The gauges that depend on the engine (open shards, open transactions, queue depth)
//! and the rows copied by data migrations are read at scrape time through [`ScrapeSource`].
//! Labels carry operation names, outcome codes and shard ids: never route keys or SQL.
//!
//! [`operations`]: super::operations

mod encode;
mod source;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use arc_swap::ArcSwap;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse as _;

pub use source::{ScrapeSource, ScrapeValues, ShardGauges};

use super::ServerState;
use super::counters::Surface;
use super::operations::OperationId;
use crate::error::{Error, ErrorKind, Result};
use crate::map::ShardMap;

/// How a request ended (the `code` label): `ok`, an error kind's code, or `rejected` for a
/// refusal without one (a body too large, a wrong media type or method).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// It failed with this kind of error.
    Failed(ErrorKind),
    /// It was refused before reaching an operation.
    Rejected,
}

const CODES: usize = ErrorKind::ALL.len() + 2;

impl Outcome {
    fn index(self) -> usize {
        match self {
            Self::Ok => 0,
            Self::Failed(kind) => ErrorKind::ALL
                .iter()
                .position(|k| *k == kind)
                .map_or(CODES - 1, |position| position + 1),
            Self::Rejected => CODES - 1,
        }
    }

    fn label(index: usize) -> &'static str {
        match index {
            0 => "ok",
            i if i < CODES - 1 => ErrorKind::ALL[i - 1].code(),
            _ => "rejected",
        }
    }
}

/// Upper bounds of the latency buckets, in seconds: fine below a millisecond, where most
/// requests of a local shard end, and coarse up to the default request timeout.
const BUCKETS: [f64; 17] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
    60.0,
];

/// One latency histogram: a count per bucket (not cumulative), and the sum in nanoseconds.
#[derive(Debug, Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let bucket = BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// Requests per shard: counters by shard index for the map version they were built for, and
/// every shard ever seen (so counts survive a map change).
#[derive(Debug, Default)]
struct ShardCounters {
    current: ArcSwap<ShardTable>,
    seen: Mutex<Vec<(String, Arc<AtomicU64>)>>,
}

#[derive(Debug, Default)]
struct ShardTable {
    map_version: u64,
    keyspace: String,
    by_index: Vec<Arc<AtomicU64>>,
}

impl ShardCounters {
    fn count(&self, map: &ShardMap, shard_index: usize) {
        {
            let table = self.current.load();
            if table.map_version == map.version()
                && table.keyspace == map.keyspace()
                && let Some(counter) = table.by_index.get(shard_index)
            {
                counter.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        // A new map: build its table once (rare), then count.
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let by_index = map
            .shards()
            .iter()
            .map(|shard| {
                if let Some((_, counter)) = seen.iter().find(|(id, _)| *id == shard.id) {
                    return Arc::clone(counter);
                }
                let counter = Arc::new(AtomicU64::new(0));
                seen.push((shard.id.clone(), Arc::clone(&counter)));
                counter
            })
            .collect::<Vec<_>>();
        if let Some(counter) = by_index.get(shard_index) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        self.current.store(Arc::new(ShardTable {
            map_version: map.version(),
            keyspace: map.keyspace().to_owned(),
            by_index,
        }));
    }

    fn snapshot(&self) -> Vec<(String, u64)> {
        let seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        seen.iter()
            .map(|(id, counter)| (id.clone(), counter.load(Ordering::Relaxed)))
            .collect()
    }
}

/// The daemon's request metrics, shared by every request.
#[derive(Debug)]
pub struct Metrics {
    /// `[transport][operation][outcome]`, flattened.
    requests: Box<[AtomicU64]>,
    durations: [Histogram; 2],
    route_fenced: AtomicU64,
    shards: ShardCounters,
}

impl Default for Metrics {
    fn default() -> Self {
        let len = Surface::ALL.len() * OperationId::COUNT * CODES;
        Self {
            requests: (0..len).map(|_| AtomicU64::new(0)).collect(),
            durations: Default::default(),
            route_fenced: AtomicU64::new(0),
            shards: ShardCounters::default(),
        }
    }
}

impl Metrics {
    /// Counts one finished request.
    pub fn record(&self, transport: Surface, operation: OperationId, outcome: Outcome, elapsed: Duration) {
        let slot = (transport.index() * OperationId::COUNT + operation.index()) * CODES + outcome.index();
        if let Some(counter) = self.requests.get(slot) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        self.durations[transport.index()].observe(elapsed);
        if outcome == Outcome::Failed(ErrorKind::RouteFenced) {
            self.route_fenced.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a request routed to the shard at `shard_index` of `map`.
    pub fn count_shard_request(&self, map: &ShardMap, shard_index: usize) {
        self.shards.count(map, shard_index);
    }

    /// The requests counted so far for one transport, operation and outcome.
    pub fn requests(&self, transport: Surface, operation: OperationId, outcome: Outcome) -> u64 {
        let slot = (transport.index() * OperationId::COUNT + operation.index()) * CODES + outcome.index();
        self.requests
            .get(slot)
            .map_or(0, |counter| counter.load(Ordering::Relaxed))
    }
}

/// The Prometheus text of `metrics` plus the values read at scrape time.
pub fn render(metrics: &Metrics, values: ScrapeValues) -> String {
    encode::render(metrics, values)
}

/// `GET /metrics` for `state` (a daemon whose [`ServerConfig::metrics`] is on), in the
/// Prometheus text format. Scrapers need no API key: serve it on its own address.
///
/// [`ServerConfig::metrics`]: super::ServerConfig::metrics
pub fn routes(state: ServerState) -> axum::Router {
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let state = state.clone();
            async move {
                let Some(metrics) = state.metrics() else {
                    return (StatusCode::NOT_FOUND, "metrics are off on this daemon\n").into_response();
                };
                let values = state.scrape().await;
                let body = render(metrics, values);
                let content_type = HeaderValue::from_static(prometheus_client::encoding::prometheus_text::CONTENT_TYPE);
                ([(header::CONTENT_TYPE, content_type)], body).into_response()
            }
        }),
    )
}

/// Serves [`routes`] on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: ServerState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<()> {
    axum::serve(listener, routes(state))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| Error::Io {
            what: "the metrics listener".to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_have_distinct_slots_and_labels() {
        let mut labels: Vec<&str> = (0..CODES).map(Outcome::label).collect();
        assert_eq!(labels[Outcome::Ok.index()], "ok");
        assert_eq!(labels[Outcome::Rejected.index()], "rejected");
        assert_eq!(labels[Outcome::Failed(ErrorKind::RouteFenced).index()], "route_fenced");
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), CODES);
    }

    #[test]
    fn records_land_in_their_slot() {
        let metrics = Metrics::default();
        let op = OperationId::of("GetRow").unwrap();
        metrics.record(Surface::Grpc, op, Outcome::Ok, Duration::from_micros(70));
        metrics.record(
            Surface::Grpc,
            op,
            Outcome::Failed(ErrorKind::RouteFenced),
            Duration::from_secs(90),
        );
        assert_eq!(metrics.requests(Surface::Grpc, op, Outcome::Ok), 1);
        assert_eq!(metrics.requests(Surface::Rest, op, Outcome::Ok), 0);
        assert_eq!(metrics.route_fenced.load(Ordering::Relaxed), 1);
        assert_eq!(metrics.durations[1].buckets[1].load(Ordering::Relaxed), 1);
        assert_eq!(metrics.durations[1].buckets[BUCKETS.len()].load(Ordering::Relaxed), 1);
    }
}
