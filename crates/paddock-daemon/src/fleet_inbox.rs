//! A joined daemon's bots on the fleet server's agent data plane (spec 004, "Three key
//! tiers"): each bot gets its own runner key (`pdk_rk_…`), minted by the server when the
//! daemon asks with its machine key and kept in this process's memory only. With it the daemon
//! takes the messages an owner posted through the server into the bot's local inbox
//! (`inboxPull`, store, then `ack` — at least once), and sends the bot's replies (`send`). The
//! credential proxy swaps a session's voucher for the same key ([`FleetInbox::upstream`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use paddock_client::SecretString;
use paddock_client::fleet::{
    AGENT_PATH, AckRequest, InboxPullAnswer, RUNNER_KEYS_PATH, RunnerKeyRequest, RunnerKeyResponse,
    SendRequest,
};
use paddock_store::Store;
use tracing::{debug, info};

use crate::fleet::{Link, ServerUrl};

/// The daemon's side of the agent data plane. Cheap to clone.
#[derive(Clone)]
pub struct FleetInbox {
    state_dir: PathBuf,
    tls: Arc<rustls::ClientConfig>,
    /// Each bot's runner key, minted once per daemon run (or again when the server refuses it).
    runner_keys: Arc<Mutex<HashMap<String, SecretString>>>,
}

impl std::fmt::Debug for FleetInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetInbox")
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

/// How long one call to the server may take: a bot's launch, pull or send never hangs on an
/// unreachable server.
const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// One request to the server, within [`CALL_TIMEOUT`].
async fn post_within(
    url: &ServerUrl,
    path: &str,
    headers: &[(http::HeaderName, String)],
    body: Vec<u8>,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<(http::StatusCode, hyper::body::Bytes), FleetInboxError> {
    match tokio::time::timeout(
        CALL_TIMEOUT,
        crate::fleet::post(url, path, headers, body, tls),
    )
    .await
    {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(FleetInboxError::Link(format!(
            "the fleet server did not answer `{path}` within {} s",
            CALL_TIMEOUT.as_secs()
        ))),
    }
}

/// What the server said to a data-plane call that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum FleetInboxError {
    #[error("this daemon has not joined a fleet server (`paddock daemon join`)")]
    NotJoined,
    #[error("the fleet link: {0}")]
    Link(String),
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
    #[error("the fleet server answered {status}: {message}")]
    Refused { status: u16, message: String },
}

impl FleetInbox {
    pub fn new(state_dir: PathBuf, tls: Arc<rustls::ClientConfig>) -> Self {
        Self {
            state_dir,
            tls,
            runner_keys: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The stored link and machine key, if this daemon joined a server.
    fn link(&self) -> Result<(Link, SecretString), FleetInboxError> {
        crate::fleet::load(&self.state_dir)
            .map_err(FleetInboxError::Link)?
            .ok_or(FleetInboxError::NotJoined)
    }

    fn cached(&self, bot: &str) -> Option<SecretString> {
        self.runner_keys
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .get(bot)
            .cloned()
    }

    /// `bot`'s runner key: the one minted earlier in this run, or a new one.
    pub async fn runner_key(&self, bot: &str) -> Result<(Link, SecretString), FleetInboxError> {
        let (link, machine_key) = self.link()?;
        if let Some(key) = self.cached(bot) {
            return Ok((link, key));
        }
        let url = ServerUrl::parse(&link.server)?;
        let body = serde_json::to_vec(&RunnerKeyRequest {
            agent_id: bot.to_owned(),
        })
        .map_err(|error| FleetInboxError::Link(error.to_string()))?;
        let (status, answer) = post_within(
            &url,
            RUNNER_KEYS_PATH,
            &json_headers(&machine_key),
            body,
            &self.tls,
        )
        .await?;
        if !status.is_success() {
            return Err(refused(status, &answer));
        }
        let answer: RunnerKeyResponse = serde_json::from_slice(&answer)
            .map_err(|error| FleetInboxError::Link(format!("an unreadable runner key: {error}")))?;
        let key = SecretString::new(answer.runner_key);
        self.runner_keys
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .insert(bot.to_owned(), key.clone());
        info!(bot, "runner key minted by the fleet server");
        Ok((link, key))
    }

    /// `POST /api/agent/<operation>` as `bot`; a refused key is minted again once.
    async fn call(
        &self,
        bot: &str,
        operation: &str,
        body: &impl serde::Serialize,
    ) -> Result<hyper::body::Bytes, FleetInboxError> {
        let body =
            serde_json::to_vec(body).map_err(|error| FleetInboxError::Link(error.to_string()))?;
        for attempt in 0..2 {
            let (link, key) = self.runner_key(bot).await?;
            let url = ServerUrl::parse(&link.server)?;
            let mut headers = json_headers(&key);
            headers.push((http::HeaderName::from_static("x-agent-id"), bot.to_owned()));
            let (status, answer) = post_within(
                &url,
                &format!("{AGENT_PATH}/{operation}"),
                &headers,
                body.clone(),
                &self.tls,
            )
            .await?;
            if status == http::StatusCode::UNAUTHORIZED && attempt == 0 {
                debug!(
                    bot,
                    "the fleet server refused the runner key; minting another"
                );
                self.runner_keys
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner())
                    .remove(bot);
                continue;
            }
            if !status.is_success() {
                return Err(refused(status, &answer));
            }
            return Ok(answer);
        }
        Err(FleetInboxError::Refused {
            status: 401,
            message: "the server refused a fresh runner key".to_owned(),
        })
    }

    /// Takes the messages waiting on the server for `bot` into its inbox in `store`, then
    /// acknowledges them there; the local sequence numbers they got, in order.
    pub async fn take(&self, bot: &str, store: &Arc<Store>) -> Result<Vec<u64>, FleetInboxError> {
        let mut taken = Vec::new();
        loop {
            let answer = self.call(bot, "inboxPull", &serde_json::json!({})).await?;
            let pulled: InboxPullAnswer = serde_json::from_slice(&answer).map_err(|error| {
                FleetInboxError::Link(format!("an unreadable inboxPull answer: {error}"))
            })?;
            let Some(last) = pulled.messages.last().map(|message| message.seq) else {
                return Ok(taken);
            };
            let (id, messages) = (bot.to_owned(), pulled.messages);
            let seqs = store
                .blocking(move |store| {
                    messages
                        .iter()
                        .map(|message| {
                            store.inbox_append(&id, &message.target, &message.sender, &message.text)
                        })
                        .collect::<Result<Vec<u64>, _>>()
                })
                .await
                .map_err(|error| FleetInboxError::Link(error.to_string()))?;
            taken.extend(seqs);
            let acked = self.call(bot, "ack", &AckRequest { upto: last }).await?;
            let acked = serde_json::from_slice::<serde_json::Value>(&acked)
                .ok()
                .and_then(|value| value["acked"].as_i64());
            // A boundary that did not move would hand back the same page forever.
            if acked.is_none_or(|acked| acked < last) {
                return Err(FleetInboxError::Link(format!(
                    "the fleet server did not take the acknowledgement up to #{last}"
                )));
            }
        }
    }

    /// Sends `text` from `bot` to `target` on the server; the server's sequence number.
    pub async fn send(&self, bot: &str, target: &str, text: &str) -> Result<i64, FleetInboxError> {
        let answer = self
            .call(
                bot,
                "send",
                &SendRequest {
                    target: target.to_owned(),
                    text: text.to_owned(),
                },
            )
            .await?;
        serde_json::from_slice::<serde_json::Value>(&answer)
            .ok()
            .and_then(|value| value["seq"].as_i64())
            .ok_or_else(|| FleetInboxError::Link("an unreadable send answer".to_owned()))
    }

    /// The server's URL and `bot`'s runner key, for a launch's credential-proxy upstream.
    pub async fn upstream(&self, bot: &str) -> Result<(String, SecretString), FleetInboxError> {
        let (link, key) = self.runner_key(bot).await?;
        Ok((link.server, key))
    }
}

fn json_headers(key: &SecretString) -> Vec<(http::HeaderName, String)> {
    vec![
        (
            http::header::AUTHORIZATION,
            format!("Bearer {}", key.expose_secret()),
        ),
        (http::header::CONTENT_TYPE, "application/json".to_owned()),
    ]
}

fn refused(status: http::StatusCode, answer: &[u8]) -> FleetInboxError {
    FleetInboxError::Refused {
        status: status.as_u16(),
        message: paddock_client::fleet::refusal_message(answer),
    }
}
