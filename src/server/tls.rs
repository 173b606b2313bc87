//! TLS on the daemon's one port: REST (HTTP/1.1 and HTTP/2) and gRPC behind one rustls acceptor.
//!
//! [`ServerTls`] holds the certificate chain, its key and, for mutual TLS, the CA that client
//! certificates must chain to ([`TlsFiles`]). ALPN offers `h2` and `http/1.1`. The configuration
//! sits behind an atomic pointer: [`ServerTls::reload`] (or SIGHUP, see
//! [`ServerTls::reload_on_sighup`]) reads the files again and swaps it, so new handshakes use the
//! new certificate while connections already open keep theirs. A reload that fails (a file
//! half-written, a key that does not match) keeps the previous configuration and says why.
//!
//! Handshakes run in tasks of their own, each bounded by a timeout, so a slow or silent client
//! never holds up the others. A client that speaks plain text to the TLS port gets an answer
//! and a closed connection at once: an HTTP/1 request a `400` whose body is
//! [`TLS_REQUIRED_REPLY`], an HTTP/2 prior-knowledge connection (plain-text gRPC) a `GOAWAY`
//! carrying the same sentence.
//!
//! A refused handshake (an untrusted or expired certificate, a client certificate rustls does
//! not accept, a client that hung up) is logged at `warn` with rustls' reason and, for the
//! common ones, what to check; at most one line every 10 seconds, the next one
//! counting those left out, so a scanner cannot flood the log.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use rustls::server::WebPkiClientVerifier;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::error::{Error, Result};
use crate::transport::tls::{TLS_REQUIRED_REPLY, load_certificates, load_private_key};

/// How long a client may take to complete its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a refused client (plain text, or a failed handshake) is given to read the answer
/// before its connection is closed.
const REFUSAL_LINGER: Duration = Duration::from_secs(2);
/// Connections whose handshake finished, waiting for the server to take them.
const READY_BACKLOG: usize = 64;
/// The first byte of every TLS connection: a handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
/// At most one `warn` line about refused handshakes per this interval.
const HANDSHAKE_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The PEM files of the daemon's TLS settings.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (`--tls-cert`).
    pub certificate: PathBuf,
    /// The leaf certificate's private key: PKCS#8, PKCS#1 or SEC1 (`--tls-key`).
    pub key: PathBuf,
    /// For mutual TLS, the CA certificate(s) that client certificates must chain to
    /// (`--tls-client-ca`); without it no client certificate is asked for.
    pub client_ca: Option<PathBuf>,
}

/// The daemon's TLS configuration, reloadable while it serves. Cloning is cheap and clones share
/// the configuration.
#[derive(Clone)]
pub struct ServerTls {
    files: Arc<TlsFiles>,
    current: Arc<ArcSwap<rustls::ServerConfig>>,
}

impl fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads and checks the files. An unreadable or malformed file, a key that does not match
    /// the certificate, or a client CA that is not a CA certificate is refused naming the flag
    /// and the file (never the key's content).
    pub fn load(files: TlsFiles) -> Result<Self> {
        let config = server_config(&files)?;
        Ok(Self {
            files: Arc::new(files),
            current: Arc::new(ArcSwap::from_pointee(config)),
        })
    }

    /// Reads the files again and, when they are usable, makes new handshakes use them; open
    /// connections are not touched. On error the previous configuration stays.
    pub fn reload(&self) -> Result<()> {
        let config = server_config(&self.files)?;
        self.current.store(Arc::new(config));
        Ok(())
    }

    /// Whether clients must present a certificate signed by the client CA (mutual TLS).
    pub fn requires_client_certificates(&self) -> bool {
        self.files.client_ca.is_some()
    }

    /// Reloads on every SIGHUP until the returned task is aborted, logging the outcome: `info`
    /// when the new files are in use, `warn` (with the reason) when the old ones stay.
    #[cfg(unix)]
    pub fn reload_on_sighup(&self) -> Result<JoinHandle<()>> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup()).map_err(|source| Error::Io {
            what: "the SIGHUP handler".to_owned(),
            source,
        })?;
        let tls = self.clone();
        Ok(tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                // Reading files blocks: keep it off the threads that serve requests.
                let reloading = tls.clone();
                match tokio::task::spawn_blocking(move || reloading.reload()).await {
                    Ok(Ok(())) => tracing::info!("SIGHUP: TLS certificate and key reloaded; new connections use them"),
                    Ok(Err(err)) => {
                        tracing::warn!(error = %err, "SIGHUP: TLS files not reloaded; the previous ones stay in use");
                    }
                    Err(err) => tracing::warn!(error = %err, "SIGHUP: the TLS reload did not finish"),
                }
            }
        }))
    }

    fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.current.load_full())
    }
}

/// The rustls configuration the files describe, with ALPN `h2` and `http/1.1`.
fn server_config(files: &TlsFiles) -> Result<rustls::ServerConfig> {
    let chain =
        load_certificates(&files.certificate).map_err(|reason| Error::invalid_argument("--tls-cert", reason))?;
    let key = load_private_key(&files.key).map_err(|reason| Error::invalid_argument("--tls-key", reason))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|err| Error::invalid_argument("TLS", err.to_string()))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(path) => {
            let invalid = |reason: String| Error::invalid_argument("--tls-client-ca", reason);
            let mut roots = rustls::RootCertStore::empty();
            for certificate in load_certificates(path).map_err(invalid)? {
                roots
                    .add(certificate)
                    .map_err(|err| invalid(format!("'{}' holds an unusable CA certificate: {err}", path.display())))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|err| invalid(format!("'{}': {err}", path.display())))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|err| {
        Error::invalid_argument(
            "--tls-key",
            format!(
                "'{}' cannot serve the certificate in '{}': {err}",
                files.key.display(),
                files.certificate.display()
            ),
        )
    })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A listener that hands axum connections whose TLS handshake has finished.
pub(super) struct TlsListener {
    address: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    accepting: JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `listener` and shakes hands with `tls`'s current configuration.
    pub(super) fn new(listener: TcpListener, tls: ServerTls) -> io::Result<Self> {
        let address = listener.local_addr()?;
        let (sender, ready) = mpsc::channel(READY_BACKLOG);
        let accepting = tokio::spawn(accept_connections(listener, tls, sender));
        Ok(Self {
            address,
            ready,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accepting task ended (the runtime is shutting down): nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.address)
    }
}

/// Accepts TCP connections and shakes hands with each in a task of its own.
async fn accept_connections(
    listener: TcpListener,
    tls: ServerTls,
    ready: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    let failures = Arc::new(HandshakeFailures::new());
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of file descriptors and the like: wait rather than spin.
                tracing::warn!(error = %err, "could not accept a connection");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if ready.is_closed() {
            return;
        }
        // See `server::serve`: gRPC's small answers must not wait for delayed acknowledgements.
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(error = %err, "could not set TCP_NODELAY on a connection");
        }
        let acceptor = tls.acceptor();
        let ready = ready.clone();
        let failures = Arc::clone(&failures);
        tokio::spawn(async move {
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(stream, acceptor)).await {
                Ok(Ok(Some(stream))) => {
                    let _ = ready.send((stream, peer)).await;
                }
                Ok(Ok(None)) => {}
                Ok(Err(err)) => failures.report(peer, &err),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

/// Logs refused handshakes at `warn`, one line per [`HANDSHAKE_LOG_INTERVAL`] at most; the
/// others go to `debug` and are counted in the next `warn` line.
struct HandshakeFailures {
    started: Instant,
    /// Milliseconds after `started` before which no `warn` line is written.
    quiet_until_ms: AtomicU64,
    /// Refusals logged only at `debug` since the last `warn` line.
    left_out: AtomicU64,
}

impl HandshakeFailures {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            quiet_until_ms: AtomicU64::new(0),
            left_out: AtomicU64::new(0),
        }
    }

    fn report(&self, peer: SocketAddr, err: &io::Error) {
        let reason = err.to_string();
        let check = handshake_advice(&reason);
        let now_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let quiet_until = self.quiet_until_ms.load(Ordering::Relaxed);
        let interval_ms = u64::try_from(HANDSHAKE_LOG_INTERVAL.as_millis()).unwrap_or(u64::MAX);
        let turn = now_ms >= quiet_until
            && self
                .quiet_until_ms
                .compare_exchange(
                    quiet_until,
                    now_ms.saturating_add(interval_ms),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok();
        if !turn {
            self.left_out.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, reason, check, "TLS handshake failed");
            return;
        }
        let left_out = self.left_out.swap(0, Ordering::Relaxed);
        if left_out > 0 {
            tracing::warn!(%peer, reason, check, more_since_last_line = left_out, "TLS handshake failed");
        } else {
            tracing::warn!(%peer, reason, check, "TLS handshake failed");
        }
    }
}

/// What an operator checks for the refusals rustls names most often (its `reason` says which).
fn handshake_advice(reason: &str) -> &'static str {
    if reason.contains("UnsupportedCertVersion") {
        "the client certificate is not X.509 v3; rustls accepts only v3 certificates (with extensions): reissue it"
    } else if reason.contains("UnknownIssuer") {
        "the client certificate does not chain to a CA in --tls-client-ca"
    } else if reason.contains("Expired") || reason.contains("NotValidYet") {
        "the client certificate is outside its validity period (or a clock is wrong)"
    } else if reason.contains("peer sent no certificates") || reason.contains("NoCertificatesPresented") {
        "the client sent no certificate; with --tls-client-ca every client needs one"
    } else if reason.contains("BadCertificate") || reason.contains("UnknownCA") || reason.contains("alert") {
        "the client refused the daemon's certificate: give it the CA that signed --tls-cert"
    } else if reason.contains("eof") || reason.contains("reset") {
        "the client closed the connection during the handshake"
    } else {
        "see the reason"
    }
}

/// The TLS stream, or `None` when the client spoke plain text (it was answered) or left.
async fn handshake(stream: TcpStream, acceptor: TlsAcceptor) -> io::Result<Option<TlsStream<TcpStream>>> {
    let mut first = [0_u8; 1];
    if stream.peek(&mut first).await? == 0 {
        return Ok(None);
    }
    if first[0] != TLS_HANDSHAKE_RECORD {
        answer_plain_text(stream).await?;
        return Ok(None);
    }
    match acceptor.accept(stream).into_fallible().await {
        Ok(stream) => Ok(Some(stream)),
        Err((err, stream)) => {
            // The alert naming the failure (a missing or unknown client certificate) is written;
            // with TLS 1.3 the client may already have sent its request, and closing with that
            // unread resets the connection, which can destroy the alert before the client reads
            // it. Close gently so the client learns why.
            close_gently(stream).await;
            Err(err)
        }
    }
}

/// Closes `stream` for writing, then reads what the client still sends for a moment before
/// dropping it: closing a socket with unread input resets it, and the reset can overtake what
/// was written last.
async fn close_gently(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let mut sink = [0_u8; 1024];
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        while matches!(stream.read(&mut sink).await, Ok(1..)) {}
    })
    .await;
}

/// Tells a plain-text client to use TLS, in the protocol it spoke, and closes the connection.
async fn answer_plain_text(mut stream: TcpStream) -> io::Result<()> {
    let mut head = [0_u8; 24];
    let read = stream.read(&mut head).await?;
    let reply = if head[..read].starts_with(b"PRI * HTTP/2.0") {
        http2_goaway()
    } else {
        format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{TLS_REQUIRED_REPLY}",
            TLS_REQUIRED_REPLY.len()
        )
        .into_bytes()
    };
    stream.write_all(&reply).await?;
    close_gently(stream).await;
    Ok(())
}

/// An HTTP/2 server preface (an empty SETTINGS frame) and a GOAWAY frame with the error
/// `PROTOCOL_ERROR` whose debug data is [`TLS_REQUIRED_REPLY`].
///
/// `INADEQUATE_SECURITY` would say it better, but gRPC clients read that code as "permission
/// denied", which would send a caller looking for a key problem.
fn http2_goaway() -> Vec<u8> {
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    const PROTOCOL_ERROR: u32 = 0x1;
    let debug = TLS_REQUIRED_REPLY.as_bytes();
    let length = u32::try_from(8 + debug.len()).unwrap_or(8).to_be_bytes();
    let mut frames = vec![0, 0, 0, SETTINGS, 0, 0, 0, 0, 0];
    frames.extend_from_slice(&[length[1], length[2], length[3], GOAWAY, 0, 0, 0, 0, 0]);
    frames.extend_from_slice(&0_u32.to_be_bytes());
    frames.extend_from_slice(&PROTOCOL_ERROR.to_be_bytes());
    frames.extend_from_slice(debug);
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_handshakes_name_what_to_check() {
        assert!(handshake_advice("invalid peer certificate: UnknownIssuer").contains("--tls-client-ca"));
        assert!(handshake_advice("invalid peer certificate: Other(OtherError(UnsupportedCertVersion))").contains("v3"));
    }

    #[test]
    fn the_goaway_frame_carries_the_reason() {
        let frames = http2_goaway();
        assert_eq!(
            &frames[..9],
            &[0, 0, 0, 4, 0, 0, 0, 0, 0],
            "an empty SETTINGS frame first"
        );
        let length = usize::from(frames[9]) << 16 | usize::from(frames[10]) << 8 | usize::from(frames[11]);
        assert_eq!(length, frames.len() - 18, "the GOAWAY's length covers its payload");
        assert_eq!(frames[12], 7, "a GOAWAY frame");
        assert!(frames.ends_with(TLS_REQUIRED_REPLY.as_bytes()));
    }

    #[test]
    fn missing_files_are_refused_naming_the_flag_and_the_file() {
        let files = TlsFiles {
            certificate: PathBuf::from("/nonexistent/server.pem"),
            key: PathBuf::from("/nonexistent/server.key"),
            client_ca: None,
        };
        let err = ServerTls::load(files).expect_err("no such file").to_string();
        assert!(
            err.contains("--tls-cert") && err.contains("/nonexistent/server.pem"),
            "{err}"
        );
    }
}
