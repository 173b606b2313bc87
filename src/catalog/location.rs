//! Where a catalog lives: a SQLite master file (the embedded default) or a prefix in etcd.
//!
//! Every place that takes a master path (`--master`, `Data Source`, [`Catalog::open`](super::Catalog::open),
//! [`ShardedClient::open`](crate::client::ShardedClient::open)) also takes
//! `etcd://HOST:PORT[,HOST:PORT…]/PREFIX`. Text with any other `scheme://` is refused, so a URL
//! with a typo never becomes a folder named after its scheme.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The form an etcd catalog URL takes, quoted in errors.
const ETCD_FORM: &str = "etcd://HOST:PORT[,HOST:PORT…]/PREFIX";

/// Where a catalog lives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CatalogLocation {
    /// A SQLite master file.
    File(PathBuf),
    /// A catalog under a key prefix in an etcd cluster.
    Etcd(EtcdAddress),
}

/// An etcd cluster's client endpoints and the key prefix a catalog lives under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdAddress {
    endpoints: Vec<String>,
    prefix: String,
}

impl EtcdAddress {
    /// The client endpoints, as `HOST:PORT`, in the order they are tried.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// The key prefix, with its leading `/` and no trailing one (`/shop`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl fmt::Display for EtcdAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "etcd://{}{}", self.endpoints.join(","), self.prefix)
    }
}

impl fmt::Display for CatalogLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Etcd(address) => address.fmt(f),
        }
    }
}

impl CatalogLocation {
    /// Reads a master path or catalog URL.
    ///
    /// ```
    /// use shardlite::catalog::CatalogLocation;
    ///
    /// assert!(matches!(CatalogLocation::parse("data/master.db")?, CatalogLocation::File(_)));
    /// let CatalogLocation::Etcd(etcd) = CatalogLocation::parse("etcd://10.0.0.1:2379,10.0.0.2:2379/shop")? else {
    ///     unreachable!()
    /// };
    /// assert_eq!(etcd.endpoints(), ["10.0.0.1:2379", "10.0.0.2:2379"]);
    /// assert_eq!(etcd.prefix(), "/shop");
    /// assert!(CatalogLocation::parse("etc://127.0.0.1:2379/shop").is_err());
    /// # Ok::<(), shardlite::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self> {
        let Some((scheme, rest)) = url_parts(text) else {
            return Ok(Self::File(PathBuf::from(text)));
        };
        if !scheme.eq_ignore_ascii_case("etcd") {
            return Err(invalid(
                text,
                &format!(
                    "the scheme '{scheme}://' is not one this release knows: a master is a SQLite file path or {ETCD_FORM}"
                ),
            ));
        }
        parse_etcd(text, rest).map(Self::Etcd)
    }

    /// The location of `path` (a master path, or a catalog URL held in a path).
    pub fn of_path(path: &Path) -> Result<Self> {
        match path.to_str() {
            Some(text) => Self::parse(text),
            None => Ok(Self::File(path.to_path_buf())),
        }
    }

    /// What relative shard paths resolve against: the master file (its folder), or for a catalog
    /// without a file, a name in the working directory (no such file is ever created).
    pub fn anchor(&self) -> PathBuf {
        match self {
            Self::File(path) => path.clone(),
            Self::Etcd(_) => std::env::current_dir().unwrap_or_default().join(".catalog"),
        }
    }

    /// Whether `text` names a catalog by URL (any `scheme://`) rather than by file path.
    pub fn is_url(text: &str) -> bool {
        url_parts(text).is_some()
    }
}

/// `(scheme, rest)` when `text` starts with `scheme://`. A scheme is an ASCII letter followed by
/// letters, digits, `+`, `-` or `.`, at least two characters long, so that a Windows drive
/// (`C://data`) stays a path.
fn url_parts(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && scheme.len() >= 2
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some((scheme, rest))
}

fn parse_etcd(text: &str, rest: &str) -> Result<EtcdAddress> {
    if rest.contains(['?', '#']) {
        return Err(invalid(text, "a query string or fragment has no meaning here"));
    }
    if rest.contains('@') {
        return Err(invalid(
            text,
            "user names and passwords in the URL are not supported (etcd authentication is not)",
        ));
    }
    let (hosts, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let prefix = prefix.trim_end_matches('/');
    if prefix.is_empty() {
        return Err(invalid(
            text,
            &format!("the key prefix is missing: expected {ETCD_FORM}"),
        ));
    }
    if let Some(bad) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
    {
        return Err(invalid(
            text,
            &format!("the key prefix '{prefix}' holds '{bad}'; use ASCII letters, digits and _ - . /"),
        ));
    }
    if prefix
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(invalid(
            text,
            &format!("the key prefix '{prefix}' has an empty, '.' or '..' segment"),
        ));
    }
    let endpoints = hosts
        .split(',')
        .map(|host| endpoint(text, host))
        .collect::<Result<Vec<_>>>()?;
    Ok(EtcdAddress {
        endpoints,
        prefix: format!("/{prefix}"),
    })
}

fn endpoint(text: &str, host: &str) -> Result<String> {
    let host = host.trim();
    let Some((name, port)) = host.rsplit_once(':') else {
        return Err(invalid(
            text,
            &format!("the endpoint '{host}' has no port: expected {ETCD_FORM}"),
        ));
    };
    let name_valid = !name.is_empty()
        && (name.starts_with('[') && name.ends_with(']')
            || name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.')));
    if !name_valid {
        return Err(invalid(text, &format!("the endpoint '{host}' has no valid host name")));
    }
    match port.parse::<u16>() {
        Ok(port) if port > 0 => Ok(format!("{name}:{port}")),
        _ => Err(invalid(
            text,
            &format!("the endpoint '{host}' has no valid port (1 to 65535)"),
        )),
    }
}

fn invalid(text: &str, reason: &str) -> Error {
    Error::invalid_argument("catalog URL", format!("'{text}': {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        CatalogLocation::parse(text).expect_err(text).to_string()
    }

    #[test]
    fn paths_stay_paths() {
        for text in [
            "master.db",
            "data/master.db",
            "/srv/master.db",
            "C://data/master.db",
            "c:\\m.db",
            "",
        ] {
            assert_eq!(
                CatalogLocation::parse(text).unwrap(),
                CatalogLocation::File(text.into()),
                "{text}"
            );
        }
    }

    #[test]
    fn etcd_urls_name_their_endpoints_and_prefix() {
        let CatalogLocation::Etcd(etcd) = CatalogLocation::parse("ETCD://a:1, b.local:2 ,[::1]:3/x/y/").unwrap() else {
            panic!("not etcd");
        };
        assert_eq!(etcd.endpoints(), ["a:1", "b.local:2", "[::1]:3"]);
        assert_eq!(etcd.prefix(), "/x/y");
        assert_eq!(etcd.to_string(), "etcd://a:1,b.local:2,[::1]:3/x/y");
    }

    #[test]
    fn bad_urls_name_the_problem() {
        assert!(refused("etc://127.0.0.1:2379/shop").contains("'etc://'"));
        assert!(refused("http://127.0.0.1:2379/shop").contains("'http://'"));
        assert!(refused("etcd://127.0.0.1:2379").contains("prefix is missing"));
        assert!(refused("etcd://127.0.0.1:2379/").contains("prefix is missing"));
        assert!(refused("etcd://127.0.0.1/shop").contains("has no port"));
        assert!(refused("etcd://127.0.0.1:0/shop").contains("valid port"));
        assert!(refused("etcd://127.0.0.1:99999/shop").contains("valid port"));
        assert!(refused("etcd://:2379/shop").contains("host name"));
        assert!(refused("etcd://h:1,/shop").contains("no port"));
        assert!(refused("etcd://h:1/a b").contains("' '"));
        assert!(refused("etcd://h:1/a/../b").contains("'..'"));
        assert!(refused("etcd://h:1/a?x=1").contains("query string"));
        assert!(refused("etcd://u:p@h:1/a").contains("passwords"));
    }
}
