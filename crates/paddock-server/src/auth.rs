//! The credential taxonomy of spec 002's "Auth" table, applied before the MCP handler.
//!
//! | request | answer |
//! |---|---|
//! | no credential | 401 + `WWW-Authenticate: Bearer resource_metadata="…"` |
//! | `Authorization` that is not `Bearer <token>` | 400 |
//! | both `Authorization` and `x-paddock-api-key` | 400 |
//! | a bearer that is not `pdk_sk_…` | 400 |
//! | a `pdk_sk_…` value of the wrong shape | 401 (never looked up) |
//! | an unknown or revoked key | 401 |
//!
//! A `pdk_sk_` value of the wrong shape is a 401, not a 400: the request itself is well formed
//! (the right header, the right kind of credential), only the key cannot be valid, which is
//! exactly what "unknown key" says; answering it like an unknown key also tells a prober
//! nothing about which check refused it.

use std::sync::Arc;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use paddock_tools::auth::AuthContextInit;
use paddock_tools::{AuthContext, AuthKind, Policy, PolicyProfile};

use crate::credential::{self, CredentialHash, CredentialKind};
use crate::store::{ApiKeyRecord, ServerStore};

/// The header for clients that cannot set `Authorization` (spec 002's
/// `x-mobilerun-cloud-api-key`).
pub const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-paddock-api-key");

/// A refused request: its status, a short message that says what to do, and for a 401 the
/// metadata URL for `WWW-Authenticate`. Never carries the credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: StatusCode,
    /// A machine-readable code: `invalid_request`, `unauthorized`, `rate_limited`, …
    pub code: &'static str,
    pub message: &'static str,
    /// `WWW-Authenticate` for a 401.
    pub challenge: Option<String>,
    /// `Retry-After` seconds for a 429.
    pub retry_after_secs: Option<u64>,
}

impl Refusal {
    pub fn bad_request(message: &'static str) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_request",
            message,
            challenge: None,
            retry_after_secs: None,
        }
    }

    pub fn unauthorized(metadata_url: &str, message: &'static str) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            message,
            challenge: Some(format!("Bearer resource_metadata=\"{metadata_url}\"")),
            retry_after_secs: None,
        }
    }

    pub fn internal(message: &'static str) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal_error",
            message,
            challenge: None,
            retry_after_secs: None,
        }
    }

    /// The HTTP answer: `{"error":{"code":…,"message":…}}`.
    pub fn into_response(self) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        let body = serde_json::json!({
            "error": { "code": self.code, "message": self.message }
        })
        .to_string();
        let mut response = (self.status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(challenge) = self
            .challenge
            .and_then(|value| HeaderValue::from_str(&value).ok())
        {
            headers.insert(header::WWW_AUTHENTICATE, challenge);
        }
        if let Some(seconds) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

const NO_CREDENTIAL: &str = "this server needs an API key: send `Authorization: Bearer pdk_sk_…` \
or `x-paddock-api-key: pdk_sk_…` (an operator creates one with `paddock server keys create`)";
const MALFORMED: &str = "the `Authorization` header must be exactly `Bearer <token>`, given once";
const MALFORMED_HEADER: &str =
    "the `x-paddock-api-key` header must be one non-empty value, given once";
const BOTH: &str = "send the API key in `Authorization` or in `x-paddock-api-key`, not both";
const NOT_AN_API_KEY: &str = "only Paddock API keys (`pdk_sk_…`) are accepted as bearer tokens; \
OAuth bearer tokens are not supported";
const INVALID_KEY: &str =
    "the API key is not valid (unknown, revoked or mistyped); ask an operator for a new one";

/// The credential a request presents, checked for shape only.
#[derive(Debug, PartialEq, Eq)]
pub enum Presented<'a> {
    /// A `pdk_sk_…` value of the right shape, to look up.
    ApiKey(&'a str),
}

/// Applies the header rows of the table; `Ok` is a well-formed API key to look up.
pub fn presented<'a>(headers: &'a HeaderMap, metadata_url: &str) -> Result<Presented<'a>, Refusal> {
    let mut authorization = headers.get_all(header::AUTHORIZATION).iter();
    let mut api_key = headers.get_all(API_KEY_HEADER).iter();
    let (first_authorization, second_authorization) = (authorization.next(), authorization.next());
    let (first_api_key, second_api_key) = (api_key.next(), api_key.next());
    let value = match (first_authorization, first_api_key) {
        (None, None) => return Err(Refusal::unauthorized(metadata_url, NO_CREDENTIAL)),
        (Some(_), Some(_)) => return Err(Refusal::bad_request(BOTH)),
        (Some(value), None) => {
            if second_authorization.is_some() {
                return Err(Refusal::bad_request(MALFORMED));
            }
            let token = bearer_token(value).ok_or_else(|| Refusal::bad_request(MALFORMED))?;
            if !token.starts_with(CredentialKind::ApiKey.prefix()) {
                return Err(Refusal::bad_request(NOT_AN_API_KEY));
            }
            token
        }
        (None, Some(value)) => {
            if second_api_key.is_some() {
                return Err(Refusal::bad_request(MALFORMED_HEADER));
            }
            match value.to_str() {
                Ok(text) if !text.trim().is_empty() => text.trim(),
                _ => return Err(Refusal::bad_request(MALFORMED_HEADER)),
            }
        }
    };
    if credential::well_formed(CredentialKind::ApiKey, value) {
        Ok(Presented::ApiKey(value))
    } else {
        Err(Refusal::unauthorized(metadata_url, INVALID_KEY))
    }
}

/// `Bearer <token>`: the scheme case-insensitively, one space, one token without spaces.
fn bearer_token(value: &HeaderValue) -> Option<&str> {
    let text = value.to_str().ok()?;
    let (scheme, token) = text.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains([' ', '\t']))
        .then_some(token)
}

/// An authenticated caller.
#[derive(Debug, Clone)]
pub struct Caller {
    pub auth: AuthContext,
    pub profile: PolicyProfile,
    /// The key's stored hash, the per-key rate limiter's key.
    pub key_hash: CredentialHash,
    /// The key's name (`keys create --name`), which the bots it messages see as the sender.
    pub key_name: String,
}

/// How often a replica asks the store whether any key was revoked.
pub const KEY_EPOCH_POLL: std::time::Duration = std::time::Duration::from_millis(100);
/// The most live keys a replica remembers; past it the cache starts over.
const KEY_CACHE_ENTRIES: usize = 4096;

/// The live API keys this replica looked up, by hash (never by value), while the store's key
/// epoch has not moved. Every revocation moves the epoch in its own transaction, and the
/// epoch is polled every [`KEY_EPOCH_POLL`], so a revocation made by any process (`paddock
/// server keys revoke`, another replica) holds here within that interval; unknown keys are
/// never cached, so a new key works at once.
#[derive(Debug, Default)]
pub struct KeyCache {
    entries: std::sync::Mutex<CacheState>,
}

/// The cached keys and how many times they were forgotten: a lookup that began before a
/// forgetting must not put its (possibly revoked) answer back.
#[derive(Debug, Default)]
struct CacheState {
    generation: u64,
    keys: std::collections::HashMap<CredentialHash, ApiKeyRecord>,
}

impl KeyCache {
    /// The cached record, or the generation to hand [`KeyCache::put`] after a lookup.
    fn get(&self, hash: &CredentialHash) -> Result<ApiKeyRecord, u64> {
        let state = self.lock();
        state.keys.get(hash).cloned().ok_or(state.generation)
    }

    /// Remembers a live key looked up since `generation`, unless the cache was forgotten since.
    fn put(&self, generation: u64, hash: CredentialHash, record: ApiKeyRecord) {
        let mut state = self.lock();
        if state.generation != generation {
            return;
        }
        if state.keys.len() >= KEY_CACHE_ENTRIES {
            state.keys.clear();
        }
        state.keys.insert(hash, record);
    }

    fn clear(&self) {
        let mut state = self.lock();
        state.generation += 1;
        state.keys.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.entries
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Polls the store's key epoch while the server runs and forgets every key when it moves
    /// (or cannot be read: then nothing is trusted from memory).
    pub fn spawn_epoch_watch(self: &Arc<Self>, store: Arc<dyn ServerStore>) {
        let cache = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut seen: Option<i64> = None;
            let mut tick = tokio::time::interval(KEY_EPOCH_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(cache) = cache.upgrade() else { return };
                match store.key_epoch().await {
                    Ok(epoch) if seen == Some(epoch) => {}
                    Ok(epoch) => {
                        cache.clear();
                        seen = Some(epoch);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "could not read the key epoch; forgetting cached keys");
                        cache.clear();
                        seen = None;
                    }
                }
            }
        });
    }
}

/// Looks the key up by its hash (a lookup by hash leaks nothing of the key through timing),
/// in `cache` first.
pub async fn authenticate(
    store: &Arc<dyn ServerStore>,
    cache: &KeyCache,
    key: &str,
    metadata_url: &str,
) -> Result<Caller, Refusal> {
    let hash = CredentialHash::of(key);
    let record = match cache.get(&hash) {
        Ok(record) => Some(record),
        Err(generation) => match store.api_key(hash.clone()).await {
            Ok(record) => {
                if let Some(live) = record
                    .as_ref()
                    .filter(|record| record.revoked_at_ms.is_none())
                {
                    cache.put(generation, hash.clone(), live.clone());
                }
                record
            }
            Err(error) => {
                tracing::warn!(%error, "could not look up an API key");
                return Err(Refusal::internal(
                    "the server could not check the API key; try again later",
                ));
            }
        },
    };
    let Some(record) = record.filter(|record| record.revoked_at_ms.is_none()) else {
        return Err(Refusal::unauthorized(metadata_url, INVALID_KEY));
    };
    let Ok(profile) = record.profile.parse::<PolicyProfile>() else {
        tracing::warn!(key_id = %record.id, profile = %record.profile, "an API key has an unknown profile; refusing it");
        return Err(Refusal::unauthorized(metadata_url, INVALID_KEY));
    };
    let auth = AuthContext::new(
        AuthKind::ApiKey,
        AuthContextInit {
            subject: record.id.clone(),
            token_id: Some(record.id),
            ..AuthContextInit::default()
        },
    )
    .map_err(|_| Refusal::internal("the server could not build the caller's context"))?;
    Ok(Caller {
        auth,
        profile,
        key_hash: hash,
        key_name: record.name,
    })
}

/// The deployment's policy narrowed by each key profile, computed once (a profile's policy
/// does not change while the server runs; what can change, revocation, is asked per request).
#[derive(Debug)]
pub struct ProfilePolicies {
    readonly: Arc<Policy>,
    no_commerce: Arc<Policy>,
    full: Arc<Policy>,
}

impl ProfilePolicies {
    pub fn new(deployment: &Policy, catalog: &[paddock_tools::catalog::CatalogTool]) -> Self {
        let narrowed =
            |profile| Arc::new(deployment.intersect(&Policy::for_profile(profile, catalog)));
        Self {
            readonly: narrowed(PolicyProfile::Readonly),
            no_commerce: narrowed(PolicyProfile::NoCommerce),
            full: narrowed(PolicyProfile::Full),
        }
    }

    pub fn get(&self, profile: PolicyProfile) -> Arc<Policy> {
        match profile {
            PolicyProfile::Readonly => self.readonly.clone(),
            PolicyProfile::NoCommerce => self.no_commerce.clone(),
            PolicyProfile::Full => self.full.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_that_began_before_a_revocation_is_not_remembered() {
        let cache = KeyCache::default();
        let record = ApiKeyRecord {
            id: "k_1".into(),
            name: "ci".into(),
            profile: "readonly".into(),
            created_at_ms: 0,
            revoked_at_ms: None,
        };
        let hash = CredentialHash::of("pdk_sk_one");
        let Err(generation) = cache.get(&hash) else {
            panic!("an empty cache had the key");
        };
        // The epoch moved while the lookup was in the database.
        cache.clear();
        cache.put(generation, hash.clone(), record.clone());
        let Err(now) = cache.get(&hash) else {
            panic!("a lookup from before the revocation was remembered");
        };
        cache.put(now, hash.clone(), record.clone());
        assert_eq!(cache.get(&hash), Ok(record));
        cache.clear();
        assert!(cache.get(&hash).is_err(), "a revocation forgets every key");
    }

    const METADATA: &str = "https://fleet.example/.well-known/oauth-protected-resource";

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                map.append(name, value);
            }
        }
        map
    }

    fn status(pairs: &[(&str, &str)]) -> u16 {
        match presented(&headers(pairs), METADATA) {
            Ok(_) => 200,
            Err(refusal) => refusal.status.as_u16(),
        }
    }

    #[test]
    fn the_table() {
        let key = format!("pdk_sk_{}", "a".repeat(43));
        let bearer = format!("Bearer {key}");
        assert_eq!(status(&[]), 401);
        assert_eq!(status(&[("authorization", &bearer)]), 200);
        assert_eq!(status(&[("authorization", &format!("bearer {key}"))]), 200);
        assert_eq!(status(&[("x-paddock-api-key", &key)]), 200);
        assert_eq!(status(&[("authorization", &key)]), 400);
        assert_eq!(status(&[("authorization", "Basic dXNlcjpwYXNz")]), 400);
        assert_eq!(status(&[("authorization", "Bearer ")]), 400);
        assert_eq!(status(&[("authorization", "Bearer a b")]), 400);
        assert_eq!(
            status(&[("authorization", &bearer), ("authorization", &bearer)]),
            400
        );
        assert_eq!(
            status(&[("authorization", &bearer), ("x-paddock-api-key", &key)]),
            400
        );
        assert_eq!(status(&[("authorization", "Bearer eyJhbGciOi.x.y")]), 400);
        assert_eq!(status(&[("authorization", "Bearer pdk_sk_short")]), 401);
        assert_eq!(status(&[("x-paddock-api-key", "pdk_sk_short")]), 401);
        assert_eq!(status(&[("x-paddock-api-key", "")]), 400);
    }

    #[test]
    fn a_401_points_to_the_configured_metadata_and_no_answer_echoes_the_credential() {
        let refusal = presented(&headers(&[]), METADATA).err();
        assert_eq!(
            refusal.and_then(|refusal| refusal.challenge),
            Some(format!("Bearer resource_metadata=\"{METADATA}\""))
        );
        for value in ["Bearer pdk_sk_secretvalue", "Bearer other-secret-token"] {
            let refusal = presented(&headers(&[("authorization", value)]), METADATA).err();
            let message = refusal.map(|refusal| refusal.message).unwrap_or_default();
            assert!(!message.is_empty(), "{value} passed");
            assert!(!message.contains("secret"), "{message}");
        }
    }

    proptest::proptest! {
        /// Whatever the headers carry, the answer is one of the table's, a value passes only
        /// when it has an API key's shape, and no refusal repeats what was sent.
        #[test]
        fn any_header_value_gets_a_table_answer(
            value in "[ -~]{0,80}",
            channel in 0usize..3,
        ) {
            let pairs: Vec<(&str, String)> = match channel {
                0 => vec![("authorization", value.clone())],
                1 => vec![("x-paddock-api-key", value.clone())],
                _ => vec![("authorization", value.clone()), ("x-paddock-api-key", value.clone())],
            };
            let borrowed: Vec<(&str, &str)> =
                pairs.iter().map(|(name, value)| (*name, value.as_str())).collect();
            match presented(&headers(&borrowed), METADATA) {
                Ok(Presented::ApiKey(key)) => {
                    proptest::prop_assert!(channel < 2);
                    proptest::prop_assert!(credential::well_formed(CredentialKind::ApiKey, key));
                }
                Err(refusal) => {
                    proptest::prop_assert!(matches!(refusal.status.as_u16(), 400 | 401));
                    if value.trim().len() > 8 {
                        proptest::prop_assert!(!refusal.message.contains(value.trim()));
                    }
                }
            }
        }
    }
}
