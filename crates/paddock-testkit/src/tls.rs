//! TLS for test servers: a certificate authority made at test time (rcgen), server
//! certificates it signs, rustls server configurations with them, and the CA's PEM file for a
//! client's `SSL_CERT_FILE`. Nothing here is trusted by anything but the tests that ask.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// ALPN for a server that speaks HTTP/1.1 only.
pub const ALPN_HTTP1: &[&[u8]] = &[b"http/1.1"];
/// ALPN for a server that prefers HTTP/2 and also speaks HTTP/1.1.
pub const ALPN_H2_HTTP1: &[&[u8]] = &[b"h2", b"http/1.1"];

/// The names a local test server answers on.
pub const LOCALHOST_NAMES: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// A throwaway certificate authority; its certificate is in a PEM file that lives as long as
/// the value.
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    pem_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("pem_path", &self.pem_path)
            .finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new CA with a fresh P-256 key, named `Paddock test CA <pid>-<n>`: a verifier finds a
    /// certificate's issuer by name, so two CAs in one test must not share one.
    pub fn new() -> anyhow::Result<Self> {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "Paddock test CA {}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        );
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        let dir = tempfile::Builder::new()
            .prefix("paddock-test-ca-")
            .tempdir()?;
        let pem_path = dir.path().join("ca.pem");
        std::fs::write(&pem_path, issuer.pem())
            .with_context(|| format!("writing {}", pem_path.display()))?;
        Ok(Self {
            issuer,
            pem_path,
            _dir: dir,
        })
    }

    /// The CA certificate as PEM, for `SSL_CERT_FILE`.
    pub fn pem_path(&self) -> &Path {
        &self.pem_path
    }

    pub fn certificate(&self) -> CertificateDer<'static> {
        self.issuer.der().clone()
    }

    /// A server configuration whose certificate, signed by this CA, names `names` (DNS names
    /// or IP addresses) and which offers `alpn` (see [`ALPN_HTTP1`], [`ALPN_H2_HTTP1`]).
    pub fn server_config(
        &self,
        names: &[&str],
        alpn: &[&[u8]],
    ) -> anyhow::Result<Arc<ServerConfig>> {
        let mut params = CertificateParams::new(
            names
                .iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>(),
        )?;
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, *first);
        }
        params.is_ca = IsCa::NoCa;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let leaf = params.signed_by(&key, &self.issuer)?;
        let chain = vec![leaf.der().clone(), self.certificate()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config =
            ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()?
                .with_no_client_auth()
                .with_single_cert(chain, key)?;
        config.alpn_protocols = alpn.iter().map(|protocol| protocol.to_vec()).collect();
        Ok(Arc::new(config))
    }

    /// A certificate for `names` signed by this CA and its key, written as PEM files in `dir`
    /// (for a server that reads its own, such as `paddock server`): `(cert, key)`.
    pub fn write_server_pem(
        &self,
        names: &[&str],
        dir: &Path,
    ) -> anyhow::Result<(PathBuf, PathBuf)> {
        let mut params = CertificateParams::new(
            names
                .iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>(),
        )?;
        params.is_ca = IsCa::NoCa;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let leaf = params.signed_by(&key, &self.issuer)?;
        let cert_path = dir.join("server-cert.pem");
        let key_path = dir.join("server-key.pem");
        std::fs::write(&cert_path, format!("{}{}", leaf.pem(), self.issuer.pem()))?;
        std::fs::write(&key_path, key.serialize_pem())?;
        Ok((cert_path, key_path))
    }

    /// [`Self::server_config`] for [`LOCALHOST_NAMES`].
    pub fn localhost_config(&self, alpn: &[&[u8]]) -> anyhow::Result<Arc<ServerConfig>> {
        self.server_config(LOCALHOST_NAMES, alpn)
    }
}
