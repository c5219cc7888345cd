//! Which certificate authorities the proxy trusts for `https://` upstreams, and the rustls
//! client configuration made from them.
//!
//! The roots are Mozilla's (compiled in through `webpki-roots`, so a container without a
//! certificate bundle still reaches public APIs), the platform's store (`rustls-native-certs`:
//! the distribution's bundle on Linux), and any PEM files or directories the host names — the
//! CLI passes `SSL_CERT_FILE` and `SSL_CERT_DIR` that way. Cryptography is rustls's `ring`
//! provider: it builds with a C compiler alone, where `aws-lc-rs` also needs cmake or NASM.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use rustls::{ClientConfig, RootCertStore};
use tracing::debug;

use crate::error::CredentialError;

/// The variable that names an extra PEM bundle of trusted certificates (OpenSSL's name).
pub const SSL_CERT_FILE_VAR: &str = "SSL_CERT_FILE";
/// The variable that names extra directories of PEM certificates, `:`-separated (OpenSSL's).
pub const SSL_CERT_DIR_VAR: &str = "SSL_CERT_DIR";

/// The certificate authorities the proxy trusts when it connects to an `https://` upstream.
/// Read only when some upstream is `https://`, once, at [`crate::CredentialBroker::start`].
#[derive(Debug, Clone)]
pub struct UpstreamTrust {
    /// Mozilla's root programme, compiled in (`webpki-roots`).
    pub web_pki_roots: bool,
    /// The platform's store (`rustls-native-certs`). On Linux it follows OpenSSL: when
    /// `SSL_CERT_FILE` or `SSL_CERT_DIR` is set in the process, those stand in for the
    /// distribution's bundle.
    pub platform_roots: bool,
    /// PEM bundles whose certificates are trusted as well; each must exist and hold at least
    /// one certificate.
    pub extra_pem_files: Vec<PathBuf>,
    /// Directories whose PEM files are trusted as well (not searched recursively).
    pub extra_pem_dirs: Vec<PathBuf>,
}

impl Default for UpstreamTrust {
    /// Mozilla's roots and the platform's store; nothing read from the environment.
    fn default() -> Self {
        Self {
            web_pki_roots: true,
            platform_roots: true,
            extra_pem_files: Vec::new(),
            extra_pem_dirs: Vec::new(),
        }
    }
}

impl UpstreamTrust {
    /// The default roots plus what [`SSL_CERT_FILE_VAR`] and [`SSL_CERT_DIR_VAR`] name in this
    /// process's environment (empty values are ignored).
    pub fn from_env() -> Self {
        Self::default().with_env(|name| std::env::var_os(name))
    }

    /// Adds what `var` says `SSL_CERT_FILE` and `SSL_CERT_DIR` hold.
    pub fn with_env(mut self, var: impl Fn(&str) -> Option<OsString>) -> Self {
        if let Some(file) = var(SSL_CERT_FILE_VAR).filter(|value| !value.is_empty()) {
            self.extra_pem_files.push(PathBuf::from(file));
        }
        if let Some(dirs) = var(SSL_CERT_DIR_VAR) {
            self.extra_pem_dirs
                .extend(std::env::split_paths(&dirs).filter(|dir| !dir.as_os_str().is_empty()));
        }
        self
    }

    /// Trusts the certificates in `file` as well.
    pub fn with_pem_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.extra_pem_files.push(file.into());
        self
    }

    /// The roots, loaded and checked. Reads files: call it off the async workers.
    fn roots(&self) -> Result<RootCertStore, CredentialError> {
        let mut roots = RootCertStore::empty();
        if self.web_pki_roots {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        if self.platform_roots {
            let loaded = rustls_native_certs::load_native_certs();
            for error in &loaded.errors {
                debug!(%error, "platform certificate store: an entry could not be read");
            }
            let (added, ignored) = roots.add_parsable_certificates(loaded.certs);
            debug!(added, ignored, "platform certificate store loaded");
        }
        for file in &self.extra_pem_files {
            let certificates = read_pem_file(file)?;
            if certificates.is_empty() {
                return Err(trust_error(file, "it holds no PEM certificate"));
            }
            for certificate in certificates {
                roots.add(certificate).map_err(|error| {
                    trust_error(
                        file,
                        &format!("a certificate is not a usable root: {error}"),
                    )
                })?;
            }
        }
        for dir in &self.extra_pem_dirs {
            let loaded = rustls_native_certs::load_certs_from_paths(None, Some(dir));
            if let Some(error) = loaded.errors.first() {
                return Err(trust_error(dir, &error.to_string()));
            }
            let (added, ignored) = roots.add_parsable_certificates(loaded.certs);
            debug!(dir = %dir.display(), added, ignored, "certificate directory loaded");
        }
        if roots.is_empty() {
            return Err(CredentialError::NoTrustRoots);
        }
        Ok(roots)
    }
}

fn read_pem_file(file: &Path) -> Result<Vec<CertificateDer<'static>>, CredentialError> {
    CertificateDer::pem_file_iter(file)
        .map_err(|error| trust_error(file, &pem_reason(&error)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| trust_error(file, &pem_reason(&error)))
}

fn pem_reason(error: &rustls::pki_types::pem::Error) -> String {
    match error {
        rustls::pki_types::pem::Error::Io(error) => error.to_string(),
        other => format!("it is not a PEM file ({other:?})"),
    }
}

fn trust_error(path: &Path, reason: &str) -> CredentialError {
    CredentialError::TrustStore {
        path: path.to_path_buf(),
        reason: reason.to_owned(),
    }
}

/// The rustls configuration for the upstream client: `trust`'s roots when `load` (some
/// upstream is `https://`), else none (the connector then only ever makes plain connections).
/// TLS 1.2 and 1.3, the `ring` provider, no client certificate; the connector sets ALPN.
/// The daemon's fleet link uses the same roots for `https://` servers.
pub fn client_config(trust: &UpstreamTrust, load: bool) -> Result<ClientConfig, CredentialError> {
    let roots = if load {
        trust.roots()?
    } else {
        RootCertStore::empty()
    };
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| CredentialError::Tls(error.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_adds_files_and_directories() {
        let trust = UpstreamTrust::default().with_env(|name| match name {
            SSL_CERT_FILE_VAR => Some("/etc/extra.pem".into()),
            SSL_CERT_DIR_VAR => Some("/a::/b".into()),
            _ => None,
        });
        assert_eq!(trust.extra_pem_files, vec![PathBuf::from("/etc/extra.pem")]);
        assert_eq!(
            trust.extra_pem_dirs,
            vec![PathBuf::from("/a"), PathBuf::from("/b")]
        );
        let empty = UpstreamTrust::default().with_env(|_| Some(OsString::new()));
        assert!(empty.extra_pem_files.is_empty() && empty.extra_pem_dirs.is_empty());
    }

    #[test]
    fn a_missing_or_empty_bundle_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let only = |file: &Path| UpstreamTrust {
            web_pki_roots: false,
            platform_roots: false,
            ..UpstreamTrust::default().with_pem_file(file)
        };
        let error = client_config(&only(&missing), true).unwrap_err();
        assert!(error.to_string().contains("missing.pem"), "{error}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificates here\n").unwrap();
        let error = client_config(&only(&empty), true).unwrap_err();
        assert!(
            error.to_string().contains("holds no PEM certificate"),
            "{error}"
        );
        // Nothing is read when no upstream needs TLS.
        assert!(client_config(&only(&missing), false).is_ok());
    }

    #[test]
    fn no_roots_at_all_is_refused() {
        let trust = UpstreamTrust {
            web_pki_roots: false,
            platform_roots: false,
            ..UpstreamTrust::default()
        };
        assert!(matches!(
            client_config(&trust, true),
            Err(CredentialError::NoTrustRoots)
        ));
        assert!(client_config(&UpstreamTrust::default(), true).is_ok());
    }
}
