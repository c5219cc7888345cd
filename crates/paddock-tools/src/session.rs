//! Session keys: the one key that binds tool calls to a session (`x-paddock-session-id`, the
//! in-band `__mcpSessionId` argument, or a socket connection's id).

use std::fmt;

use crate::error::ToolError;

/// The header that carries the session key on HTTP.
pub const SESSION_HEADER: &str = "x-paddock-session-id";
/// The in-band argument that carries the session key; removed before a tool sees its arguments.
pub const IN_BAND_ARGUMENT: &str = "__mcpSessionId";
const MAX_LEN: usize = 128;

/// A validated session key: 1 to 128 characters of `A-Z a-z 0-9 . _ : -`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey(String);

impl SessionKey {
    pub fn parse(text: &str) -> Result<Self, ToolError> {
        let valid = !text.is_empty()
            && text.len() <= MAX_LEN
            && text.bytes().all(|byte| {
                byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b':' | b'-')
            });
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(ToolError::invalid_input(format!(
                "session id must be 1 to {MAX_LEN} characters of letters, digits, `.`, `_`, `:` or `-`"
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates() {
        assert!(SessionKey::parse("abc-123:x_y.z").is_ok());
        assert!(SessionKey::parse("").is_err());
        assert!(SessionKey::parse("has space").is_err());
        assert!(SessionKey::parse("ünï").is_err());
        assert!(SessionKey::parse(&"a".repeat(129)).is_err());
    }
}
