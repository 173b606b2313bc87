//! Per-request counters: what the daemon reports instead of a log line per request.
//!
//! Each REST request and gRPC call adds one to its surface and, when it failed, to the client
//! errors, the server errors or the unavailable ones (a store or shard out of reach, or a daemon
//! too busy), as [`Outcome::of_kind`] classifies it. Refusals before the handler (a missing or
//! wrong API key) count like any other failure. The daemon logs the totals at `info` once a minute while they change, and once
//! at shutdown; the per-request lines are `debug` events (`RUST_LOG=shardlite=debug`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::ErrorKind;

/// The counters (relaxed atomics: totals, not a synchronisation point).
#[derive(Debug, Default)]
pub struct RequestCounters {
    rest: AtomicU64,
    grpc: AtomicU64,
    client_errors: AtomicU64,
    server_errors: AtomicU64,
    unavailable: AtomicU64,
}

/// How a request ended, for [`RequestCounters::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded.
    Ok,
    /// The caller's mistake or a refusal (4xx, or a gRPC status other than an internal one).
    ClientError,
    /// The daemon's own failure (5xx, gRPC `INTERNAL`).
    ServerError,
    /// Something the daemon depends on was out of reach (the catalog's store, a shard), or the
    /// daemon was too busy: 503, gRPC `UNAVAILABLE`. Neither the caller's mistake nor a bug.
    Unavailable,
}

impl Outcome {
    /// How a request that failed with an error of `kind` is counted, on every transport.
    pub fn of_kind(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Internal => Self::ServerError,
            ErrorKind::CatalogUnavailable | ErrorKind::Unavailable | ErrorKind::Busy => Self::Unavailable,
            _ => Self::ClientError,
        }
    }
}

/// Which surface served a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// REST (including `/admin` and `/openapi.json`).
    Rest,
    /// gRPC.
    Grpc,
}

impl Surface {
    /// Every surface, in the order of the metrics' tables.
    pub(super) const ALL: [Surface; 2] = [Surface::Rest, Surface::Grpc];

    /// The surface's row in the metrics' tables.
    pub(super) fn index(self) -> usize {
        match self {
            Self::Rest => 0,
            Self::Grpc => 1,
        }
    }

    /// The metrics' `transport` label.
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Rest => "rest",
            Self::Grpc => "grpc",
        }
    }
}

/// A snapshot of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// REST requests served.
    pub rest: u64,
    /// gRPC calls served.
    pub grpc: u64,
    /// Requests that ended in a client error.
    pub client_errors: u64,
    /// Requests that ended in a server error.
    pub server_errors: u64,
    /// Requests that failed because something was out of reach or the daemon was busy.
    pub unavailable: u64,
}

impl RequestCounts {
    /// REST and gRPC together.
    pub fn total(&self) -> u64 {
        self.rest + self.grpc
    }
}

impl std::fmt::Display for RequestCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} request(s): {} REST, {} gRPC; {} client error(s), {} server error(s)",
            self.total(),
            self.rest,
            self.grpc,
            self.client_errors,
            self.server_errors
        )?;
        if self.unavailable > 0 {
            write!(
                f,
                ", {} unavailable (catalog or shard out of reach, or busy)",
                self.unavailable
            )?;
        }
        Ok(())
    }
}

impl RequestCounters {
    /// Counts one request.
    pub fn record(&self, surface: Surface, outcome: Outcome) {
        match surface {
            Surface::Rest => &self.rest,
            Surface::Grpc => &self.grpc,
        }
        .fetch_add(1, Ordering::Relaxed);
        match outcome {
            Outcome::Ok => {}
            Outcome::ClientError => {
                self.client_errors.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::ServerError => {
                self.server_errors.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Unavailable => {
                self.unavailable.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The totals so far.
    pub fn snapshot(&self) -> RequestCounts {
        RequestCounts {
            rest: self.rest.load(Ordering::Relaxed),
            grpc: self.grpc.load(Ordering::Relaxed),
            client_errors: self.client_errors.load(Ordering::Relaxed),
            server_errors: self.server_errors.load(Ordering::Relaxed),
            unavailable: self.unavailable.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_surface_and_outcome() {
        let counters = RequestCounters::default();
        counters.record(Surface::Rest, Outcome::Ok);
        counters.record(Surface::Rest, Outcome::ClientError);
        counters.record(Surface::Grpc, Outcome::ServerError);
        let counts = counters.snapshot();
        assert_eq!(
            counts,
            RequestCounts {
                rest: 2,
                grpc: 1,
                client_errors: 1,
                server_errors: 1,
                unavailable: 0,
            }
        );
        assert_eq!(
            counts.to_string(),
            "3 request(s): 2 REST, 1 gRPC; 1 client error(s), 1 server error(s)"
        );
    }

    #[test]
    fn catalog_outages_count_as_unavailable_not_as_client_errors() {
        assert_eq!(Outcome::of_kind(ErrorKind::CatalogUnavailable), Outcome::Unavailable);
        assert_eq!(Outcome::of_kind(ErrorKind::Unavailable), Outcome::Unavailable);
        assert_eq!(Outcome::of_kind(ErrorKind::Internal), Outcome::ServerError);
        assert_eq!(Outcome::of_kind(ErrorKind::Unauthenticated), Outcome::ClientError);
        let counters = RequestCounters::default();
        counters.record(Surface::Grpc, Outcome::of_kind(ErrorKind::CatalogUnavailable));
        assert_eq!(
            counters.snapshot().to_string(),
            "1 request(s): 0 REST, 1 gRPC; 0 client error(s), 0 server error(s), 1 unavailable (catalog or shard \
             out of reach, or busy)"
        );
    }
}
