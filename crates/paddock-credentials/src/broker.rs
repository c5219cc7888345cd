//! The broker: mints per-launch vouchers, keeps them only as digests, revokes them, and runs
//! one loopback proxy listener per upstream. It is the only object a host needs.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use paddock_secrets::SecretString;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::capability::Capabilities;
use crate::client;
use crate::config::{CredentialBrokerConfig, Upstream, UpstreamConfig, Validated};
use crate::error::CredentialError;
use crate::launch_env::{EnvValue, LaunchEnv, LaunchEnvSpec};
use crate::proxy;

/// The variable that tells a launch where the proxy is.
pub const PROXY_URL_VAR: &str = "PADDOCK_PROXY_URL";
/// The variable that tells a launch which file holds its voucher.
pub const PROXY_TOKEN_FILE_VAR: &str = "PADDOCK_PROXY_TOKEN_FILE";

/// A freshly minted voucher. The secret is redacted in `Debug`; the file holds it too.
#[derive(Debug, Clone)]
pub struct Voucher {
    /// The public id (`v-` and 12 hex digits): safe to log, list and revoke by.
    pub id: String,
    pub launch: String,
    /// The 0600 file in the launch's directory that holds the voucher.
    pub file: PathBuf,
    pub capabilities: Capabilities,
    secret: SecretString,
}

impl Voucher {
    /// The voucher itself (`vch_…`). Every caller hands it to exactly one launch.
    pub fn expose_secret(&self) -> &str {
        self.secret.expose_secret()
    }

    pub fn secret(&self) -> &SecretString {
        &self.secret
    }
}

/// What `list` shows about a live voucher: never its value.
#[derive(Debug, Clone)]
pub struct VoucherInfo {
    pub id: String,
    pub launch: String,
    pub capabilities: Capabilities,
    pub minted_at: SystemTime,
    pub age: Duration,
}

/// A live voucher as the proxy sees it.
#[derive(Debug)]
pub(crate) struct Entry {
    pub id: String,
    pub launch: String,
    pub capabilities: Capabilities,
    /// Cancelled on revocation (and on broker shutdown, as a child of its token): requests in
    /// flight and open response streams end when it fires.
    pub revoked: CancellationToken,
    /// Fired by the first request the proxy forwards for this voucher's launch (shared by the
    /// launch's vouchers): the launch has reached its upstream.
    pub used: CancellationToken,
    digest: [u8; 32],
    file: PathBuf,
    minted_at: SystemTime,
    minted: Instant,
}

impl Entry {
    fn info(&self) -> VoucherInfo {
        VoucherInfo {
            id: self.id.clone(),
            launch: self.launch.clone(),
            capabilities: self.capabilities.clone(),
            minted_at: self.minted_at,
            age: self.minted.elapsed(),
        }
    }
}

#[derive(Debug, Default)]
struct Registry {
    by_digest: HashMap<[u8; 32], Arc<Entry>>,
    by_id: HashMap<String, [u8; 32]>,
}

/// State shared by the broker handle and the proxy tasks.
#[derive(Debug)]
pub(crate) struct Shared {
    pub config: Validated,
    /// Replaced once, when the first `https://` upstream is added after a start without one
    /// (the trusted roots are loaded then).
    client: RwLock<client::UpstreamClient>,
    /// Held while the roots load, so two additions load them once.
    tls_loaded: tokio::sync::Mutex<bool>,
    pub shutdown: CancellationToken,
    registry: RwLock<Registry>,
}

impl Shared {
    /// The pooled upstream client (cheap to clone).
    pub fn client(&self) -> client::UpstreamClient {
        self.client
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The live entry for a presented voucher, if any.
    ///
    /// Only SHA-256 digests are stored. The map lookup's timing depends on the digest of the
    /// candidate, which tells an attacker nothing about any stored voucher; the final
    /// comparison is constant-time anyway, so the check never short-circuits on voucher bytes.
    pub fn authenticate(&self, candidate: &[u8]) -> Option<Arc<Entry>> {
        let digest: [u8; 32] = Sha256::digest(candidate).into();
        let registry = self.registry.read().unwrap_or_else(PoisonError::into_inner);
        let entry = registry.by_digest.get(&digest)?;
        let matches: bool = entry.digest.ct_eq(&digest).into();
        (matches && !entry.revoked.is_cancelled()).then(|| entry.clone())
    }
}

/// Mints, lists and revokes vouchers, and proxies requests that carry them. Cheap to clone;
/// the proxy stops when the last clone is dropped or on [`CredentialBroker::shutdown`].
#[derive(Clone)]
pub struct CredentialBroker {
    shared: Arc<Shared>,
    running: Arc<Running>,
}

/// Stops the listeners when the last broker handle goes.
struct Running {
    listeners: RwLock<Vec<Listener>>,
    shutdown: CancellationToken,
}

/// One upstream's loopback listener.
#[derive(Debug)]
struct Listener {
    upstream: Arc<Upstream>,
    address: SocketAddr,
    /// A child of the broker's shutdown: cancelled when the upstream is removed.
    stop: CancellationToken,
}

impl Running {
    fn listeners(&self) -> std::sync::RwLockReadGuard<'_, Vec<Listener>> {
        self.listeners
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl fmt::Debug for CredentialBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let listeners: Vec<(String, SocketAddr)> = self
            .running
            .listeners()
            .iter()
            .map(|listener| (listener.upstream.name.clone(), listener.address))
            .collect();
        f.debug_struct("CredentialBroker")
            .field("listeners", &listeners)
            .finish_non_exhaustive()
    }
}

impl CredentialBroker {
    /// Validates `config` and starts one proxy listener on 127.0.0.1 (a random port) for each
    /// upstream. With no upstreams it listens nowhere and can still list and revoke. When an
    /// upstream is `https://`, the trusted roots are loaded first (on a blocking thread), and
    /// an unreadable extra bundle fails the start.
    pub async fn start(config: CredentialBrokerConfig) -> Result<Self, CredentialError> {
        let initial = config.upstreams.clone();
        // Validating the whole configuration first refuses a bad one before anything binds.
        let mut validated = config.validate()?;
        let needs_tls = validated.needs_tls();
        validated.upstreams.clear();
        let tls = load_tls(&validated.trust, needs_tls).await?;
        let client = client::upstream_client(&validated.timeouts, tls);
        let shutdown = CancellationToken::new();
        let shared = Arc::new(Shared {
            config: validated,
            client: RwLock::new(client),
            tls_loaded: tokio::sync::Mutex::new(needs_tls),
            shutdown: shutdown.clone(),
            registry: RwLock::new(Registry::default()),
        });
        // Dropped on an early return, this cancels the listeners already started.
        let broker = Self {
            shared,
            running: Arc::new(Running {
                listeners: RwLock::new(Vec::new()),
                shutdown,
            }),
        };
        for upstream in initial {
            broker.add_upstream(upstream).await?;
        }
        Ok(broker)
    }

    /// Adds an upstream while the broker runs and starts its loopback listener; returns the
    /// listener's `http://127.0.0.1:<port>`. A host adds one per launch when a key is handed
    /// over for that launch only, and removes it with [`Self::remove_upstream`] when the
    /// launch ends. The first `https://` upstream loads the trusted roots (on a blocking
    /// thread) if the start did not.
    pub async fn add_upstream(&self, config: UpstreamConfig) -> Result<String, CredentialError> {
        if self.shared.shutdown.is_cancelled() {
            return Err(CredentialError::ShutDown);
        }
        let upstream = Arc::new(crate::config::validate_upstream(config)?);
        if self.upstream(&upstream.name).is_ok() {
            return Err(CredentialError::DuplicateUpstream {
                name: upstream.name.clone(),
            });
        }
        if upstream.url_scheme == http::uri::Scheme::HTTPS {
            let mut loaded = self.shared.tls_loaded.lock().await;
            if !*loaded {
                let tls = load_tls(&self.shared.config.trust, true).await?;
                *self
                    .shared
                    .client
                    .write()
                    .unwrap_or_else(PoisonError::into_inner) =
                    client::upstream_client(&self.shared.config.timeouts, tls);
                *loaded = true;
            }
        }
        let bind_error = |source| CredentialError::Bind {
            upstream: upstream.name.clone(),
            source,
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(bind_error)?;
        let address = listener.local_addr().map_err(bind_error)?;
        let stop = self.running.shutdown.child_token();
        {
            let mut listeners = self
                .running
                .listeners
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            if listeners
                .iter()
                .any(|known| known.upstream.name == upstream.name)
            {
                return Err(CredentialError::DuplicateUpstream {
                    name: upstream.name.clone(),
                });
            }
            listeners.push(Listener {
                upstream: upstream.clone(),
                address,
                stop: stop.clone(),
            });
        }
        debug!(upstream = %upstream.name, %address, "credential proxy listening");
        tokio::spawn(proxy::serve(
            listener,
            self.shared.clone(),
            upstream,
            address.port(),
            stop,
        ));
        Ok(format!("http://{address}"))
    }

    /// Removes upstream `name`: revokes every voucher granted anything on it (their open
    /// streams are cut) and closes its listener. Returns the revoked vouchers.
    pub fn remove_upstream(&self, name: &str) -> Result<Vec<VoucherInfo>, CredentialError> {
        let removed = {
            let mut listeners = self
                .running
                .listeners
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let index = listeners
                .iter()
                .position(|listener| listener.upstream.name == name)
                .ok_or_else(|| CredentialError::UnknownUpstream {
                    name: name.to_owned(),
                    known: known_list(&listeners),
                })?;
            listeners.remove(index)
        };
        removed.stop.cancel();
        let ids: Vec<String> = self
            .live_entries(|entry| entry.capabilities.covers_upstream(name))
            .iter()
            .map(|entry| entry.id.clone())
            .collect();
        debug!(upstream = %name, vouchers = ids.len(), "upstream removed");
        Ok(ids.iter().filter_map(|id| self.revoke(id).ok()).collect())
    }

    /// `http://127.0.0.1:<port>` of the listener for `upstream`.
    pub fn proxy_url(&self, upstream: &str) -> Option<String> {
        self.running
            .listeners()
            .iter()
            .find(|listener| listener.upstream.name == upstream)
            .map(|listener| format!("http://{}", listener.address))
    }

    /// The configured upstream names, in configuration order.
    pub fn upstreams(&self) -> Vec<String> {
        self.running
            .listeners()
            .iter()
            .map(|listener| listener.upstream.name.clone())
            .collect()
    }

    /// Mints a voucher for `launch` with `capabilities` and writes it to a new 0600 file in
    /// `dir` (created 0700 if missing). Every grant must name a configured upstream.
    pub fn mint_for_launch(
        &self,
        launch: &str,
        capabilities: Capabilities,
        dir: &Path,
    ) -> Result<Voucher, CredentialError> {
        if self.shared.shutdown.is_cancelled() {
            return Err(CredentialError::ShutDown);
        }
        check_launch_id(launch)?;
        if capabilities.is_empty() {
            return Err(CredentialError::NoGrants {
                launch: launch.to_owned(),
            });
        }
        for grant in capabilities.grants() {
            self.upstream(grant.upstream())?;
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|error| CredentialError::Random(error.to_string()))?;
        let secret = SecretString::new(format!(
            "{}{}",
            self.shared.config.voucher_prefix,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        ));
        let digest: [u8; 32] = Sha256::digest(secret.expose_secret().as_bytes()).into();
        let id = self.fresh_id()?;
        let file = dir.join(format!("voucher-{id}"));
        write_private(&file, secret.expose_secret().as_bytes())?;
        let used = self
            .launch_entry(launch)
            .map_or_else(CancellationToken::new, |entry| entry.used.clone());
        let entry = Arc::new(Entry {
            id: id.clone(),
            launch: launch.to_owned(),
            capabilities: capabilities.clone(),
            revoked: self.shared.shutdown.child_token(),
            used,
            digest,
            file: file.clone(),
            minted_at: SystemTime::now(),
            minted: Instant::now(),
        });
        {
            let mut registry = self
                .shared
                .registry
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            registry.by_id.insert(id.clone(), digest);
            registry.by_digest.insert(digest, entry);
        }
        debug!(voucher = %id, launch, grants = capabilities.grants().len(), "voucher minted");
        Ok(Voucher {
            id,
            launch: launch.to_owned(),
            file,
            capabilities,
            secret,
        })
    }

    /// The live voucher `candidate` is, if it is one (looked up by digest; the comparison is
    /// constant-time). For a host that lets a launch prove who it is with its voucher.
    pub fn identify(&self, candidate: &str) -> Option<VoucherInfo> {
        self.shared
            .authenticate(candidate.as_bytes())
            .map(|entry| entry.info())
    }

    /// Resolves once the proxy has forwarded a request for `launch` (at once if it already
    /// has): how a host learns that a launch it started has reached its model. `None` when
    /// `launch` holds no live voucher.
    pub fn first_request(
        &self,
        launch: &str,
    ) -> Option<tokio_util::sync::WaitForCancellationFutureOwned> {
        self.launch_entry(launch)
            .map(|entry| entry.used.clone().cancelled_owned())
    }

    /// A live voucher of `launch`, if it holds one.
    fn launch_entry(&self, launch: &str) -> Option<Arc<Entry>> {
        self.live_entries(|entry| entry.launch == launch).pop()
    }

    /// The live vouchers that `keep` accepts, in no particular order.
    fn live_entries(&self, keep: impl Fn(&Entry) -> bool) -> Vec<Arc<Entry>> {
        let registry = self
            .shared
            .registry
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        registry
            .by_digest
            .values()
            .filter(|entry| keep(entry))
            .cloned()
            .collect()
    }

    /// Revokes voucher `id`: the next request with it gets 401, its open streams are cut and
    /// its file is removed.
    pub fn revoke(&self, id: &str) -> Result<VoucherInfo, CredentialError> {
        let entry = {
            let mut registry = self
                .shared
                .registry
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let digest = registry
                .by_id
                .remove(id)
                .ok_or_else(|| CredentialError::UnknownVoucher { id: id.to_owned() })?;
            registry.by_digest.remove(&digest)
        }
        .ok_or_else(|| CredentialError::UnknownVoucher { id: id.to_owned() })?;
        entry.revoked.cancel();
        match std::fs::remove_file(&entry.file) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                warn!(%error, path = %entry.file.display(), "could not remove a revoked voucher's file");
            }
        }
        debug!(voucher = %entry.id, launch = %entry.launch, "voucher revoked");
        Ok(entry.info())
    }

    /// Revokes every voucher of `launch`; returns what was revoked (possibly nothing).
    pub fn revoke_launch(&self, launch: &str) -> Vec<VoucherInfo> {
        let ids: Vec<String> = self
            .list()
            .into_iter()
            .filter(|info| info.launch == launch)
            .map(|info| info.id)
            .collect();
        ids.iter().filter_map(|id| self.revoke(id).ok()).collect()
    }

    /// The live vouchers, oldest first.
    pub fn list(&self) -> Vec<VoucherInfo> {
        let mut infos: Vec<VoucherInfo> = self
            .live_entries(|_| true)
            .iter()
            .map(|entry| entry.info())
            .collect();
        infos.sort_by_key(|info| std::cmp::Reverse(info.age));
        infos
    }

    /// Stops the listeners, cuts every open stream and refuses further mints. Idempotent.
    pub fn shutdown(&self) {
        if !self.shared.shutdown.is_cancelled() {
            debug!("credential broker shutting down");
        }
        self.shared.shutdown.cancel();
    }

    /// The environment a launch needs to reach its upstreams through the proxy with `voucher`
    /// and nothing else: [`PROXY_URL_VAR`] (the listener of `spec.proxy_upstream`),
    /// [`PROXY_TOKEN_FILE_VAR`] (the voucher file), and for each [`VendorEnv`] its base-URL
    /// variable and its key variable (the voucher itself, for CLIs that read a key from the
    /// environment). Fails if the voucher was revoked or lacks a grant for a named upstream:
    /// there is no fallback that would hand a launch a real key.
    pub fn launch_env(
        &self,
        voucher: &Voucher,
        spec: &LaunchEnvSpec,
    ) -> Result<LaunchEnv, CredentialError> {
        let live = self
            .shared
            .registry
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .by_id
            .contains_key(&voucher.id);
        if !live {
            return Err(CredentialError::UnknownVoucher {
                id: voucher.id.clone(),
            });
        }
        let url_for = |upstream: &str| -> Result<String, CredentialError> {
            self.upstream(upstream)?;
            if !voucher.capabilities.covers_upstream(upstream) {
                return Err(CredentialError::NotGranted {
                    voucher: voucher.id.clone(),
                    upstream: upstream.to_owned(),
                });
            }
            self.proxy_url(upstream).ok_or(CredentialError::ShutDown)
        };
        let mut env = LaunchEnv::default();
        env.push(
            PROXY_URL_VAR,
            EnvValue::Plain(url_for(&spec.proxy_upstream)?),
        )?;
        env.push(
            PROXY_TOKEN_FILE_VAR,
            EnvValue::Plain(voucher.file.display().to_string()),
        )?;
        for vendor in &spec.vendors {
            let url = url_for(&vendor.upstream)?;
            if let Some(name) = &vendor.base_url_var {
                env.push(name, EnvValue::Plain(format!("{url}{}", vendor.base_path)))?;
            }
            if let Some(name) = &vendor.key_var {
                env.push(name, EnvValue::Secret(voucher.secret.clone()))?;
            }
        }
        Ok(env)
    }

    fn upstream(&self, name: &str) -> Result<Arc<Upstream>, CredentialError> {
        let listeners = self.running.listeners();
        listeners
            .iter()
            .find(|listener| listener.upstream.name == name)
            .map(|listener| listener.upstream.clone())
            .ok_or_else(|| CredentialError::UnknownUpstream {
                name: name.to_owned(),
                known: known_list(&listeners),
            })
    }

    fn fresh_id(&self) -> Result<String, CredentialError> {
        loop {
            let mut bytes = [0u8; 6];
            getrandom::fill(&mut bytes)
                .map_err(|error| CredentialError::Random(error.to_string()))?;
            let id = format!(
                "v-{}",
                bytes
                    .iter()
                    .map(|byte| format!("{byte:02x}"))
                    .collect::<String>()
            );
            let taken = self
                .shared
                .registry
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .by_id
                .contains_key(&id);
            if !taken {
                return Ok(id);
            }
        }
    }
}

/// The rustls configuration, loading the trusted roots on a blocking thread when `load`.
async fn load_tls(
    trust: &crate::tls::UpstreamTrust,
    load: bool,
) -> Result<rustls::ClientConfig, CredentialError> {
    if !load {
        return crate::tls::client_config(trust, false);
    }
    let trust = trust.clone();
    tokio::task::spawn_blocking(move || crate::tls::client_config(&trust, true))
        .await
        .map_err(|error| CredentialError::Tls(error.to_string()))?
}

fn known_list(listeners: &[Listener]) -> String {
    if listeners.is_empty() {
        return "none".to_owned();
    }
    listeners
        .iter()
        .map(|listener| format!("`{}`", listener.upstream.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Launch ids become the `X-Agent-Id` header and part of file names: plain words only.
fn check_launch_id(launch: &str) -> Result<(), CredentialError> {
    let ok = (1..=128).contains(&launch.len())
        && !launch.starts_with('.')
        && launch
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte));
    if ok {
        Ok(())
    } else {
        Err(CredentialError::InvalidLaunchId {
            launch: launch.to_owned(),
        })
    }
}

/// Creates the voucher file `path` with mode 0600, complete or not at all, refusing an
/// existing file or a planted symlink; its directory is created 0700 if needed.
fn write_private(path: &Path, contents: &[u8]) -> Result<(), CredentialError> {
    paddock_secrets::file::write_private_new(path, contents).map_err(|source| {
        CredentialError::VoucherFile {
            path: path.to_path_buf(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::capability::Grant;
    use crate::config::UpstreamConfig;
    use crate::launch_env::VendorEnv;

    async fn broker() -> CredentialBroker {
        CredentialBroker::start(CredentialBrokerConfig {
            upstreams: vec![UpstreamConfig {
                name: "api".into(),
                url: "http://127.0.0.1:9".into(),
                credential: SecretString::new("sk-real-key"),
                header: "x-api-key".into(),
                scheme: None,
            }],
            ..CredentialBrokerConfig::default()
        })
        .await
        .unwrap()
    }

    fn caps() -> Capabilities {
        Capabilities::new([Grant::parse("api", "POST /v1/messages").unwrap()])
    }

    #[tokio::test]
    async fn vouchers_are_prefixed_256_bit_base64url_in_private_files() {
        let broker = broker().await;
        let dir = tempfile::tempdir().unwrap();
        let launch_dir = dir.path().join("launch-1");
        let voucher = broker
            .mint_for_launch("launch-1", caps(), &launch_dir)
            .unwrap();
        let secret = voucher.expose_secret();
        let body = secret.strip_prefix("vch_").unwrap();
        assert_eq!(body.len(), 43);
        assert!(
            body.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(std::fs::read_to_string(&voucher.file).unwrap(), secret);
        let mode = std::fs::metadata(&voucher.file)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(&launch_dir).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert!(!format!("{voucher:?}").contains(body));
        // Two mints never share a value or an id.
        let other = broker
            .mint_for_launch("launch-1", caps(), &launch_dir)
            .unwrap();
        assert_ne!(other.expose_secret(), secret);
        assert_ne!(other.id, voucher.id);
    }

    #[tokio::test]
    async fn revoking_one_or_a_launch() {
        let broker = broker().await;
        let dir = tempfile::tempdir().unwrap();
        let a1 = broker.mint_for_launch("a", caps(), dir.path()).unwrap();
        let a2 = broker.mint_for_launch("a", caps(), dir.path()).unwrap();
        let b = broker.mint_for_launch("b", caps(), dir.path()).unwrap();
        assert_eq!(broker.list().len(), 3);
        assert!(
            broker
                .shared
                .authenticate(a1.expose_secret().as_bytes())
                .is_some()
        );

        let info = broker.revoke(&a1.id).unwrap();
        assert_eq!(info.launch, "a");
        assert!(!a1.file.exists());
        assert!(
            broker
                .shared
                .authenticate(a1.expose_secret().as_bytes())
                .is_none()
        );
        assert!(broker.revoke(&a1.id).unwrap_err().is_unknown_voucher());

        let revoked = broker.revoke_launch("a");
        assert_eq!(revoked.len(), 1);
        assert_eq!(revoked[0].id, a2.id);
        let left: Vec<String> = broker.list().into_iter().map(|info| info.id).collect();
        assert_eq!(left, vec![b.id.clone()]);
    }

    #[tokio::test]
    async fn minting_checks_its_inputs() {
        let broker = broker().await;
        let dir = tempfile::tempdir().unwrap();
        for launch in ["", "../x", "a b", ".hidden"] {
            let error = broker
                .mint_for_launch(launch, caps(), dir.path())
                .unwrap_err();
            assert!(error.is_invalid_input(), "{launch:?}");
        }
        let error = broker
            .mint_for_launch("l", Capabilities::default(), dir.path())
            .unwrap_err();
        assert!(matches!(error, CredentialError::NoGrants { .. }));
        let elsewhere = Capabilities::new([Grant::parse("other", "GET /").unwrap()]);
        let error = broker
            .mint_for_launch("l", elsewhere, dir.path())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown upstream `other`; configured upstreams: `api`"
        );
        broker.shutdown();
        assert!(matches!(
            broker.mint_for_launch("l", caps(), dir.path()),
            Err(CredentialError::ShutDown)
        ));
    }

    #[tokio::test]
    async fn launch_env_points_at_the_proxy_and_redacts_the_voucher() {
        let broker = broker().await;
        let dir = tempfile::tempdir().unwrap();
        let voucher = broker.mint_for_launch("l", caps(), dir.path()).unwrap();
        let spec = LaunchEnvSpec {
            proxy_upstream: "api".into(),
            vendors: vec![VendorEnv::claude_code("api")],
        };
        let env = broker.launch_env(&voucher, &spec).unwrap();
        let url = broker.proxy_url("api").unwrap();
        assert_eq!(env.plain(PROXY_URL_VAR), Some(url.as_str()));
        assert_eq!(env.plain("ANTHROPIC_BASE_URL"), Some(url.as_str()));
        assert_eq!(
            env.plain(PROXY_TOKEN_FILE_VAR),
            Some(voucher.file.display().to_string().as_str())
        );
        assert_eq!(env.plain("ANTHROPIC_API_KEY"), None);
        assert!(!format!("{env:?}").contains(voucher.expose_secret()));
        let vars = env.expose_vars();
        assert!(vars.contains(&("ANTHROPIC_API_KEY".into(), voucher.expose_secret().into())));
        assert!(
            !vars
                .iter()
                .any(|(_, value)| value.to_string_lossy().contains("sk-real-key"))
        );

        broker.revoke(&voucher.id).unwrap();
        assert!(
            broker
                .launch_env(&voucher, &spec)
                .unwrap_err()
                .is_unknown_voucher()
        );
    }
}
