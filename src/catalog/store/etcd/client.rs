//! A small etcd v3 client over etcd's JSON gateway (`POST /v3/kv/range`, `/v3/kv/txn`,
//! `/v3/watch`, `/v3/lease/*`), on the HTTP client the crate already has: no protobuf compiler
//! and no second gRPC stack to build.
//!
//! Keys and values travel base64-encoded and 64-bit integers as strings, as the gateway's
//! mapping of the protobuf messages says. A request goes to the endpoint that answered last; an
//! endpoint that cannot be reached is skipped for the next one, so a cluster keeps serving while
//! any member does. When none answers, the error is [`Error::CatalogUnavailable`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value as Json, json};

use crate::catalog::EtcdAddress;
use crate::error::{Error, Result};

/// How long one unary call may take (a healthy cluster answers in milliseconds).
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// How long connecting to one endpoint may take before the next is tried.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// One key's stored value and revisions.
#[derive(Debug, Clone)]
pub(crate) struct Kv {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub mod_revision: i64,
}

/// A client of one etcd cluster.
#[derive(Debug, Clone)]
pub(crate) struct EtcdClient {
    http: reqwest::Client,
    endpoints: Arc<[String]>,
    preferred: Arc<AtomicUsize>,
}

impl EtcdClient {
    pub fn new(address: &EtcdAddress) -> Result<Self> {
        crate::transport::http::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|err| Error::Catalog {
                reason: format!("the HTTP client for etcd could not be built: {err}"),
            })?;
        Ok(Self {
            http,
            endpoints: address.endpoints().iter().map(|e| format!("http://{e}")).collect(),
            preferred: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The endpoints, for messages.
    pub fn describe(&self) -> String {
        self.endpoints
            .iter()
            .map(|e| e.trim_start_matches("http://"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Sends `body` to `path` on the first endpoint that answers, with the call timeout unless
    /// `streaming`. Returns the response of a 2xx answer.
    async fn send(&self, path: &str, body: &Json, streaming: bool) -> Result<reqwest::Response> {
        let count = self.endpoints.len();
        let first = self.preferred.load(Ordering::Relaxed) % count.max(1);
        let mut failures = Vec::new();
        for step in 0..count {
            let index = (first + step) % count;
            let mut request = self.http.post(format!("{}{path}", self.endpoints[index])).json(body);
            if !streaming {
                request = request.timeout(CALL_TIMEOUT);
            }
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    self.preferred.store(index, Ordering::Relaxed);
                    return Ok(response);
                }
                Ok(response) => {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    let problem = gateway_error(&text).unwrap_or_else(|| format!("HTTP {status}"));
                    // 503 and gRPC UNAVAILABLE (14): this member has no leader or is stopping.
                    if status == reqwest::StatusCode::SERVICE_UNAVAILABLE || problem_code(&text) == Some(14) {
                        failures.push(format!("{}: {problem}", self.endpoints[index]));
                        continue;
                    }
                    return Err(Error::Catalog {
                        reason: format!("etcd at {} refused {path}: {problem}", self.describe()),
                    });
                }
                Err(err) => failures.push(format!("{}: {}", self.endpoints[index], root_cause(&err))),
            }
        }
        Err(Error::CatalogUnavailable {
            reason: format!("no etcd endpoint answered ({})", failures.join("; ")),
        })
    }

    async fn call(&self, path: &str, body: Json) -> Result<Json> {
        let response = self.send(path, &body, false).await?;
        response.json::<Json>().await.map_err(|err| Error::CatalogUnavailable {
            reason: format!(
                "etcd at {} sent an unreadable answer to {path}: {}",
                self.describe(),
                root_cause(&err)
            ),
        })
    }

    /// The keys from `key` up to `range_end` (exclusive; `None` for `key` alone), in key order.
    pub async fn range(&self, key: &[u8], range_end: Option<&[u8]>) -> Result<Vec<Kv>> {
        let mut body = json!({ "key": STANDARD.encode(key) });
        if let Some(end) = range_end {
            body["range_end"] = json!(STANDARD.encode(end));
        }
        let answer = self.call("/v3/kv/range", body).await?;
        Ok(answer["kvs"]
            .as_array()
            .map(|kvs| kvs.iter().filter_map(kv).collect())
            .unwrap_or_default())
    }

    /// At most `limit` keys from `key` up to `range_end`, in key order, and whether more follow.
    pub async fn range_page(&self, key: &[u8], range_end: &[u8], limit: usize) -> Result<(Vec<Kv>, bool)> {
        let body = json!({
            "key": STANDARD.encode(key),
            "range_end": STANDARD.encode(range_end),
            "limit": limit.to_string(),
        });
        let answer = self.call("/v3/kv/range", body).await?;
        let kvs = answer["kvs"]
            .as_array()
            .map(|kvs| kvs.iter().filter_map(kv).collect())
            .unwrap_or_default();
        Ok((kvs, answer["more"].as_bool().unwrap_or(false)))
    }

    /// One transaction: when every comparison holds, the `success` operations run, atomically.
    /// Returns whether they did.
    pub async fn txn(&self, compare: Vec<Json>, success: Vec<Json>) -> Result<bool> {
        let answer = self
            .call("/v3/kv/txn", json!({ "compare": compare, "success": success }))
            .await?;
        Ok(answer["succeeded"].as_bool().unwrap_or(false))
    }

    /// A lease of `ttl` seconds; returns its id.
    pub async fn grant(&self, ttl: u64) -> Result<i64> {
        let answer = self.call("/v3/lease/grant", json!({ "TTL": ttl.to_string() })).await?;
        int(&answer["ID"]).ok_or_else(|| Error::CatalogUnavailable {
            reason: format!("etcd at {} granted a lease without an id", self.describe()),
        })
    }

    /// Renews lease `id`; returns its remaining time to live (0 or less: it expired).
    pub async fn keep_alive(&self, id: i64) -> Result<i64> {
        let answer = self
            .call("/v3/lease/keepalive", json!({ "ID": id.to_string() }))
            .await?;
        Ok(int(&answer["result"]["TTL"]).unwrap_or(0))
    }

    /// Ends lease `id` and deletes the keys attached to it.
    pub async fn revoke(&self, id: i64) -> Result<()> {
        self.call("/v3/lease/revoke", json!({ "ID": id.to_string() })).await?;
        Ok(())
    }

    /// Opens a watch of the keys from `key` up to `range_end`: a stream of JSON lines.
    pub async fn watch(&self, key: &[u8], range_end: &[u8], start_revision: Option<i64>) -> Result<reqwest::Response> {
        let mut request = json!({ "key": STANDARD.encode(key), "range_end": STANDARD.encode(range_end) });
        if let Some(start) = start_revision {
            request["start_revision"] = json!(start.to_string());
        }
        let body = json!({ "create_request": request });
        self.send("/v3/watch", &body, true).await
    }
}

/// A `put` operation of a transaction (attached to `lease` when given).
pub(crate) fn put(key: &[u8], value: &[u8], lease: Option<i64>) -> Json {
    let mut request = json!({ "key": STANDARD.encode(key), "value": STANDARD.encode(value) });
    if let Some(lease) = lease {
        request["lease"] = json!(lease.to_string());
    }
    json!({ "request_put": request })
}

/// A `delete` operation of a transaction, of one key.
pub(crate) fn delete(key: &[u8]) -> Json {
    json!({ "request_delete_range": { "key": STANDARD.encode(key) } })
}

/// A `delete` operation of a transaction, of the keys from `key` up to `range_end`.
pub(crate) fn delete_range(key: &[u8], range_end: &[u8]) -> Json {
    json!({ "request_delete_range": { "key": STANDARD.encode(key), "range_end": STANDARD.encode(range_end) } })
}

/// A comparison: `key`'s last modification is `revision` (0: the key does not exist).
pub(crate) fn modified_at(key: &[u8], revision: i64) -> Json {
    json!({ "key": STANDARD.encode(key), "target": "MOD", "result": "EQUAL", "mod_revision": revision.to_string() })
}

/// The end of the range of every key starting with `prefix`.
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// A 64-bit integer the gateway sent as a string (or, leniently, a number).
pub(crate) fn int(value: &Json) -> Option<i64> {
    match value {
        Json::String(text) => text.parse().ok(),
        Json::Number(number) => number.as_i64(),
        _ => None,
    }
}

fn kv(value: &Json) -> Option<Kv> {
    Some(Kv {
        key: STANDARD.decode(value["key"].as_str()?).ok()?,
        value: value["value"]
            .as_str()
            .map_or_else(|| Ok(Vec::new()), |v| STANDARD.decode(v))
            .ok()?,
        mod_revision: int(&value["mod_revision"]).unwrap_or(0),
    })
}

/// One event of a watch: a key put (with its new value) or deleted.
#[derive(Debug, Clone)]
pub(crate) struct WatchEvent {
    pub kv: Kv,
    pub deleted: bool,
}

/// One answer line of a watch: the store's revision when sent and the events it carries.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchAnswer {
    pub revision: i64,
    pub events: Vec<WatchEvent>,
}

/// The events of one watch answer line; `Err` with the gateway's reason when the line reports an
/// error or a canceled watch (for one started at a compacted revision, the reason says so).
pub(crate) fn watch_line(line: &[u8]) -> std::result::Result<WatchAnswer, String> {
    let value: Json = serde_json::from_slice(line).map_err(|err| format!("an unreadable watch answer: {err}"))?;
    if let Some(error) = value.get("error") {
        return Err(error["message"].as_str().unwrap_or("the watch failed").to_owned());
    }
    let result = &value["result"];
    if result["canceled"].as_bool() == Some(true) {
        if let Some(compacted) = int(&result["compact_revision"]).filter(|r| *r > 0) {
            return Err(format!(
                "the history it started from was compacted (up to revision {compacted})"
            ));
        }
        return Err(result["cancel_reason"]
            .as_str()
            .unwrap_or("the watch was canceled")
            .to_owned());
    }
    let events = result["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter_map(|event| {
                    Some(WatchEvent {
                        kv: kv(&event["kv"])?,
                        deleted: event["type"].as_str() == Some("DELETE"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(WatchAnswer {
        revision: int(&result["header"]["revision"]).unwrap_or(0),
        events,
    })
}

fn gateway_error(text: &str) -> Option<String> {
    let value: Json = serde_json::from_str(text).ok()?;
    value["message"].as_str().or(value["error"].as_str()).map(str::to_owned)
}

fn problem_code(text: &str) -> Option<i64> {
    let value: Json = serde_json::from_str(text).ok()?;
    value["code"].as_i64()
}

fn root_cause(err: &dyn std::error::Error) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends_cover_every_key_under_the_prefix() {
        assert_eq!(prefix_end(b"/shop/"), b"/shop0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff"), vec![0]);
    }

    #[test]
    fn watch_lines_give_revisions_or_the_reason() {
        let line = br#"{"result":{"header":{"revision":"4"},"events":[{"kv":{"key":"YQ==","value":"Yg==","mod_revision":"3"}},{"type":"DELETE","kv":{"key":"Yw==","mod_revision":"4"}}]}}"#;
        let answer = watch_line(line).unwrap();
        assert_eq!(answer.revision, 4);
        let events: Vec<(&[u8], &[u8], i64, bool)> = answer
            .events
            .iter()
            .map(|e| (e.kv.key.as_slice(), e.kv.value.as_slice(), e.kv.mod_revision, e.deleted))
            .collect();
        assert_eq!(
            events,
            vec![(&b"a"[..], &b"b"[..], 3, false), (&b"c"[..], &b""[..], 4, true)]
        );
        assert!(watch_line(br#"{"result":{"created":true}}"#).unwrap().events.is_empty());
        let compacted = br#"{"result":{"canceled":true,"compact_revision":"9"}}"#;
        assert!(watch_line(compacted).unwrap_err().contains("compacted"));
        assert!(
            watch_line(br#"{"error":{"message":"lost leader"}}"#)
                .unwrap_err()
                .contains("lost leader")
        );
        assert!(watch_line(b"garbage").is_err());
    }
}
