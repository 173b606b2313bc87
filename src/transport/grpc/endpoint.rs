//! The daemon's endpoint: checked, reduced to its origin, and turned into a tonic channel
//! endpoint with the connect timeout and TLS settings of the [`RemoteOptions`].

use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use super::non_zero;
use super::status::error_chain;
use crate::error::{Error, Result};
use crate::transport::RemoteOptions;
use crate::transport::tls::{certificates, private_key};

/// Checks the endpoint and returns `(origin, is_https)`: scheme, host and port only.
fn parse_endpoint(endpoint: &str) -> Result<(String, bool)> {
    let bad = |reason: &str| Error::invalid_argument("endpoint", format!("'{endpoint}' {reason}"));
    let url = url::Url::parse(endpoint.trim()).map_err(|e| bad(&format!("is not an absolute URL ({e})")))?;
    let https = match url.scheme() {
        "http" => false,
        "https" => true,
        _ => return Err(bad("must start with http:// or https://")),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::invalid_argument(
            "endpoint",
            "must not contain credentials (use the API key option)",
        ));
    }
    let Some(host) = url.host_str() else {
        return Err(bad("has no host"));
    };
    let origin = match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    };
    Ok((origin, https))
}

/// The origin of the endpoint (for messages) and the channel endpoint to connect with.
pub(super) fn channel_endpoint(options: &RemoteOptions) -> Result<(String, Endpoint)> {
    let (origin, https) = parse_endpoint(&options.endpoint)?;
    let mut channel_endpoint = Endpoint::from_shared(origin.clone())
        .map_err(|err| Error::invalid_argument("endpoint", format!("'{origin}': {}", error_chain(&err))))?
        .tcp_nodelay(true);
    if let Some(limit) = non_zero(options.connect_timeout) {
        channel_endpoint = channel_endpoint.connect_timeout(limit);
    }
    if https {
        let mut tls = ClientTlsConfig::new().with_enabled_roots();
        if let Some(pem) = &options.ca_certificate_pem {
            certificates(pem).map_err(|reason| Error::ConnectionString {
                reason: format!("the server CA {reason}"),
            })?;
            tls = tls.ca_certificate(Certificate::from_pem(pem));
        }
        if let Some((certificate, key)) = &options.client_identity_pem {
            certificates(certificate).map_err(|reason| Error::ConnectionString {
                reason: format!("the client certificate {reason}"),
            })?;
            private_key(key.expose().as_bytes()).map_err(|reason| Error::ConnectionString {
                reason: format!("the client key {reason}"),
            })?;
            tls = tls.identity(Identity::from_pem(certificate, key.expose()));
        }
        if let Some(domain) = &options.tls_domain_name {
            tls = tls.domain_name(domain.clone());
        }
        if let Some(limit) = non_zero(options.connect_timeout) {
            tls = tls.timeout(limit);
        }
        channel_endpoint = channel_endpoint
            .tls_config(tls)
            .map_err(|err| Error::invalid_argument("TLS settings", error_chain(&err)))?;
    }
    Ok((origin, channel_endpoint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn endpoints_are_checked_and_reduced_to_their_origin() {
        assert_eq!(
            parse_endpoint("http://127.0.0.1:61818/base").expect("valid"),
            ("http://127.0.0.1:61818".to_owned(), false)
        );
        assert_eq!(
            parse_endpoint("https://db.internal").expect("valid"),
            ("https://db.internal".to_owned(), true)
        );
        assert_eq!(
            parse_endpoint("http://[::1]:5000").expect("valid").0,
            "http://[::1]:5000"
        );
        for bad in ["ftp://host", "127.0.0.1:61818", "", "http://user:pw@host"] {
            let err = parse_endpoint(bad).expect_err(bad);
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
            assert!(!err.to_string().contains("pw"), "{err}");
        }
    }
}
