//! The server's credentials: API keys (`pdk_sk_…`), pairing tokens (`pdk_pt_…`), machine keys
//! (`pdk_mk_…`) and runner keys (`pdk_rk_…`). Each is its prefix and 256 random bits
//! (43 characters of unpadded base64url); only its SHA-256 is ever stored.

use base64::Engine as _;
use paddock_secrets::SecretString;
use sha2::{Digest as _, Sha256};

/// The random part: 32 bytes, 43 characters of unpadded base64url.
const RANDOM_BYTES: usize = 32;
const RANDOM_CHARS: usize = 43;

/// Which credential a value is, by its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    ApiKey,
    Pairing,
    Machine,
    Runner,
}

impl CredentialKind {
    pub const fn prefix(self) -> &'static str {
        match self {
            Self::ApiKey => "pdk_sk_",
            Self::Pairing => "pdk_pt_",
            Self::Machine => "pdk_mk_",
            Self::Runner => "pdk_rk_",
        }
    }

    pub const fn describe(self) -> &'static str {
        match self {
            Self::ApiKey => "API key",
            Self::Pairing => "pairing token",
            Self::Machine => "machine key",
            Self::Runner => "runner key",
        }
    }
}

/// A credential's stored form: the hex SHA-256 of its whole text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CredentialHash(String);

impl CredentialHash {
    pub fn of(value: &str) -> Self {
        let digest = Sha256::digest(value.as_bytes());
        Self(digest.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// A hash read back from the store.
    pub fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Mints a new credential of `kind`.
pub fn mint(kind: CredentialKind) -> Result<SecretString, getrandom::Error> {
    let mut bytes = [0u8; RANDOM_BYTES];
    getrandom::fill(&mut bytes)?;
    let random = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    Ok(SecretString::new(format!("{}{random}", kind.prefix())))
}

/// Whether `value` has the shape of a credential of `kind` (prefix, then exactly 43 base64url
/// characters). A value of the wrong shape is never looked up.
/// The `Authorization: Bearer …` value of `headers` when it is a well-formed `kind` credential.
pub fn bearer(headers: &http::HeaderMap, kind: CredentialKind) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .filter(|key| well_formed(kind, key))
}

pub fn well_formed(kind: CredentialKind, value: &str) -> bool {
    value.strip_prefix(kind.prefix()).is_some_and(|random| {
        random.len() == RANDOM_CHARS
            && random
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    })
}

/// A short, non-secret id for a record: `prefix` and 12 hex characters (48 random bits).
pub fn record_id(prefix: &str) -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes)?;
    Ok(format!(
        "{prefix}{}",
        bytes
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_credentials_are_well_formed_and_distinct() {
        for kind in [
            CredentialKind::ApiKey,
            CredentialKind::Pairing,
            CredentialKind::Machine,
            CredentialKind::Runner,
        ] {
            let one = mint(kind).unwrap_or_else(|_| SecretString::new(""));
            let two = mint(kind).unwrap_or_else(|_| SecretString::new(""));
            assert!(well_formed(kind, one.expose_secret()), "{kind:?}");
            assert_ne!(one.expose_secret(), two.expose_secret());
            assert_ne!(
                CredentialHash::of(one.expose_secret()),
                CredentialHash::of(two.expose_secret())
            );
        }
    }

    #[test]
    fn shape_is_checked() {
        let good = format!("pdk_sk_{}", "a".repeat(43));
        assert!(well_formed(CredentialKind::ApiKey, &good));
        assert!(!well_formed(CredentialKind::Machine, &good));
        assert!(!well_formed(CredentialKind::ApiKey, "pdk_sk_short"));
        assert!(!well_formed(
            CredentialKind::ApiKey,
            &format!("pdk_sk_{}!", "a".repeat(42))
        ));
    }
}
