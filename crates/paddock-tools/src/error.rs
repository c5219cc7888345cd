//! Typed tool errors, rendered uniformly as `[code] message` whatever produced them.

use std::fmt;

/// The error codes a tool result can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolErrorCode {
    NotFound,
    Forbidden,
    RateLimited,
    UpstreamError,
    InvalidInput,
    UnsupportedPlatform,
    DeviceLost,
    Unavailable,
    /// The caller cancelled the call (`notifications/cancelled`).
    Cancelled,
    Internal,
}

impl ToolErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Forbidden => "forbidden",
            Self::RateLimited => "rate_limited",
            Self::UpstreamError => "upstream_error",
            Self::InvalidInput => "invalid_input",
            Self::UnsupportedPlatform => "unsupported_platform",
            Self::DeviceLost => "device_lost",
            Self::Unavailable => "unavailable",
            Self::Cancelled => "cancelled",
            Self::Internal => "internal",
        }
    }
}

/// An error a tool returns to the client as an `isError` result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ToolError {
    pub code: ToolErrorCode,
    pub message: String,
}

impl ToolError {
    pub fn new(code: ToolErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ToolErrorCode::InvalidInput, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ToolErrorCode::NotFound, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ToolErrorCode::Forbidden, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ToolErrorCode::Internal, message)
    }

    pub fn is_forbidden(&self) -> bool {
        self.code == ToolErrorCode::Forbidden
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code.as_str(), self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_code_then_message() {
        let error = ToolError::new(ToolErrorCode::UnsupportedPlatform, "`tapOn` needs web");
        assert_eq!(
            error.to_string(),
            "[unsupported_platform] `tapOn` needs web"
        );
    }
}
