//! TLS for the guard's daemon rows: a certificate authority and a server certificate for
//! `127.0.0.1`, made here with rcgen, which the daemon and the bare servers both serve and the
//! clients trust, so that both sides of a row pay for the same handshake and record layer.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use shardlite::server::TlsFiles;
use shardlite::transport::grpc::proto::shardlite_client::ShardliteClient;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tonic::transport::{Channel, ClientTlsConfig};

/// The certificates, PEM, and the daemon's files of them.
pub struct Certificates {
    /// The CA the clients trust.
    pub ca: String,
    /// The server certificate for `127.0.0.1`.
    pub certificate: String,
    /// Its private key.
    pub key: String,
    /// The same certificate and key as files, for the daemon.
    pub files: TlsFiles,
}

impl Certificates {
    /// Makes the CA and the server certificate, and writes the server's under `dir`.
    pub fn new(dir: &Path) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca_key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, "guard CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca = params.self_signed(&ca_key).expect("self-signed CA").pem();
        let issuer = Issuer::new(params, ca_key);
        let key = KeyPair::generate().expect("server key");
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("server params");
        params.distinguished_name.push(DnType::CommonName, "127.0.0.1");
        let certificate = params.signed_by(&key, &issuer).expect("server certificate").pem();
        let key = key.serialize_pem();
        let files = TlsFiles {
            certificate: dir.join("guard-server.pem"),
            key: dir.join("guard-server-key.pem"),
            client_ca: None,
        };
        std::fs::write(&files.certificate, &certificate).expect("write the certificate");
        std::fs::write(&files.key, &key).expect("write the key");
        Self {
            ca,
            certificate,
            key,
            files,
        }
    }

    /// The bare servers' acceptor, offering HTTP/2 and HTTP/1.1 as the daemon does.
    fn acceptor(&self) -> TlsAcceptor {
        let chain = vec![CertificateDer::from_pem_slice(self.certificate.as_bytes()).expect("certificate PEM")];
        let key = PrivateKeyDer::from_pem_slice(self.key.as_bytes()).expect("key PEM");
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server TLS configuration");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        TlsAcceptor::from(Arc::new(config))
    }

    /// An HTTP client that trusts the CA.
    pub fn http_client(&self) -> reqwest::Client {
        let ca = reqwest::Certificate::from_pem(self.ca.as_bytes()).expect("CA PEM");
        reqwest::Client::builder()
            .no_proxy()
            .add_root_certificate(ca)
            .build()
            .expect("HTTPS client")
    }

    /// A gRPC client of `base_url` (`https://…`) that trusts the CA.
    pub async fn grpc_client(&self, base_url: &str) -> ShardliteClient<Channel> {
        let tls = ClientTlsConfig::new().ca_certificate(tonic::transport::Certificate::from_pem(&self.ca));
        let channel = tonic::transport::Endpoint::from_shared(base_url.to_owned())
            .expect("endpoint")
            .tls_config(tls)
            .expect("client TLS configuration")
            .tcp_nodelay(true)
            .connect()
            .await
            .expect("gRPC channel over TLS");
        ShardliteClient::new(channel)
    }

    /// The daemon's TLS configuration.
    pub fn server_tls(&self) -> shardlite::server::ServerTls {
        shardlite::server::ServerTls::load(self.files.clone()).expect("the daemon's TLS files")
    }

    /// The bare gRPC server's identity.
    pub fn identity(&self) -> tonic::transport::Identity {
        tonic::transport::Identity::from_pem(&self.certificate, &self.key)
    }
}

/// A listener that shakes hands before it hands a connection to axum.
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            if let Ok(stream) = self.acceptor.accept(stream).await {
                return (stream, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Serves `app` over TLS on `127.0.0.1:0`; returns its base URL.
pub async fn serve_axum(app: axum::Router, certificates: &Certificates) -> String {
    let tcp = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = tcp.local_addr().expect("bound address");
    let listener = TlsListener {
        tcp,
        acceptor: certificates.acceptor(),
    };
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("https://{addr}")
}
