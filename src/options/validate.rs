//! The rules a connection's settings must follow together: [`ConnectionOptions::validate`], and the
//! checks of an endpoint and of a header name that it and the parsers share.

use super::{ConnectionOptions, Destination, invalid};
use crate::error::Result;
use crate::map::Transport;
use crate::wire::DEFAULT_API_KEY_HEADER;

impl ConnectionOptions {
    /// Checks the rules that the setters cannot: a data source or an endpoint is set; the data source is
    /// not blank; the endpoint is an absolute `http(s)` URL without credentials, query or fragment, reached
    /// over `Http` or `Grpc`; the API key and its header are only used remotely, and are well formed; the
    /// pool size is at least 1.
    ///
    /// Parsing calls this; options that pass it print to text that parses back to equal options.
    pub fn validate(&self) -> Result<()> {
        match &self.target {
            Destination::Unset => {
                return Err(invalid(
                    "either 'Data Source' (a local file) or 'Endpoint' (a daemon) is required",
                ));
            }
            Destination::DataSource(path) => {
                if path.trim().is_empty() {
                    return Err(invalid("'Data Source' is empty"));
                }
                if self.api_key.is_some() {
                    return Err(invalid(
                        "'Api Key' applies only to remote connections ('Endpoint'), not to 'Data Source'",
                    ));
                }
                if self.api_key_header.is_some() {
                    return Err(invalid(
                        "'Api Key Header' applies only to remote connections ('Endpoint'), not to 'Data Source'",
                    ));
                }
                if self.shard_id.is_some() {
                    return Err(invalid(
                        "'Shard Id' names a shard of a data host ('Endpoint'); a 'Data Source' is one file already",
                    ));
                }
            }
            Destination::Endpoint { endpoint, transport } => {
                if *transport == Transport::Direct {
                    return Err(invalid(
                        "'Transport=Direct' cannot be used with 'Endpoint': use 'Data Source' for a local file, \
                         or 'Transport=Http' or 'Grpc' for a daemon",
                    ));
                }
                normalize_endpoint(endpoint)?;
            }
        }
        self.validate_tls()?;
        if self.api_key.as_ref().is_some_and(|key| key.expose().trim().is_empty()) {
            return Err(invalid("'Api Key' is empty"));
        }
        if let Some(header) = &self.api_key_header {
            check_header_name(header)?;
        }
        if let Some(shard_id) = &self.shard_id
            && let Err(err) = crate::map::data_host_shard_id(shard_id)
        {
            return Err(invalid(format!("invalid value for 'Shard Id': {err}")));
        }
        if self.max_open_shards == Some(0) {
            return Err(invalid(
                "invalid value '0' for 'Max Open Shards': expected a whole number, at least 1",
            ));
        }
        if self
            .keyspace
            .as_deref()
            .is_some_and(|keyspace| keyspace.trim().is_empty())
        {
            return Err(invalid("'Shard Keyspace' is empty"));
        }
        if self.max_pool_size == Some(0) {
            return Err(invalid(
                "invalid value '0' for 'Max Pool Size': expected a whole number, at least 1",
            ));
        }
        Ok(())
    }
}

impl ConnectionOptions {
    /// The TLS files: for an `https://` endpoint only, not blank, and a client certificate comes with its key.
    fn validate_tls(&self) -> Result<()> {
        let files = [
            ("Server CA", &self.server_ca),
            ("Client Certificate", &self.client_certificate),
            ("Client Key", &self.client_key),
        ];
        for (name, value) in files {
            let Some(path) = value else { continue };
            if path.trim().is_empty() {
                return Err(invalid(format!("'{name}' is empty: it names a PEM file")));
            }
            match &self.target {
                Destination::Endpoint { endpoint, .. } if endpoint.starts_with("https://") => {}
                Destination::Endpoint { .. } => {
                    return Err(invalid(format!(
                        "'{name}' applies only to an https:// 'Endpoint' (TLS); this endpoint is http://"
                    )));
                }
                Destination::DataSource(_) | Destination::Unset => {
                    return Err(invalid(format!(
                        "'{name}' applies only to remote connections (an https:// 'Endpoint'), not to 'Data Source'"
                    )));
                }
            }
        }
        match (&self.client_certificate, &self.client_key) {
            (Some(_), None) => Err(invalid(
                "'Client Key' is missing: 'Client Certificate' and 'Client Key' name a client certificate together",
            )),
            (None, Some(_)) => Err(invalid(
                "'Client Certificate' is missing: 'Client Certificate' and 'Client Key' name a client certificate \
                 together",
            )),
            _ => Ok(()),
        }
    }
}

/// Checks an endpoint and returns its normal form: the `url` crate's serialisation without the lone `/` of
/// a root path.
pub(super) fn normalize_endpoint(text: &str) -> Result<String> {
    let expected = "expected an absolute http:// or https:// URL such as http://localhost:61818";
    // An endpoint with credentials is not repeated in the message: they are secrets.
    let shown = if text.contains('@') { "<hidden>" } else { text };
    let url = ::url::Url::parse(text.trim())
        .map_err(|e| invalid(format!("invalid value '{shown}' for 'Endpoint': {e}; {expected}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(format!("invalid value '{shown}' for 'Endpoint': {expected}")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "'Endpoint' must not contain a user name or password; put the key in 'Api Key'",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(format!(
            "invalid value '{shown}' for 'Endpoint': a query ('?…') or fragment ('#…') is not allowed"
        )));
    }
    let text = url.as_str();
    Ok(match url.path() {
        "/" => text.strip_suffix('/').unwrap_or(text).to_owned(),
        _ => text.to_owned(),
    })
}

/// An HTTP header name is a non-empty RFC 9110 token.
fn check_header_name(header: &str) -> Result<()> {
    let is_token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if header.is_empty() || !header.chars().all(is_token_char) {
        return Err(invalid(format!(
            "invalid value '{header}' for 'Api Key Header': expected an HTTP header name such as {DEFAULT_API_KEY_HEADER}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn reason(text: &str) -> String {
        match text.parse::<ConnectionOptions>() {
            Err(Error::ConnectionString { reason }) => reason,
            other => panic!("expected a connection-string error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn endpoints_are_normalised() {
        assert_eq!(
            normalize_endpoint("HTTP://Example.COM:80/").unwrap(),
            "http://example.com"
        );
        assert_eq!(normalize_endpoint("https://h:61818").unwrap(), "https://h:61818");
        assert_eq!(normalize_endpoint("http://h:1/base/").unwrap(), "http://h:1/base/");
        assert_eq!(normalize_endpoint("http://[::1]:5").unwrap(), "http://[::1]:5");
        for bad in [
            "ftp://h",
            "localhost:61818",
            "/relative",
            "http://h/?q=1",
            "http://h/#f",
            "http://",
        ] {
            assert!(normalize_endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoint_credentials_are_refused_without_echoing_them() {
        let text = reason("Endpoint=http://user:hunter2@h;Transport=Http");
        assert!(text.contains("'Endpoint'"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn validate_reports_what_setters_cannot_prevent() {
        let remote = || ConnectionOptions::new().with_endpoint("http://h:1", Transport::Http);
        assert!(remote().validate().is_ok());
        assert!(ConnectionOptions::new().validate().is_err());
        assert!(ConnectionOptions::new().with_data_source(" ").validate().is_err());
        assert!(
            ConnectionOptions::new()
                .with_endpoint("h:1", Transport::Http)
                .validate()
                .is_err()
        );
        assert!(
            ConnectionOptions::new()
                .with_endpoint("http://h", Transport::Direct)
                .validate()
                .is_err()
        );
        assert!(remote().with_api_key(" ").validate().is_err());
        assert!(remote().with_api_key_header("X Key").validate().is_err());
        assert!(remote().with_max_pool_size(0).validate().is_err());
        assert!(
            remote().with_server_ca("ca.pem").validate().is_err(),
            "TLS files need https://"
        );
        let local = ConnectionOptions::new().with_data_source("a.db");
        assert!(local.clone().with_api_key("k").validate().is_err());
        assert!(local.with_api_key_header("X-Key").validate().is_err());
    }
}

#[cfg(test)]
mod tls_tests {
    use super::*;
    use crate::error::Error;

    fn reason(text: &str) -> String {
        match text.parse::<ConnectionOptions>() {
            Err(Error::ConnectionString { reason }) => reason,
            other => panic!("expected a connection-string error for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn tls_files_parse_in_both_forms_and_round_trip() {
        let text = "Endpoint=https://db.internal:61818;Transport=Grpc;Server CA=/etc/ca.pem;\
                    Client Certificate=/etc/client.pem;Client Key='/etc/client key.pem'";
        let options: ConnectionOptions = text.parse().expect("parses");
        assert_eq!(options.server_ca(), Some("/etc/ca.pem"));
        assert_eq!(options.client_certificate(), Some("/etc/client.pem"));
        assert_eq!(options.client_key(), Some("/etc/client key.pem"));
        let url = options.to_url();
        assert!(url.starts_with("shardlite+grpcs://db.internal:61818?"), "{url}");
        assert!(url.contains("server_ca=%2Fetc%2Fca.pem"), "{url}");
        assert_eq!(url.parse::<ConnectionOptions>().expect("URL parses"), options);
        assert_eq!(
            options.to_string().parse::<ConnectionOptions>().expect("text parses"),
            options
        );
        let built = ConnectionOptions::new()
            .with_endpoint("https://db.internal:61818", Transport::Grpc)
            .with_server_ca("/etc/ca.pem")
            .with_client_certificate("/etc/client.pem", "/etc/client key.pem");
        assert_eq!(built, options);
    }

    #[test]
    fn tls_files_are_refused_where_they_cannot_apply() {
        let https = "Endpoint=https://h:1;Transport=Http";
        let cases = [
            (
                "Endpoint=http://h:1;Transport=Http;Server CA=ca.pem".to_owned(),
                "'Server CA' applies only to an https://",
            ),
            (
                "Data Source=a.db;Client Certificate=c.pem;Client Key=k.pem".to_owned(),
                "not to 'Data Source'",
            ),
            (format!("{https};Client Certificate=c.pem"), "'Client Key' is missing"),
            (format!("{https};Client Key=k.pem"), "'Client Certificate' is missing"),
            (format!("{https};Server CA= "), "'Server CA' is empty"),
            (
                format!("{https};Server Cert=ca.pem"),
                "unknown connection-string key 'Server Cert'",
            ),
        ];
        for (text, expected) in cases {
            let reason = reason(&text);
            assert!(reason.contains(expected), "{text}: {reason}");
        }
    }

    /// `Shard Id` names one shard of a data host: remote connections only, with a valid shard id, in
    /// both forms.
    #[test]
    fn shard_id_addresses_one_shard_of_a_data_host() {
        let ado = ConnectionOptions::parse("Endpoint=http://10.0.0.5:61818;Transport=Grpc;Shard Id=orders-7").unwrap();
        assert_eq!(ado.shard_id(), Some("orders-7"));
        let url = ConnectionOptions::parse("shardlite+grpc://10.0.0.5:61818?shard_id=orders-7").unwrap();
        assert_eq!(url, ado);
        assert!(ado.to_url().contains("shard_id=orders-7"), "{}", ado.to_url());
        for (text, expected) in [
            ("Data Source=app.db;Shard Id=a", "'Shard Id'"),
            (
                "Endpoint=http://h:1;Transport=Http;Shard Id=..",
                "must not start with '.'",
            ),
            ("Endpoint=http://h:1;Transport=Http;Shard Id=a/b", "'Shard Id'"),
        ] {
            let err = ConnectionOptions::parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
