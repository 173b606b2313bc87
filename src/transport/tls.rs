//! TLS files and TLS failures, shared by the clients and the daemon.
//!
//! [`read_certificates`] and [`read_private_key`] read a PEM file and check that it holds what it
//! should, so a wrong path or a malformed file is refused when the settings are read, naming the
//! file, instead of at the first handshake. A private key's text never appears in a message.
//!
//! [`explain_failure`] turns the text of a failed handshake (rustls' error, as it surfaces
//! through reqwest or tonic) into a sentence naming the cause and what to change.

use std::path::Path;

use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::map::Secret;

/// What a daemon on a TLS port answers to a plain-text HTTP/1 request (the body of a 400) or
/// an HTTP/2 prior-knowledge connection (the debug data of its GOAWAY).
pub const TLS_REQUIRED_REPLY: &str = "this port serves TLS: connect with https:// instead of http://";

/// Reads `path` and checks that it holds at least one PEM certificate; returns the file's text.
///
/// The error is a sentence naming the file (the caller adds which setting it came from).
pub fn read_certificates(path: &Path) -> Result<Vec<u8>, String> {
    let bytes = read(path)?;
    certificates(&bytes).map_err(|reason| format!("'{}' {reason}", path.display()))?;
    Ok(bytes)
}

/// The certificates of the PEM file at `path`, or why there are none (naming the file).
#[cfg(feature = "server")]
pub(crate) fn load_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    certificates(&read(path)?).map_err(|reason| format!("'{}' {reason}", path.display()))
}

/// The private key of the PEM file at `path`, or why there is none (naming the file, never the key).
#[cfg(feature = "server")]
pub(crate) fn load_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    private_key(&read(path)?).map_err(|reason| format!("'{}' {reason}", path.display()))
}

/// The certificates in PEM text, or why there are none.
pub(crate) fn certificates(pem_text: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_slice_iter(pem_text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("is not valid PEM ({})", pem_problem(&err)))?;
    if certificates.is_empty() {
        return Err("holds no PEM certificate ('-----BEGIN CERTIFICATE-----')".to_owned());
    }
    Ok(certificates)
}

/// Reads `path` and checks that it holds a PEM private key (PKCS#8, PKCS#1 or SEC1); returns the
/// file's text as a secret. Messages never repeat the file's content.
pub fn read_private_key(path: &Path) -> Result<Secret, String> {
    let bytes = read(path)?;
    private_key(&bytes).map_err(|reason| format!("'{}' {reason}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("'{}' is not PEM text", path.display()))?;
    Ok(Secret::new(text))
}

/// The private key in PEM text, or why there is none.
pub(crate) fn private_key(pem_text: &[u8]) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_slice(pem_text).map_err(|err| match err {
        pem::Error::NoItemsFound => "holds no PEM private key ('-----BEGIN PRIVATE KEY-----')".to_owned(),
        other => format!("is not a valid PEM private key ({})", pem_problem(&other)),
    })
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|err| format!("cannot read '{}': {err}", path.display()))
}

/// A PEM error without any of the file's content (a key's base64 must not reach a log).
fn pem_problem(err: &pem::Error) -> &'static str {
    match err {
        pem::Error::MissingSectionEnd { .. } => "a section has no END line",
        pem::Error::IllegalSectionStart { .. } => "a BEGIN line is malformed",
        pem::Error::Base64Decode(_) => "a section's base64 does not decode",
        pem::Error::NoItemsFound => "no PEM section",
        _ => "unreadable",
    }
}

/// The causes a failed TLS connection names, from the error text that reaches the client, each
/// with the sentence that explains it. Matched in order; the first match wins.
const FAILURES: &[(&[&str], &str)] = &[
    (
        &[
            "Expired",
            "certificate expired",
            "NotValidYet",
            "certificate not valid yet",
        ],
        "the daemon's TLS certificate has expired (or is not yet valid)",
    ),
    (
        &["UnknownIssuer", "unknown issuer"],
        "the daemon's TLS certificate is not signed by a trusted CA: name the CA that signed it in 'Server CA'",
    ),
    (
        &["NotValidForName", "certificate not valid for name"],
        "the daemon's TLS certificate is not valid for the endpoint's host name",
    ),
    (
        &["CertificateRequired", "certificate required"],
        "the daemon requires a client certificate: set 'Client Certificate' and 'Client Key'",
    ),
    (
        &["UnknownCA", "BadCertificate", "DecryptError"],
        "the daemon refused the client certificate: it is not signed by a CA the daemon trusts",
    ),
    (
        &[TLS_REQUIRED_REPLY],
        "the daemon serves TLS on this port: use an https:// endpoint",
    ),
    (
        &[
            "InvalidContentType",
            "corrupt message",
            "HTTP/1",
            "invalid HTTP version",
        ],
        "the endpoint does not speak TLS: use an http:// endpoint, or check the port",
    ),
];

/// A sentence naming why a TLS connection failed, when `error_text` shows a known cause.
pub fn explain_failure(error_text: &str) -> Option<&'static str> {
    FAILURES
        .iter()
        .find(|(needles, _)| needles.iter().any(|needle| error_text.contains(needle)))
        .map(|(_, sentence)| *sentence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_pem_is_named_without_its_content() {
        let garbage = b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0IGtleSBtYXRlcmlhbA!!\n-----END PRIVATE KEY-----\n";
        let reason = private_key(garbage).expect_err("not a key");
        assert!(reason.contains("not a valid PEM private key"), "{reason}");
        assert!(!reason.contains("c2VjcmV0"), "{reason}");
        assert!(
            private_key(b"hello")
                .expect_err("no key")
                .contains("holds no PEM private key")
        );
        assert!(
            certificates(b"")
                .expect_err("no certificate")
                .contains("holds no PEM certificate")
        );
    }

    #[test]
    fn unreadable_files_are_named() {
        let reason = read_certificates(Path::new("/nonexistent/ca.pem")).expect_err("missing");
        assert!(reason.contains("/nonexistent/ca.pem"), "{reason}");
    }

    #[test]
    fn known_failures_are_explained() {
        let explained = |text: &str| explain_failure(text).unwrap_or("");
        assert!(explained("invalid peer certificate: Expired").contains("expired"));
        assert!(explained("invalid peer certificate: UnknownIssuer").contains("'Server CA'"));
        assert!(explained("received fatal alert: CertificateRequired").contains("'Client Certificate'"));
        assert!(explained(TLS_REQUIRED_REPLY).contains("https://"));
        assert_eq!(explain_failure("connection refused"), None);
    }
}
