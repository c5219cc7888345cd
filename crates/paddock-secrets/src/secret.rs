//! A string that must never be printed: tokens, vouchers, keys.

use std::fmt;

use subtle::ConstantTimeEq;

/// A secret string. `Debug` and `Display` print `[redacted]`; the raw value is only reachable
/// through [`SecretString::expose_secret`], which is easy to grep for in review.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The raw secret. Every caller is a place where the secret leaves Paddock's control.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }

    /// Compares with `candidate` in time that depends only on the lengths, never on the content.
    pub fn constant_time_eq(&self, candidate: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(candidate).into()
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString([redacted])")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_never_shows_the_value() {
        let secret = SecretString::new("hunter2-very-secret");
        assert_eq!(format!("{secret}"), "[redacted]");
        assert!(!format!("{secret:?}").contains("hunter2"));
        assert!(!format!("{:#?}", Some(&secret)).contains("hunter2"));
        assert_eq!(secret.expose_secret(), "hunter2-very-secret");
    }

    #[test]
    fn constant_time_eq_matches_only_the_same_bytes() {
        let secret = SecretString::new("abc");
        assert!(secret.constant_time_eq(b"abc"));
        assert!(!secret.constant_time_eq(b"abd"));
        assert!(!secret.constant_time_eq(b"ab"));
        assert!(!secret.constant_time_eq(b""));
    }
}
