//! The daemon's request limits, as one tower layer around every REST and gRPC route.
//!
//! - **Concurrency.** At most [`ServerConfig::max_concurrent_requests`] requests are served at
//!   once. One more is answered at once with `busy` (REST: 503 with `Retry-After`; gRPC:
//!   `UNAVAILABLE` with the `shardlite-error-code: busy` trailer) instead of waiting in a queue
//!   that grows with the load. A counter is all it takes: nothing waits, so nothing needs a
//!   waiter list or a lock.
//! - **Time.** A request is answered `request_timeout` (REST: 408; gRPC: `DEADLINE_EXCEEDED`)
//!   once it has run for [`ServerConfig::request_timeout`], or for the deadline a gRPC caller
//!   sent in `grpc-timeout` when that is shorter. The handler's future is then dropped, which
//!   skips its engine job if it has not started and interrupts the statement if it has; its slot
//!   is free again at once.
//!
//! A client that goes away has the same effect as a timeout: the server drops the handler's
//! future, and the engine stops the work.
//!
//! [`ServerConfig::max_concurrent_requests`]: crate::server::ServerConfig::max_concurrent_requests
//! [`ServerConfig::request_timeout`]: crate::server::ServerConfig::request_timeout

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower::{Layer, Service};

use super::ServerConfig;
use super::grpc::status_from_error;
use super::rest::ApiError;
use crate::error::Error;

/// The header in which a gRPC caller sends its deadline.
const GRPC_TIMEOUT: &str = "grpc-timeout";

/// Applies the concurrency limit and the request timeout of a [`ServerConfig`] to every route.
#[derive(Debug, Clone)]
pub(crate) struct RequestLimitLayer {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    in_progress: AtomicUsize,
    max_in_progress: usize,
    timeout: Option<Duration>,
}

impl RequestLimitLayer {
    pub(crate) fn new(config: &ServerConfig) -> Self {
        Self {
            shared: Arc::new(Shared {
                in_progress: AtomicUsize::new(0),
                max_in_progress: config.max_concurrent_requests.max(1),
                timeout: config.request_timeout.filter(|limit| !limit.is_zero()),
            }),
        }
    }
}

impl<S> Layer<S> for RequestLimitLayer {
    type Service = RequestLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestLimit {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service [`RequestLimitLayer`] wraps a route in.
#[derive(Debug, Clone)]
pub(crate) struct RequestLimit<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> Service<Request> for RequestLimit<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = LimitedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let grpc = is_grpc(request.headers());
        let Some(slot) = Slot::take(&self.shared) else {
            tracing::debug!(
                limit = self.shared.max_in_progress,
                "request refused: the daemon is at its concurrency limit"
            );
            let busy = Error::DaemonBusy {
                limit: self.shared.max_in_progress,
            };
            return LimitedFuture::Answered {
                response: Some(error_response(busy, grpc)),
            };
        };
        let caller_deadline = if grpc { grpc_timeout(request.headers()) } else { None };
        let limit = match (self.shared.timeout, caller_deadline) {
            (Some(ours), Some(theirs)) => Some(ours.min(theirs)),
            (ours, theirs) => ours.or(theirs),
        };
        LimitedFuture::Running {
            inner: self.inner.call(request),
            deadline: limit.map(tokio::time::sleep),
            limit: limit.unwrap_or_default(),
            grpc,
            _slot: slot,
        }
    }
}

pin_project! {
    /// The answer of a [`RequestLimit`]: the route's own, `busy` at once, or `request_timeout`.
    #[project = LimitedProjection]
    pub(crate) enum LimitedFuture<F> {
        /// Refused before the route ran.
        Answered { response: Option<Response> },
        /// The route runs, holding a slot, until it answers or the deadline passes.
        Running {
            #[pin]
            inner: F,
            #[pin]
            deadline: Option<Sleep>,
            limit: Duration,
            grpc: bool,
            _slot: Slot,
        },
        /// Answered; the route's future and slot are gone.
        Done,
    }
}

impl<F> Future for LimitedFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let response = match self.as_mut().project() {
            LimitedProjection::Answered { response } => response.take(),
            LimitedProjection::Running {
                inner,
                deadline,
                limit,
                grpc,
                ..
            } => {
                if let Poll::Ready(answer) = inner.poll(cx) {
                    self.set(Self::Done);
                    return Poll::Ready(answer);
                }
                match deadline.as_pin_mut().map(|deadline| deadline.poll(cx)) {
                    Some(Poll::Ready(())) => {
                        let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
                        tracing::info!(limit_ms, "request stopped at its time limit");
                        Some(error_response(Error::RequestTimeout { limit_ms }, *grpc))
                    }
                    _ => return Poll::Pending,
                }
            }
            LimitedProjection::Done => None,
        };
        // Dropping the route's future now cancels its engine work and frees its slot at once.
        self.set(Self::Done);
        match response {
            Some(response) => Poll::Ready(Ok(response)),
            None => panic!("a request-limit future was polled after it completed"),
        }
    }
}

/// A place among the requests in progress, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot(Arc<Shared>);

impl Slot {
    fn take(shared: &Arc<Shared>) -> Option<Self> {
        shared
            .in_progress
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < shared.max_in_progress).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(Arc::clone(shared)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.in_progress.fetch_sub(1, Ordering::AcqRel);
    }
}

fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/grpc"))
}

fn error_response(err: Error, grpc: bool) -> Response {
    if grpc {
        status_from_error(&err).into_http::<axum::body::Body>().into_response()
    } else {
        ApiError::Data(err).into_response()
    }
}

/// The deadline in a `grpc-timeout` header: at most 8 digits and a unit (`H`, `M`, `S`, `m`,
/// `u`, `n`). A malformed value is ignored, as if none had been sent.
fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(GRPC_TIMEOUT)?.as_bytes();
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let amount: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(amount * 60 * 60),
        b'M' => Duration::from_secs(amount * 60),
        b'S' => Duration::from_secs(amount),
        b'm' => Duration::from_millis(amount),
        b'u' => Duration::from_micros(amount),
        b'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn deadline(value: &'static str) -> Option<Duration> {
        let mut headers = HeaderMap::new();
        headers.insert(GRPC_TIMEOUT, HeaderValue::from_static(value));
        grpc_timeout(&headers)
    }

    #[test]
    fn grpc_timeouts_parse_every_unit_and_ignore_malformed_values() {
        assert_eq!(deadline("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(deadline("3M"), Some(Duration::from_secs(180)));
        assert_eq!(deadline("10S"), Some(Duration::from_secs(10)));
        assert_eq!(deadline("250m"), Some(Duration::from_millis(250)));
        assert_eq!(deadline("99999999u"), Some(Duration::from_micros(99_999_999)));
        assert_eq!(deadline("5n"), Some(Duration::from_nanos(5)));
        for bad in ["", "S", "10", "10s", "123456789S", "-1S", "1.5S", "１S"] {
            let mut headers = HeaderMap::new();
            if let Ok(value) = HeaderValue::from_str(bad) {
                headers.insert(GRPC_TIMEOUT, value);
            }
            assert_eq!(grpc_timeout(&headers), None, "{bad:?}");
        }
        assert_eq!(grpc_timeout(&HeaderMap::new()), None);
    }

    #[test]
    fn slots_stop_at_the_limit_and_come_back_when_dropped() {
        let layer = RequestLimitLayer::new(&ServerConfig {
            max_concurrent_requests: 2,
            ..ServerConfig::default()
        });
        let first = Slot::take(&layer.shared).expect("a slot");
        let second = Slot::take(&layer.shared).expect("a slot");
        assert!(Slot::take(&layer.shared).is_none());
        drop(first);
        let third = Slot::take(&layer.shared).expect("a slot again");
        assert!(Slot::take(&layer.shared).is_none());
        drop((second, third));
        assert_eq!(layer.shared.in_progress.load(Ordering::Acquire), 0);
    }
}
