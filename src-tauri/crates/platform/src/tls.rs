//! TLS for the crate's network clients (calendars and contacts over reqwest, mail over
//! tokio-rustls and lettre): rustls with the ring provider and the platform's verifier, so a
//! server is trusted exactly when the system trusts it (its store, and the authorities the person
//! or their organisation added to it), plus the certificates of a `ca_file` where the
//! configuration names one (a server with a private certificate authority). Kept in one place so
//! the clients cannot drift apart: the DAV client once trusted only rustls' built-in roots, and
//! refused servers the system trusted.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use crate::error::{Error, Result};

/// The client configuration: the system's trust store plus `extra` roots.
pub(crate) fn client_config(extra: Vec<CertificateDer<'static>>) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = if extra.is_empty() {
        rustls_platform_verifier::Verifier::new(provider.clone())
    } else {
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider.clone())
    }
    .map_err(|e| Error::Failed(format!("setting up TLS certificate checks failed: {e}")))?;
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Failed(format!("setting up TLS failed: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// The certificates of a `ca_file` (PEM), none when there is no file. `owner` says whose setting
/// it is (`the mail account "work"`), so the person knows which one to fix.
pub(crate) fn ca_file_roots(
    path: Option<&Path>,
    owner: &str,
) -> Result<Vec<CertificateDer<'static>>> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let bad = |why: String| {
        Error::invalid(format!(
            "the `ca_file` {} of {owner} {why}; point it at the PEM file of the server's \
             certificate authority",
            path.display()
        ))
    };
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(format!("cannot be read: {e}")))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(format!("is not a PEM certificate file: {e}")))?;
    if certificates.is_empty() {
        return Err(bad("holds no certificate".into()));
    }
    Ok(certificates)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A self-signed CA certificate (EC P-256, made with openssl for these tests; its key was
    /// thrown away).
    pub(crate) const TEST_CA: &str = "-----BEGIN CERTIFICATE-----
MIIBiTCCAS+gAwIBAgIUWIJYxXxNLfW/gOh2PvK+323w53owCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOT3NwcmV5IHRlc3QgQ0EwIBcNMjYxMTI2MTMwNzU1WhgPMjEy
NjExMDIxMzA3NTVaMBkxFzAVBgNVBAMMDk9zcHJleSB0ZXN0IENBMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEy0375uC+Cs9wupuUlpvc33qsWZyRf/523ipkNuzt
ShwMXvP515RExsaZGPTSB4me8m7Nsq4qv+zMu1sIlorUx6NTMFEwHQYDVR0OBBYE
FEAS/gjcvXZdA73xW3DirUrwyRhbMB8GA1UdIwQYMBaAFEAS/gjcvXZdA73xW3Di
rUrwyRhbMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAOhIoC26
47Jx2CHxBOJ3YczdOasIsGv4FqUhSHZucZGXAiARg6gjqmucFO5zT9g5ei42dAC+
Mg6WIvVNZQHTldtMSg==
-----END CERTIFICATE-----
";

    #[test]
    fn a_missing_or_empty_ca_file_says_which_setting_to_fix() {
        assert!(ca_file_roots(None, "x").unwrap().is_empty());
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.pem");
        let err = ca_file_roots(Some(&missing), "the mail account \"work\"").unwrap_err();
        assert_eq!(err.code().as_str(), "invalid_input");
        assert!(
            err.to_string()
                .contains("of the mail account \"work\" cannot be read"),
            "{err}"
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let err = ca_file_roots(Some(&empty), "x").unwrap_err();
        assert!(err.to_string().contains("holds no certificate"), "{err}");
    }

    #[test]
    fn the_client_trusts_an_extra_root_and_refuses_a_broken_one() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, TEST_CA).unwrap();
        let roots = ca_file_roots(Some(&ca), "x").unwrap();
        assert_eq!(roots.len(), 1);
        client_config(roots).unwrap();
        let broken = CertificateDer::from(b"not a certificate".to_vec());
        assert!(client_config(vec![broken]).is_err());
    }
}
