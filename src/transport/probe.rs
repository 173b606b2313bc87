//! Naming a refused TLS handshake that a call lost.
//!
//! With TLS 1.3 a client's side of the handshake ends before the daemon has checked the client
//! certificate, so a client sends its request at once, and the daemon's refusal (the alert
//! "certificate required", or "unknown CA" for a certificate it does not trust) arrives after
//! it. The HTTP clients underneath then often report only that the connection closed, the
//! channel closed or a pipe broke: the alert ends the connection's task, not the request.
//!
//! [`HandshakeProbe::explain`] turns such a failure into the named cause: when a call to an
//! `https://` endpoint failed without one, it shakes hands once more with the same
//! certificates, sends nothing, and reads what the daemon answers first. An alert is explained
//! with [`explain_failure`]; a daemon that accepts the handshake leaves the error as it was.

use std::io::Read as _;
use std::net::{TcpStream, ToSocketAddrs as _};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use super::RemoteOptions;
use super::tls::{certificates, explain_failure, private_key};
use crate::error::{Error, TransportFailure};
use crate::map::Secret;

/// How long the probe waits to connect, and then for the daemon's first answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What a second handshake with an endpoint needs: its address and the client's certificates.
#[derive(Clone)]
pub(crate) struct HandshakeProbe {
    endpoint: String,
    server_ca: Option<Vec<u8>>,
    identity: Option<(Vec<u8>, Secret)>,
    domain: Option<String>,
}

impl std::fmt::Debug for HandshakeProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeProbe")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl HandshakeProbe {
    /// The probe of `options`' endpoint.
    pub(crate) fn new(options: &RemoteOptions) -> Self {
        Self {
            endpoint: options.endpoint.clone(),
            server_ca: options.ca_certificate_pem.clone(),
            identity: options.client_identity_pem.clone(),
            domain: options.tls_domain_name.clone(),
        }
    }

    /// `err`, or, when it is a transport failure of an `https://` endpoint whose cause is not
    /// named, the same failure naming the cause a second handshake shows.
    pub(crate) async fn explain(&self, err: Error) -> Error {
        let Error::Transport(failure) = &err else {
            return err;
        };
        if !self.endpoint.starts_with("https://") || explain_failure(&failure.reason).is_some() {
            return err;
        }
        let probe = self.clone();
        let named = tokio::task::spawn_blocking(move || probe.handshake())
            .await
            .ok()
            .flatten();
        match named {
            Some(explained) => Error::from(TransportFailure {
                endpoint: failure.endpoint.clone(),
                reason: format!("{explained} ({})", failure.reason),
            }),
            None => err,
        }
    }

    /// Shakes hands and reads the daemon's first record: the named cause of a refusal, if any.
    fn handshake(&self) -> Option<&'static str> {
        let url = url::Url::parse(&self.endpoint).ok()?;
        let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = url.port_or_known_default()?;
        let address = (host.as_str(), port).to_socket_addrs().ok()?.next()?;
        let name = ServerName::try_from(self.domain.clone().unwrap_or(host)).ok()?;
        let mut connection = ClientConnection::new(Arc::new(self.config()?), name).ok()?;
        let mut tcp = TcpStream::connect_timeout(&address, PROBE_TIMEOUT).ok()?;
        tcp.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
        tcp.set_write_timeout(Some(PROBE_TIMEOUT)).ok()?;
        while connection.is_handshaking() {
            if let Err(err) = connection.complete_io(&mut tcp) {
                return explain_failure(&error_text(&err));
            }
        }
        let mut first = [0_u8; 1];
        rustls::Stream::new(&mut connection, &mut tcp)
            .read_exact(&mut first)
            .err()
            .and_then(|err| explain_failure(&error_text(&err)))
    }

    /// The client's TLS configuration: the endpoint's CA (or the system's roots) and the
    /// client certificate, if any.
    fn config(&self) -> Option<ClientConfig> {
        let mut roots = RootCertStore::empty();
        match &self.server_ca {
            Some(pem) => {
                for certificate in certificates(pem).ok()? {
                    roots.add(certificate).ok()?;
                }
            }
            None => {
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .ok()?
            .with_root_certificates(roots);
        match &self.identity {
            Some((certificate, key)) => builder
                .with_client_auth_cert(
                    certificates(certificate).ok()?,
                    private_key(key.expose().as_bytes()).ok()?,
                )
                .ok(),
            None => Some(builder.with_no_client_auth()),
        }
    }
}

/// An I/O error with its source, as text.
fn error_text(err: &std::io::Error) -> String {
    match std::error::Error::source(err) {
        Some(source) => format!("{err}: {source}"),
        None => err.to_string(),
    }
}
