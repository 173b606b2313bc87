//! Request extractors whose rejections are [`ApiError`]s, so malformed bodies, query strings and
//! paths get the same problem body as every other error, and the route of a request.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::data::DirectoryLookup;
use crate::error::Error;
use crate::routing::RouteContext;
use crate::server::lookup;
use crate::server::{KEYSPACE_HEADER, SHARD_KEY_HEADER, Target};
use crate::wire::{DIRECTORY_HEADER, LOOKUP_KEY_HEADER, SHARD_HEADER};

/// A JSON request body (`Content-Type: application/json`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let axum::Json(value) = axum::Json::<T>::from_request(req, state).await?;
        Ok(Self(value))
    }
}

/// A JSON request body that may be left out: an empty body without a `Content-Type` is
/// `T::default()`; a body with content is read as [`Json`] reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct OptionalJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Default> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if req.headers().contains_key(axum::http::header::CONTENT_TYPE) {
            let Json(value) = Json::<T>::from_request(req, state).await?;
            return Ok(Self(value));
        }
        let body = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|_| ApiError::PayloadTooLarge)?;
        if body.is_empty() {
            Ok(Self(T::default()))
        } else {
            Err(ApiError::UnsupportedMediaType)
        }
    }
}

/// A deserialised query string.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Query(value) = axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// Percent-decoded path parameters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(value) = axum::extract::Path::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// What a request addresses: its route, from the `X-CSharpDB-Keyspace` and
/// `X-CSharpDB-Shard-Key` headers (`None` when neither is sent), and its data-host shard, from
/// the `X-Shardlite-Shard` header.
impl<S: Send + Sync> FromRequestParts<S> for Target {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // The route middleware has usually parsed the headers already; a handler takes its
        // target once, so it is moved out rather than copied.
        if let Some(target) = parts.extensions.remove::<Target>() {
            return Ok(target);
        }
        target_from_headers(&parts.headers)
    }
}

/// Reads the route headers and the data-host shard header. Unlike a blank route header, a
/// blank shard header is refused: it names no shard, and leaving it out says so.
pub fn target_from_headers(headers: &HeaderMap) -> Result<Target, ApiError> {
    let shard = match headers.get(SHARD_HEADER) {
        None => None,
        Some(value) => Some(
            std::str::from_utf8(value.as_bytes())
                .ok()
                .map(str::trim)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| {
                    ApiError::Data(Error::invalid_argument(
                        "shard header",
                        format!("the {SHARD_HEADER} header is blank or not UTF-8: name a shard, or leave it out"),
                    ))
                })?
                .to_owned(),
        ),
    };
    Ok(Target {
        route: route_from_headers(headers)?,
        shard,
    })
}

/// Reads the route headers. A blank header counts as absent; exactly one of the two is an error
/// naming the missing one; a value that is not UTF-8 is an error naming its header.
pub fn route_from_headers(headers: &HeaderMap) -> Result<Option<RouteContext>, ApiError> {
    let keyspace = header_text(headers, KEYSPACE_HEADER, "route headers")?;
    let key = header_text(headers, SHARD_KEY_HEADER, "route headers")?;
    match (keyspace, key) {
        (None, None) => Ok(None),
        (Some(keyspace), Some(key)) => Ok(Some(RouteContext::new(keyspace, key)?)),
        (Some(_), None) => Err(half_route(SHARD_KEY_HEADER, KEYSPACE_HEADER)),
        (None, Some(_)) => Err(half_route(KEYSPACE_HEADER, SHARD_KEY_HEADER)),
    }
}

/// Reads the directory headers that bind a request by a lookup key instead of a route (see
/// [`lookup`]).
pub fn lookup_from_headers(headers: &HeaderMap) -> Result<Option<DirectoryLookup>, ApiError> {
    let directory = header_text(headers, DIRECTORY_HEADER, "directory headers")?;
    let key = header_text(headers, LOOKUP_KEY_HEADER, "directory headers")?;
    Ok(lookup::from_pair(
        directory,
        key,
        (DIRECTORY_HEADER, LOOKUP_KEY_HEADER),
        "directory headers",
    )?)
}

fn half_route(missing: &str, present: &str) -> ApiError {
    ApiError::Data(Error::InvalidArgument {
        name: "route headers",
        reason: format!(
            "the {missing} header is missing: a route needs both {KEYSPACE_HEADER} and {SHARD_KEY_HEADER} \
             (only {present} was sent)"
        )
        .into(),
    })
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str, what: &'static str) -> Result<Option<&'a str>, ApiError> {
    let Some(value) = headers.get(name) else {
        return Ok(None);
    };
    let text = std::str::from_utf8(value.as_bytes()).map_err(|_| {
        ApiError::Data(Error::InvalidArgument {
            name: what,
            reason: format!("the {name} header is not valid UTF-8").into(),
        })
    })?;
    Ok(Some(text).filter(|t| !t.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &[u8])]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_bytes(value).unwrap());
        }
        map
    }

    #[test]
    fn both_headers_make_a_trimmed_route() {
        let route = route_from_headers(&headers(&[
            ("x-csharpdb-keyspace", b" tenants "),
            ("x-csharpdb-shard-key", "t\u{e9}nant-\u{e9}".as_bytes()),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(route.keyspace(), "tenants");
        assert_eq!(route.key(), "t\u{e9}nant-\u{e9}");
    }

    #[test]
    fn blank_headers_count_as_absent() {
        let none = route_from_headers(&headers(&[
            ("x-csharpdb-keyspace", b"  "),
            ("x-csharpdb-shard-key", b""),
        ]));
        assert_eq!(none.unwrap(), None);
    }

    #[test]
    fn one_header_names_the_missing_one() {
        let err = route_from_headers(&headers(&[
            ("x-csharpdb-keyspace", b"tenants"),
            ("x-csharpdb-shard-key", b" "),
        ]))
        .unwrap_err();
        let ApiError::Data(err) = err else {
            panic!("unexpected {err:?}")
        };
        assert!(
            err.to_string().contains("X-CSharpDB-Shard-Key header is missing"),
            "{err}"
        );
    }

    #[test]
    fn invalid_utf8_is_refused() {
        let err = route_from_headers(&headers(&[
            ("x-csharpdb-keyspace", b"tenants"),
            ("x-csharpdb-shard-key", b"\xff\xfe"),
        ]))
        .unwrap_err();
        let ApiError::Data(err) = err else {
            panic!("unexpected {err:?}")
        };
        assert!(err.to_string().contains("not valid UTF-8"), "{err}");
    }
}
