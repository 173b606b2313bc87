//! The metrics as one `prometheus-client` collector, encoded in the Prometheus text format.

use std::sync::atomic::Ordering;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::{BUCKETS, CODES, Metrics, Outcome, ScrapeValues, Surface};
use crate::server::operations::OperationId;

/// One transport's latency histogram: its label, the sum in seconds, the count, and the
/// non-cumulative buckets (upper bound, count).
type Latencies = (&'static str, f64, u64, Vec<(f64, u64)>);

/// A snapshot of the counters and the scraped values, for one encoding.
#[derive(Debug)]
struct Snapshot {
    /// `(transport, operation, code, count)` for every non-zero slot.
    requests: Vec<(&'static str, &'static str, &'static str, u64)>,
    durations: Vec<Latencies>,
    route_fenced: u64,
    shard_requests: Vec<(String, u64)>,
    values: ScrapeValues,
}

pub(super) fn render(metrics: &Metrics, values: ScrapeValues) -> String {
    let mut requests = Vec::new();
    for transport in Surface::ALL {
        for operation in 0..OperationId::COUNT {
            for code in 0..CODES {
                let slot = (transport.index() * OperationId::COUNT + operation) * CODES + code;
                let count = metrics.requests[slot].load(Ordering::Relaxed);
                if count > 0 {
                    let name = super::super::operations::OPERATIONS
                        .get(operation)
                        .map_or("other", |(name, _)| name);
                    requests.push((transport.label(), name, Outcome::label(code), count));
                }
            }
        }
    }
    let durations = Surface::ALL
        .iter()
        .map(|transport| {
            let histogram = &metrics.durations[transport.index()];
            let counts: Vec<u64> = histogram.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
            let buckets = BUCKETS
                .iter()
                .copied()
                .chain([f64::INFINITY])
                .zip(counts.iter().copied())
                .collect();
            // Nanoseconds to seconds; precision past 2^53 ns (about 104 days of latency) is moot.
            #[allow(clippy::cast_precision_loss)]
            let sum = histogram.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
            (transport.label(), sum, counts.iter().sum(), buckets)
        })
        .collect();
    let snapshot = Snapshot {
        requests,
        durations,
        route_fenced: metrics.route_fenced.load(Ordering::Relaxed),
        shard_requests: metrics.shards.snapshot(),
        values,
    };
    let mut registry = Registry::default();
    registry.register_collector(Box::new(snapshot));
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry);
    text
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "shardlite_requests",
            "Requests served, by transport, operation and outcome code",
            None,
            MetricType::Counter,
        )?;
        for (transport, operation, code, count) in &self.requests {
            let labels = [("transport", *transport), ("operation", *operation), ("code", *code)];
            ConstCounter::new(*count).encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "shardlite_request_duration_seconds",
            "Time from a request's arrival to its answer",
            None,
            MetricType::Histogram,
        )?;
        for (transport, sum, count, buckets) in &self.durations {
            let labels = [("transport", *transport)];
            family
                .encode_family(&labels)?
                .encode_histogram::<prometheus_client::encoding::NoLabelSet>(*sum, *count, buckets, None)?;
        }

        let mut family = encoder.encode_descriptor(
            "shardlite_shard_requests",
            "Requests routed to each shard by their route",
            None,
            MetricType::Counter,
        )?;
        for (shard, count) in &self.shard_requests {
            let labels = [("shard", shard.as_str())];
            ConstCounter::new(*count).encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "shardlite_open_transactions",
            "Remote transactions open on each shard",
            None,
            MetricType::Gauge,
        )?;
        for shard in &self.values.shards {
            if let Some(open) = shard.open_transactions {
                let labels = [("shard", shard.shard.as_str())];
                ConstGauge::new(gauge(open)).encode(family.encode_family(&labels)?)?;
            }
        }

        let mut family = encoder.encode_descriptor(
            "shardlite_engine_queue_depth",
            "Jobs waiting for each shard's connections",
            None,
            MetricType::Gauge,
        )?;
        for shard in &self.values.shards {
            if let Some(depth) = shard.queue_depth {
                let labels = [("shard", shard.shard.as_str())];
                ConstGauge::new(gauge(depth)).encode(family.encode_family(&labels)?)?;
            }
        }

        if let Some(open) = self.values.open_shards {
            let metric = ConstGauge::new(gauge(open));
            metric.encode(encoder.encode_descriptor(
                "shardlite_open_shards",
                "Shards with an open client ready to serve",
                None,
                metric.metric_type(),
            )?)?;
        }

        let metric = ConstCounter::new(self.route_fenced);
        metric.encode(encoder.encode_descriptor(
            "shardlite_route_fenced",
            "Writes refused because a data migration fenced their route",
            None,
            metric.metric_type(),
        )?)?;

        if let Some(version) = self.values.map_version {
            let metric = ConstGauge::new(gauge(version));
            metric.encode(encoder.encode_descriptor(
                "shardlite_map_version",
                "Version of the active shard map",
                None,
                metric.metric_type(),
            )?)?;
        }

        if let Some(rows) = self.values.migration_rows_copied {
            let metric = ConstCounter::new(rows);
            metric.encode(encoder.encode_descriptor(
                "shardlite_migration_rows_copied",
                "Rows copied by the data migrations recorded in the catalog",
                None,
                metric.metric_type(),
            )?)?;
        }
        if let Some(unresolved) = self.values.atomic_unresolved {
            let metric = ConstGauge::new(gauge(unresolved));
            metric.encode(encoder.encode_descriptor(
                "shardlite_atomic_unresolved",
                "Atomic transactions not yet finished on every participant, in the open shard files",
                None,
                metric.metric_type(),
            )?)?;
        }
        if let Some(seconds) = self.values.backup_last_success {
            let metric = ConstGauge::new(gauge(seconds));
            metric.encode(encoder.encode_descriptor(
                "shardlite_backup_last_success_timestamp_seconds",
                "When the newest backup set in the daemon's backup place was published (Unix seconds; 0 before the first)",
                None,
                metric.metric_type(),
            )?)?;
        }
        if let Some(lags) = &self.values.archive_lag_ms {
            let mut family = encoder.encode_descriptor(
                "shardlite_archive_lag_seconds",
                "How long the oldest transaction of each written shard not yet in the point-in-time archive has waited (0 when it holds every one; shard=\"(master)\" for the master catalog)",
                None,
                MetricType::Gauge,
            )?;
            for (shard, ms) in lags {
                #[allow(clippy::cast_precision_loss)]
                let seconds = *ms as f64 / 1000.0;
                ConstGauge::new(seconds).encode(family.encode_family(&[("shard", shard.as_str())])?)?;
            }
        }
        Ok(())
    }
}

fn gauge(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
