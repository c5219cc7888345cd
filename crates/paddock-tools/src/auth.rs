//! Who is calling: the auth context every tool call carries (spec 002 "Auth context"), with two
//! kinds of our own: the machine's owner on a local transport, and an agent Paddock launched.

use std::time::SystemTime;

/// The kind of credential behind a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthKind {
    ApiKey,
    Oauth,
    Machine,
    /// The user who owns the daemon, over the control socket or with the daemon's bearer token.
    LocalOwner,
    /// An agent launched by Paddock, holding a voucher.
    Agent,
}

impl AuthKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApiKey => "api_key",
            Self::Oauth => "oauth",
            Self::Machine => "machine",
            Self::LocalOwner => "local_owner",
            Self::Agent => "agent",
        }
    }

    /// OAuth, machine and agent credentials always act for an owner, so they must name one.
    pub fn requires_owner(self) -> bool {
        matches!(self, Self::Oauth | Self::Machine | Self::Agent)
    }
}

/// The caller. Never holds the credential itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthContext {
    kind: AuthKind,
    subject: String,
    owner_id: Option<String>,
    client_id: Option<String>,
    scopes: Vec<String>,
    token_id: Option<String>,
    expires_at: Option<SystemTime>,
}

/// Fields for [`AuthContext::new`].
#[derive(Debug, Clone, Default)]
pub struct AuthContextInit {
    pub subject: String,
    pub owner_id: Option<String>,
    pub client_id: Option<String>,
    pub scopes: Vec<String>,
    pub token_id: Option<String>,
    pub expires_at: Option<SystemTime>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthContextError {
    #[error("an auth context of kind `{0}` must name its owner (`owner_id`)")]
    MissingOwner(&'static str),
    #[error("an auth context needs a non-empty subject")]
    EmptySubject,
}

impl AuthContext {
    pub fn new(kind: AuthKind, init: AuthContextInit) -> Result<Self, AuthContextError> {
        if init.subject.is_empty() {
            return Err(AuthContextError::EmptySubject);
        }
        if kind.requires_owner() && init.owner_id.as_deref().is_none_or(str::is_empty) {
            return Err(AuthContextError::MissingOwner(kind.as_str()));
        }
        Ok(Self {
            kind,
            subject: init.subject,
            owner_id: init.owner_id,
            client_id: init.client_id,
            scopes: init.scopes,
            token_id: init.token_id,
            expires_at: init.expires_at,
        })
    }

    /// The daemon's owner, identified by `subject` (for example `uid:1000`).
    pub fn local_owner(subject: impl Into<String>) -> Self {
        Self {
            kind: AuthKind::LocalOwner,
            subject: subject.into(),
            owner_id: None,
            client_id: None,
            scopes: Vec::new(),
            token_id: None,
            expires_at: None,
        }
    }

    pub fn kind(&self) -> AuthKind {
        self.kind
    }

    pub fn subject(&self) -> &str {
        &self.subject
    }

    pub fn owner_id(&self) -> Option<&str> {
        self.owner_id.as_deref()
    }

    pub fn client_id(&self) -> Option<&str> {
        self.client_id.as_deref()
    }

    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    pub fn token_id(&self) -> Option<&str> {
        self.token_id.as_deref()
    }

    pub fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_is_required_where_the_spec_requires_it() {
        let init = |owner: Option<&str>| AuthContextInit {
            subject: "s".into(),
            owner_id: owner.map(str::to_owned),
            ..Default::default()
        };
        assert!(AuthContext::new(AuthKind::ApiKey, init(None)).is_ok());
        for kind in [AuthKind::Oauth, AuthKind::Machine, AuthKind::Agent] {
            assert_eq!(
                AuthContext::new(kind, init(None)),
                Err(AuthContextError::MissingOwner(kind.as_str()))
            );
            assert!(AuthContext::new(kind, init(Some("org-1"))).is_ok());
        }
        assert_eq!(
            AuthContext::new(AuthKind::ApiKey, AuthContextInit::default()),
            Err(AuthContextError::EmptySubject)
        );
    }
}
