//! API keys with scopes: the `--api-keys FILE` format, and who a presented key is.
//!
//! The file is a JSON array, one object per key:
//!
//! ```json
//! [
//!   {"name": "dashboard", "keySha256": "9f86d0…", "scopes": ["read"], "keyspaces": ["*"]},
//!   {"name": "orders-app", "key": "s3cret", "scopes": ["read", "write"], "keyspaces": ["orders"]},
//!   {"name": "operator", "key": "0ther", "scopes": ["read", "write", "admin"], "keyspaces": ["*"]}
//! ]
//! ```
//!
//! `key` is the key itself, `keySha256` its SHA-256 in hex (so the file need not hold the key);
//! an entry has exactly one of them. Scopes are independent (`admin` does not imply `read`): a
//! key holds the scopes listed. `keyspaces` is `["*"]` or the keyspaces the key may use.
//!
//! A presented key is hashed once and compared with every configured digest in constant time
//! ([`KeyRing::authenticate`]), so neither timing nor the order of the file tells anything about
//! the keys. Only a key's `name` ever appears in logs, errors or `Debug` output.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};

use crate::error::{Error, PermissionDenial, Result};
use crate::map::Secret;

/// The message of a request or call refused for a missing or wrong API key: it says where the
/// key goes (`header`, the daemon's `--api-key-header`), on every transport and in a connection
/// string, since a caller who sent `Authorization: Bearer …` needs to learn it.
pub fn refused_key_message(header: &str) -> String {
    format!(
        "a valid API key is required: send it in the '{header}' header (gRPC metadata '{}'), or add \
         'Api Key=KEY' to the connection string",
        header.to_ascii_lowercase()
    )
}

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Queries, reads, read-only fan-out, merged reads and status.
    Read,
    /// Everything that changes data, and transactions.
    Write,
    /// The catalog, data migrations, schema migrations and `exec-all`.
    Admin,
}

impl Scope {
    /// Every scope.
    pub const ALL: [Scope; 3] = [Scope::Read, Scope::Write, Scope::Admin];

    /// The scope's name in the key file and in errors.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Admin => "admin",
        }
    }

    fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Write => 2,
            Self::Admin => 4,
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|scope| scope.as_str() == text)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The keyspaces a key may use.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Keyspaces {
    All,
    Only(Vec<String>),
}

/// Who presented a key: its name, scopes and keyspaces (never the key).
#[derive(Clone, PartialEq, Eq)]
pub struct Caller {
    name: String,
    scopes: u8,
    keyspaces: Keyspaces,
}

impl Caller {
    /// A key with every scope for every keyspace (what `--api-key KEY` configures).
    fn everything(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            scopes: Scope::ALL
                .iter()
                .map(|scope| scope.bit())
                .fold(0, |bits, bit| bits | bit),
            keyspaces: Keyspaces::All,
        }
    }

    /// The key's name from the key file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the key holds `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes & scope.bit() != 0
    }

    /// Allows an operation needing `scope` on `keyspace` (`None`: a daemon serving a plain
    /// database, which only keys for every keyspace may use), or says why not.
    pub fn permit(&self, scope: Scope, keyspace: impl FnOnce() -> Option<String>) -> Result<()> {
        let denied = |keyspace| {
            Error::from(PermissionDenial {
                key_name: self.name.clone(),
                scope: scope.as_str(),
                keyspace,
            })
        };
        if !self.has(scope) {
            return Err(denied(None));
        }
        match &self.keyspaces {
            Keyspaces::All => Ok(()),
            Keyspaces::Only(allowed) => match keyspace() {
                Some(keyspace) if allowed.iter().any(|name| name.eq_ignore_ascii_case(&keyspace)) => Ok(()),
                Some(keyspace) => Err(denied(Some(keyspace))),
                None => Err(denied(Some("(a plain database, without keyspace)".to_owned()))),
            },
        }
    }
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scopes: Vec<&str> = Scope::ALL
            .iter()
            .filter(|scope| self.has(**scope))
            .map(|scope| scope.as_str())
            .collect();
        f.debug_struct("Caller")
            .field("name", &self.name)
            .field("scopes", &scopes)
            .field("keyspaces", &self.keyspaces)
            .finish()
    }
}

/// Who a request is from, once its key (if the daemon requires one) was accepted.
#[derive(Debug, Clone)]
pub enum Access {
    /// The daemon requires no key: every operation is allowed.
    Open,
    /// A configured key.
    Key(Arc<Caller>),
}

impl Access {
    /// Allows an operation needing `scope` (`None`: any accepted key) on `keyspace`, or says
    /// why not (see [`Caller::permit`]).
    pub fn permit(&self, scope: Option<Scope>, keyspace: impl FnOnce() -> Option<String>) -> Result<()> {
        match (self, scope) {
            (Self::Open, _) | (Self::Key(_), None) => Ok(()),
            (Self::Key(caller), Some(scope)) => caller.permit(scope, keyspace),
        }
    }

    /// The key's name, for the log of admin actions (`None` on a daemon without keys).
    pub fn key_name(&self) -> Option<&str> {
        match self {
            Self::Open => None,
            Self::Key(caller) => Some(caller.name()),
        }
    }
}

/// The configured keys: SHA-256 digests and who each stands for. Cheap to clone.
#[derive(Clone)]
pub struct KeyRing {
    keys: Arc<[([u8; 32], Arc<Caller>)]>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|(_, caller)| caller))
            .finish()
    }
}

/// One entry of the key file, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KeyEntry {
    name: String,
    #[serde(default)]
    key: Option<Secret>,
    #[serde(default)]
    key_sha256: Option<String>,
    scopes: Vec<String>,
    keyspaces: Vec<String>,
}

impl KeyRing {
    /// One key with every scope for every keyspace, named `api-key`: what `--api-key KEY`
    /// configures.
    pub fn single(key: &Secret) -> Self {
        let digest: [u8; 32] = Sha256::digest(key.expose().as_bytes()).into();
        Self {
            keys: Arc::from(vec![(digest, Arc::new(Caller::everything("api-key")))]),
        }
    }

    /// Reads and checks a key file; the error names the file and the entry at fault.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: format!("API key file '{}'", path.display()),
            source,
        })?;
        Self::parse(&text)
            .map_err(|reason| Error::invalid_argument("API key file", format!("'{}': {reason}", path.display())))
    }

    /// Parses the JSON of a key file; the error names the entry at fault and what is wrong.
    pub fn parse(json: &str) -> std::result::Result<Self, String> {
        let entries: Vec<KeyEntry> = serde_json::from_str(json).map_err(|err| {
            format!("expected a JSON array of {{\"name\", \"key\" | \"keySha256\", \"scopes\", \"keyspaces\"}}: {err}")
        })?;
        if entries.is_empty() {
            return Err("the file lists no keys; every request would be refused".to_owned());
        }
        let mut keys: Vec<([u8; 32], Arc<Caller>)> = Vec::with_capacity(entries.len());
        for (index, entry) in entries.into_iter().enumerate() {
            let at = |reason: String| format!("entry {} ('{}'): {reason}", index + 1, entry.name);
            let (digest, caller) = entry_to_key(&entry).map_err(at)?;
            if keys.iter().any(|(_, other)| other.name == caller.name) {
                return Err(at("another entry has this name; names must be unique".to_owned()));
            }
            if keys.iter().any(|(other, _)| *other == digest) {
                return Err(at("another entry has the same key; keys must be unique".to_owned()));
            }
            keys.push((digest, Arc::new(caller)));
        }
        Ok(Self { keys: Arc::from(keys) })
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none (never, for a ring that was loaded or parsed).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Who `presented` is, if it is one of the keys. Every digest is compared, in constant time,
    /// whichever matches.
    pub fn authenticate(&self, presented: &[u8]) -> Option<Arc<Caller>> {
        let digest = Sha256::digest(presented);
        let mut found = Choice::from(0);
        let mut position = 0u32;
        for (index, (expected, _)) in self.keys.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            let same = expected.as_slice().ct_eq(digest.as_slice());
            position.conditional_assign(&index, same);
            found |= same;
        }
        let position = usize::try_from(position).ok()?;
        bool::from(found).then(|| Arc::clone(&self.keys[position].1))
    }
}

fn entry_to_key(entry: &KeyEntry) -> std::result::Result<([u8; 32], Caller), String> {
    if entry.name.trim().is_empty() {
        return Err("\"name\" must not be blank".to_owned());
    }
    let digest = match (&entry.key, &entry.key_sha256) {
        (Some(_), Some(_)) => return Err("give \"key\" or \"keySha256\", not both".to_owned()),
        (None, None) => return Err("\"key\" or \"keySha256\" is required".to_owned()),
        (Some(key), None) if key.expose().trim().is_empty() => return Err("\"key\" must not be blank".to_owned()),
        (Some(key), None) => Sha256::digest(key.expose().as_bytes()).into(),
        (None, Some(hex)) => parse_sha256(hex)?,
    };
    if entry.scopes.is_empty() {
        return Err("\"scopes\" is empty: list one or more of read, write, admin".to_owned());
    }
    let mut scopes = 0;
    for text in &entry.scopes {
        let scope =
            Scope::parse(text).ok_or_else(|| format!("unknown scope '{text}' (expected read, write or admin)"))?;
        scopes |= scope.bit();
    }
    let keyspaces = match entry.keyspaces.as_slice() {
        [] => return Err("\"keyspaces\" is empty: list keyspace names, or \"*\" for every keyspace".to_owned()),
        [all] if all == "*" => Keyspaces::All,
        names => {
            if names.iter().any(|name| name == "*") {
                return Err("\"*\" already allows every keyspace: give it alone or list names".to_owned());
            }
            if names.iter().any(|name| name.trim().is_empty()) {
                return Err("a keyspace name is blank".to_owned());
            }
            Keyspaces::Only(names.iter().map(|name| name.trim().to_owned()).collect())
        }
    };
    let caller = Caller {
        name: entry.name.trim().to_owned(),
        scopes,
        keyspaces,
    };
    Ok((digest, caller))
}

fn parse_sha256(hex: &str) -> std::result::Result<[u8; 32], String> {
    let hex = hex.trim();
    let bad = || {
        format!(
            "\"keySha256\" must be 64 hexadecimal digits (a SHA-256 digest), got {} characters",
            hex.len()
        )
    };
    if hex.len() != 64 {
        return Err(bad());
    }
    let mut digest = [0u8; 32];
    for (byte, pair) in digest.iter_mut().zip(hex.as_bytes().chunks(2)) {
        let text = std::str::from_utf8(pair).map_err(|_| bad())?;
        *byte = u8::from_str_radix(text, 16).map_err(|_| bad())?;
    }
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256_hex(text: &str) -> String {
        Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn keys_and_digests_authenticate_to_their_entry() {
        let json = format!(
            r#"[{{"name": "reader", "key": "r-key", "scopes": ["read"], "keyspaces": ["*"]}},
               {{"name": "writer", "keySha256": "{}", "scopes": ["read", "write"], "keyspaces": ["tenants"]}}]"#,
            sha256_hex("w-key")
        );
        let ring = KeyRing::parse(&json).expect("valid");
        assert_eq!(ring.len(), 2);
        let reader = ring.authenticate(b"r-key").expect("reader");
        assert_eq!(reader.name(), "reader");
        assert!(reader.has(Scope::Read) && !reader.has(Scope::Write) && !reader.has(Scope::Admin));
        let writer = ring.authenticate(b"w-key").expect("writer");
        assert_eq!(writer.name(), "writer");
        assert!(ring.authenticate(b"w-ke").is_none());
        assert!(ring.authenticate(b"").is_none());
        assert!(!format!("{ring:?}").contains("r-key"));
    }

    #[test]
    fn permit_names_the_missing_scope_or_keyspace() {
        let ring = KeyRing::parse(r#"[{"name": "app", "key": "k", "scopes": ["write"], "keyspaces": ["orders"]}]"#)
            .expect("valid");
        let app = ring.authenticate(b"k").expect("app");
        let err = app.permit(Scope::Read, || Some("orders".into())).expect_err("no read");
        assert_eq!(err.kind(), crate::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("needs the 'read' scope"), "{err}");
        assert!(err.to_string().contains("'app'"), "{err}");
        app.permit(Scope::Write, || Some("Orders".into()))
            .expect("own keyspace");
        let err = app
            .permit(Scope::Write, || Some("tenants".into()))
            .expect_err("other keyspace");
        assert!(err.to_string().contains("not for keyspace 'tenants'"), "{err}");
        assert!(app.permit(Scope::Write, || None).is_err());
        let all = KeyRing::single(&Secret::new("x")).authenticate(b"x").expect("single");
        for scope in Scope::ALL {
            all.permit(scope, || None).expect("every scope");
        }
    }

    #[test]
    fn bad_files_name_the_problem() {
        for (json, expected) in [
            ("{}", "expected a JSON array"),
            ("[]", "lists no keys"),
            (
                r#"[{"name": "a", "key": "k", "scopes": ["read"], "keyspaces": ["*"], "extra": 1}]"#,
                "unknown field `extra`",
            ),
            (
                r#"[{"name": "a", "scopes": ["read"], "keyspaces": ["*"]}]"#,
                "entry 1 ('a'): \"key\" or \"keySha256\" is required",
            ),
            (
                r#"[{"name": "a", "key": "k", "keySha256": "00", "scopes": ["read"], "keyspaces": ["*"]}]"#,
                "not both",
            ),
            (
                r#"[{"name": "a", "keySha256": "zz", "scopes": ["read"], "keyspaces": ["*"]}]"#,
                "64 hexadecimal digits",
            ),
            (
                r#"[{"name": "a", "key": "k", "scopes": ["delete"], "keyspaces": ["*"]}]"#,
                "unknown scope 'delete'",
            ),
            (
                r#"[{"name": "a", "key": "k", "scopes": [], "keyspaces": ["*"]}]"#,
                "\"scopes\" is empty",
            ),
            (
                r#"[{"name": "a", "key": "k", "scopes": ["read"], "keyspaces": []}]"#,
                "\"keyspaces\" is empty",
            ),
            (
                r#"[{"name": "a", "key": "k", "scopes": ["read"], "keyspaces": ["*", "x"]}]"#,
                "give it alone",
            ),
            (
                r#"[{"name": "a", "key": "k", "scopes": ["read"]}]"#,
                "missing field `keyspaces`",
            ),
            (
                r#"[{"name": " ", "key": "k", "scopes": ["read"], "keyspaces": ["*"]}]"#,
                "\"name\" must not be blank",
            ),
            (
                r#"[{"name": "a", "key": "k", "scopes": ["read"], "keyspaces": ["*"]},
                   {"name": "a", "key": "j", "scopes": ["read"], "keyspaces": ["*"]}]"#,
                "entry 2 ('a'): another entry has this name",
            ),
            (
                r#"[{"name": "a", "key": "k", "scopes": ["read"], "keyspaces": ["*"]},
                   {"name": "b", "key": "k", "scopes": ["admin"], "keyspaces": ["*"]}]"#,
                "entry 2 ('b'): another entry has the same key",
            ),
        ] {
            let err = KeyRing::parse(json).expect_err(json);
            assert!(err.contains(expected), "{json}: {err}");
            assert!(!err.contains("\"k\""), "the key leaked: {err}");
        }
    }
}
