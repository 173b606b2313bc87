//! Certificates made in the test with rcgen: a CA, server certificates for `127.0.0.1` and
//! `localhost` (valid, expired, for another host name), client certificates, and a second CA that
//! the daemon does not trust; written as PEM files in the test's temp dir.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use shardlite::server::TlsFiles;

/// A certificate authority that signs the test's certificates.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// A certificate and its private key, PEM.
pub struct Issued {
    /// The certificate, PEM.
    pub certificate: String,
    /// Its private key, PEM.
    pub key: String,
}

impl TestCa {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> Self {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let certificate = params.self_signed(&key).expect("self-signed CA");
        Self {
            issuer: Issuer::new(params, key),
            pem: certificate.pem(),
        }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A server certificate for `names` (host names or IP addresses), valid now.
    pub fn server(&self, names: &[&str]) -> Issued {
        self.issue(names, ExtendedKeyUsagePurpose::ServerAuth, false)
    }

    /// A server certificate for `names` that expired in 2021.
    pub fn expired_server(&self, names: &[&str]) -> Issued {
        self.issue(names, ExtendedKeyUsagePurpose::ServerAuth, true)
    }

    /// A client certificate named `name`, valid now.
    pub fn client(&self, name: &str) -> Issued {
        self.issue(&[name], ExtendedKeyUsagePurpose::ClientAuth, false)
    }

    fn issue(&self, names: &[&str], usage: ExtendedKeyUsagePurpose, expired: bool) -> Issued {
        let key = KeyPair::generate().expect("leaf key");
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, names.first().cloned().unwrap_or_default());
        params.extended_key_usages = vec![usage];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let certificate = params.signed_by(&key, &self.issuer).expect("signed leaf");
        Issued {
            certificate: certificate.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// PEM files for a TLS daemon and its clients, in one folder.
pub struct TlsFixture {
    /// The CA that signed the server and the trusted client certificate.
    pub ca: PathBuf,
    /// The server certificate (`127.0.0.1`, `localhost`) and its key.
    pub server_cert: PathBuf,
    /// See [`TlsFixture::server_cert`].
    pub server_key: PathBuf,
    /// A client certificate the CA signed, and its key.
    pub client_cert: PathBuf,
    /// See [`TlsFixture::client_cert`].
    pub client_key: PathBuf,
    /// A CA the daemon does not know.
    pub rogue_ca: PathBuf,
    /// A client certificate signed by the rogue CA, and its key.
    pub rogue_client_cert: PathBuf,
    /// See [`TlsFixture::rogue_client_cert`].
    pub rogue_client_key: PathBuf,
    /// The CA in memory, to issue more certificates.
    pub authority: TestCa,
}

impl TlsFixture {
    /// Makes the certificates and writes them under `dir`.
    pub fn new(dir: &Path) -> Self {
        let authority = TestCa::new("shardlite test CA");
        let rogue = TestCa::new("unknown CA");
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).expect("write a PEM file");
            path
        };
        let server = authority.server(&["127.0.0.1", "localhost"]);
        let client = authority.client("orders-service");
        let rogue_client = rogue.client("intruder");
        Self {
            ca: write("ca.pem", authority.pem()),
            server_cert: write("server.pem", &server.certificate),
            server_key: write("server.key", &server.key),
            client_cert: write("client.pem", &client.certificate),
            client_key: write("client.key", &client.key),
            rogue_ca: write("rogue-ca.pem", rogue.pem()),
            rogue_client_cert: write("rogue-client.pem", &rogue_client.certificate),
            rogue_client_key: write("rogue-client.key", &rogue_client.key),
            authority,
        }
    }

    /// The daemon's files: the server certificate, and the CA as client CA when `mutual`.
    pub fn server_files(&self, mutual: bool) -> TlsFiles {
        TlsFiles {
            certificate: self.server_cert.clone(),
            key: self.server_key.clone(),
            client_ca: mutual.then(|| self.ca.clone()),
        }
    }

    /// `;Server CA=…` for a connection string, and the client certificate too when `mutual`.
    pub fn connection_keys(&self, mutual: bool) -> String {
        let mut keys = format!(";Server CA={}", self.ca.display());
        if mutual {
            keys.push_str(&format!(
                ";Client Certificate={};Client Key={}",
                self.client_cert.display(),
                self.client_key.display()
            ));
        }
        keys
    }

    /// An HTTP client that trusts only `ca` (a PEM file) and presents `identity` (certificate
    /// and key files), if given.
    pub fn https_client(ca: &Path, identity: Option<(&Path, &Path)>) -> reqwest::Client {
        super::daemon::install_crypto_provider();
        let ca = reqwest::Certificate::from_pem(&std::fs::read(ca).expect("read the CA")).expect("CA PEM");
        let mut builder = reqwest::Client::builder().no_proxy().tls_certs_only([ca]);
        if let Some((certificate, key)) = identity {
            let mut pem = std::fs::read(certificate).expect("read the client certificate");
            pem.extend(std::fs::read(key).expect("read the client key"));
            builder = builder.identity(reqwest::Identity::from_pem(&pem).expect("client identity"));
        }
        builder.build().expect("https client")
    }
}
