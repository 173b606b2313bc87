//! Answers decided before the request body is read reach HTTP/2 clients whole.
//!
//! The daemon refuses many requests without reading their body: a missing or unknown key, a
//! missing scope or route header, a body over the size limit, a busy daemon. Over HTTP/2 the
//! request body is the stream's receiving half, and dropping it unread makes the server reset
//! the stream (`RST_STREAM` with `NO_ERROR`, as RFC 9113 §8.1 allows) right after the answer.
//! Clients that are still sending the body then often lose the answer itself: curl reports a
//! stream error and no status, and other clients see a broken call instead of the 401 or 403
//! that names the problem.
//!
//! [`keep_unread_body`] wraps every HTTP/2 request body: when the body is dropped before its end,
//! what remains is read and discarded in the background, for at most [`DRAIN_TIME`] and a
//! budget of bytes, so the stream ends as the client closes its side and no reset follows the
//! answer. Past either bound the stream is reset as before. HTTP/1.1 is left to hyper, which
//! already reads or closes an unread body after the answer.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::Version;
use http_body::{Frame, SizeHint};

/// How long the rest of an unread body is read after the answer.
pub(super) const DRAIN_TIME: Duration = Duration::from_secs(5);

/// The fewest bytes of an unread body read after the answer, whatever the body limit.
const MIN_DRAIN_BYTES: usize = 1024 * 1024;

/// The bytes of an unread body read after the answer for a daemon whose body limit is
/// `body_limit`: twice the limit, so the body of a 413 is read too, and at least
/// [`MIN_DRAIN_BYTES`].
pub(super) fn drain_budget(body_limit: usize) -> usize {
    body_limit.saturating_mul(2).max(MIN_DRAIN_BYTES)
}

/// Wraps the body of an HTTP/2 `request` so that, if it is dropped before its end, the rest is
/// read and discarded (at most `budget` bytes, for at most [`DRAIN_TIME`]).
pub(super) fn keep_unread_body(request: Request, budget: usize) -> Request {
    if request.version() != Version::HTTP_2 || request.body().is_end_stream() {
        return request;
    }
    request.map(|body| {
        Body::new(DrainOnDrop {
            body: Some(body),
            budget,
        })
    })
}

/// A request body that reads its own rest in the background when dropped unfinished.
struct DrainOnDrop {
    body: Option<Body>,
    budget: usize,
}

impl HttpBody for DrainOnDrop {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        match self.body.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.body.as_ref().map(HttpBody::size_hint).unwrap_or_default()
    }
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        let Some(body) = self.body.take() else { return };
        if body.is_end_stream() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let budget = self.budget;
        runtime.spawn(async move {
            let drained = tokio::time::timeout(DRAIN_TIME, drain(body, budget)).await;
            if drained.is_err() {
                tracing::debug!("stopped reading an unread request body at its time limit");
            }
        });
    }
}

/// Reads `body` to its end, or until more than `budget` bytes came or it fails.
async fn drain(mut body: Body, budget: usize) {
    let mut read = 0_usize;
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let Ok(frame) = frame else { return };
        if let Some(data) = frame.data_ref() {
            read = read.saturating_add(data.len());
            if read > budget {
                tracing::debug!(budget, "stopped reading an unread request body at its byte budget");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_covers_a_body_over_the_limit() {
        assert_eq!(drain_budget(8 * 1024 * 1024), 16 * 1024 * 1024);
        assert_eq!(drain_budget(10), MIN_DRAIN_BYTES);
        assert_eq!(drain_budget(usize::MAX), usize::MAX);
    }

    #[tokio::test]
    async fn a_dropped_http2_body_is_read_to_its_end() {
        let (sender, receiver) = tokio::sync::oneshot::channel::<()>();
        let stream = futures_util::stream::once(async move {
            let _ = sender.send(());
            Ok::<_, std::io::Error>(Bytes::from_static(b"rest"))
        });
        let mut request = Request::new(Body::from_stream(stream));
        *request.version_mut() = Version::HTTP_2;
        drop(keep_unread_body(request, 1024));
        tokio::time::timeout(DRAIN_TIME, receiver)
            .await
            .expect("the body is read after it was dropped")
            .expect("the body's stream ran");
    }
}
