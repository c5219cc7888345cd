//! Baseline limits, before the MCP handler: body size, request deadline, per-IP and per-key
//! token buckets (spec 002 "Baseline limits").
//!
//! The buckets are in-process, per replica, as the spec says: `governor`'s keyed limiters with
//! capacity and burst = the per-minute limit, refilled at that many per minute. The keyed maps
//! stay bounded two ways: the per-key bucket exists only for keys that authenticated (so an
//! attacker cannot mint buckets with made-up keys; the map is at most the number of live keys),
//! and a sweeper drops every bucket that has refilled completely — which is the same as a fresh
//! one — once a minute (`retain_recent`), so the per-IP map holds only addresses seen in the
//! last minute.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::{Body, Bytes};
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt as _;

use crate::auth::Refusal;
use crate::config::ServerConfig;
use crate::credential::CredentialHash;

/// The two token buckets and the rule for a request's client address.
#[derive(Debug)]
pub struct RateLimits {
    per_ip: DefaultKeyedRateLimiter<IpAddr>,
    per_key: DefaultKeyedRateLimiter<CredentialHash>,
    trust_proxy: bool,
}

impl RateLimits {
    pub fn new(config: &ServerConfig) -> Arc<Self> {
        let quota =
            |per_min: u32| Quota::per_minute(NonZeroU32::new(per_min).unwrap_or(NonZeroU32::MIN));
        Arc::new(Self {
            per_ip: RateLimiter::keyed(quota(config.rate_limit_per_ip_per_min)),
            per_key: RateLimiter::keyed(quota(config.rate_limit_per_key_per_min)),
            trust_proxy: config.trust_proxy,
        })
    }

    /// Starts the once-a-minute sweep of full buckets; it ends when the limits are dropped.
    pub fn spawn_sweeper(self: &Arc<Self>) {
        let limits: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_secs(60));
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let Some(limits) = limits.upgrade() else {
                    return;
                };
                limits.per_ip.retain_recent();
                limits.per_ip.shrink_to_fit();
                limits.per_key.retain_recent();
                limits.per_key.shrink_to_fit();
            }
        });
    }

    /// The address the per-IP bucket is keyed by: the socket peer, or with
    /// `PADDOCK_SERVER_TRUST_PROXY=true` the proxy's `X-Real-IP` or first `X-Forwarded-For`
    /// entry (falling back to the peer). `None`: the IP limiter is skipped for this request,
    /// never a shared bucket.
    pub fn client_ip(&self, headers: &HeaderMap, peer: Option<SocketAddr>) -> Option<IpAddr> {
        if self.trust_proxy
            && let Some(forwarded) = forwarded_ip(headers)
        {
            return Some(forwarded);
        }
        peer.map(|peer| peer.ip())
    }

    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refusal> {
        self.per_ip
            .check_key(&ip)
            .map_err(|not_until| too_many(not_until.wait_time_from(DefaultClock::default().now())))
    }

    pub fn check_key(&self, key_hash: &CredentialHash) -> Result<(), Refusal> {
        self.per_key
            .check_key(key_hash)
            .map_err(|not_until| too_many(not_until.wait_time_from(DefaultClock::default().now())))
    }
}

/// `X-Real-IP`, else the first `X-Forwarded-For` entry.
fn forwarded_ip(headers: &HeaderMap) -> Option<IpAddr> {
    let parse = |text: &str| text.trim().parse::<IpAddr>().ok();
    headers
        .get("x-real-ip")
        .and_then(|value| value.to_str().ok())
        .and_then(parse)
        .or_else(|| {
            headers
                .get("x-forwarded-for")
                .and_then(|value| value.to_str().ok())
                .and_then(|list| list.split(',').next())
                .and_then(parse)
        })
}

/// Whole seconds, rounded up, never 0.
pub fn retry_after_secs(wait: Duration) -> u64 {
    let whole = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    whole.max(1)
}

fn too_many(wait: Duration) -> Refusal {
    Refusal {
        status: StatusCode::TOO_MANY_REQUESTS,
        code: "rate_limited",
        message: "too many requests; wait for `Retry-After` seconds and try again",
        challenge: None,
        retry_after_secs: Some(retry_after_secs(wait)),
    }
}

pub fn too_large() -> Refusal {
    Refusal {
        status: StatusCode::PAYLOAD_TOO_LARGE,
        code: "payload_too_large",
        message: "the request body is over this server's limit (`PADDOCK_SERVER_BODY_LIMIT_BYTES`)",
        challenge: None,
        retry_after_secs: None,
    }
}

pub fn timed_out() -> Refusal {
    Refusal {
        status: StatusCode::GATEWAY_TIMEOUT,
        code: "timeout",
        message: "no answer within this server's deadline (`PADDOCK_SERVER_REQUEST_TIMEOUT_MS`); \
                  try again, or split the work",
        challenge: None,
        retry_after_secs: None,
    }
}

/// Refuses a declared `Content-Length` over `limit` before anything is read.
pub fn check_declared_length(headers: &HeaderMap, limit: usize) -> Result<(), Refusal> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > limit as u64 => Err(too_large()),
        _ => Ok(()),
    }
}

/// Reads the whole body, at most `limit` bytes (a chunked body without `Content-Length` is
/// counted as it arrives).
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, Refusal> {
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(_) => Err(Refusal::bad_request(
            "the request body could not be read; send it again",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_rounds_up_and_is_never_zero() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1000)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(30)), 30);
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, http::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn the_client_address_follows_trust_proxy() {
        let config = |trust_proxy| {
            let mut config = unreachable_config();
            config.trust_proxy = trust_proxy;
            config
        };
        let peer: SocketAddr = ([10, 0, 0, 1], 5000).into();
        let forwarded = headers(&[("x-forwarded-for", "203.0.113.7, 10.0.0.2")]);
        let real = headers(&[
            ("x-real-ip", "198.51.100.9"),
            ("x-forwarded-for", "203.0.113.7"),
        ]);
        let off = RateLimits::new(&config(false));
        assert_eq!(off.client_ip(&forwarded, Some(peer)), Some(peer.ip()));
        assert_eq!(off.client_ip(&forwarded, None), None);
        let on = RateLimits::new(&config(true));
        assert_eq!(
            on.client_ip(&forwarded, Some(peer)),
            "203.0.113.7".parse().ok()
        );
        assert_eq!(on.client_ip(&real, None), "198.51.100.9".parse().ok());
        assert_eq!(
            on.client_ip(&headers(&[("x-forwarded-for", "garbage")]), Some(peer)),
            Some(peer.ip())
        );
    }

    fn unreachable_config() -> ServerConfig {
        ServerConfig {
            listen: ([127, 0, 0, 1], 0).into(),
            database: crate::store::DatabaseUrl::Sqlite("/nonexistent".into()),
            state_dir: "/nonexistent".into(),
            policy_profile: paddock_tools::PolicyProfile::NoCommerce,
            resource_url: "http://localhost".to_owned(),
            body_limit_bytes: 1,
            request_timeout: Duration::from_secs(1),
            rate_limit_per_key_per_min: 1,
            rate_limit_per_ip_per_min: 1,
            trust_proxy: false,
            tls: None,
        }
    }

    #[test]
    fn a_bucket_holds_its_burst_then_says_when_to_retry() {
        let mut config = unreachable_config();
        config.rate_limit_per_ip_per_min = 3;
        let limits = RateLimits::new(&config);
        let ip: IpAddr = [192, 0, 2, 1].into();
        for _ in 0..3 {
            assert!(limits.check_ip(ip).is_ok());
        }
        let refusal = limits.check_ip(ip).err();
        assert_eq!(
            refusal.as_ref().map(|refusal| refusal.status),
            Some(StatusCode::TOO_MANY_REQUESTS)
        );
        assert!(refusal.and_then(|refusal| refusal.retry_after_secs) >= Some(1));
        assert!(limits.check_ip([192, 0, 2, 2].into()).is_ok());
    }
}
