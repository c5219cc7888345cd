//! Messages between owners and the bots on joined daemons (spec 004, "Host orchestration"):
//! the agent data plane a bot's daemon calls with the bot's runner key — `send`, `inboxPull`,
//! `ack`, `read`, `listChannels` under `/api/agent/` — the runner-key mint a daemon calls with
//! its machine key, and the owner's side: `POST /api/messages` (store the message, then wake
//! the bot with a bodiless notice over its daemon's control connection), `GET /api/messages`
//! (the conversation) and `POST /api/agents/stop`, all with an API key.
//!
//! A bot's conversation lives here; its daemon takes the inbound messages into its own inbox
//! (`inboxPull`, then `ack` once they are stored there), so delivery is at least once and a
//! daemon that was away is woken again when it reconnects.

use std::sync::Arc;

use axum::extract::{Json, Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use paddock_client::fleet::{
    AckRequest, AgentMessageEntry, FLEET_OWNER_DM, InboxPullAnswer, RunnerKeyRequest,
    RunnerKeyResponse, SendRequest,
};
use serde::Deserialize;
use serde_json::{Value, json};
use tracing::{debug, info, warn};

use crate::credential::{self, CredentialHash, CredentialKind};
use crate::hub::{Hub, refusal};
use crate::store::{AgentMessage, StoreError, Unacked, now_ms};

/// The largest message body, as on the daemon.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// The most messages one `inboxPull` or `read` returns.
const PAGE: i64 = 100;
/// The header the daemon's credential proxy stamps with the launch a call came from.
const AGENT_ID_HEADER: &str = "x-agent-id";

fn unavailable(error: StoreError) -> Response {
    warn!(%error, "the agent data plane's database call failed");
    refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        "the server's database is unavailable; try again",
    )
}

/// A request field that does not pass its check: the status and what to fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid(pub StatusCode, pub &'static str);

impl IntoResponse for Invalid {
    fn into_response(self) -> Response {
        refusal(self.0, self.1)
    }
}

/// Bot ids as daemons accept them ([`paddock_client::control::is_bot_id`]).
pub fn check_bot(bot: &str) -> Result<(), Invalid> {
    if paddock_client::control::is_bot_id(bot) {
        Ok(())
    } else {
        Err(Invalid(
            StatusCode::BAD_REQUEST,
            "a bot id is 1 to 64 letters, digits, `-`, `_` or `.`",
        ))
    }
}

fn check_text(text: &str) -> Result<(), Invalid> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(Invalid(
            StatusCode::PAYLOAD_TOO_LARGE,
            "a message may hold at most 262144 bytes",
        ));
    }
    if text.is_empty() {
        return Err(Invalid(StatusCode::BAD_REQUEST, "the message is empty"));
    }
    Ok(())
}

fn check_target(target: &str) -> Result<(), Invalid> {
    let ok = target.starts_with('/')
        && target.len() <= 200
        && !target.chars().any(|c| c.is_control() || c.is_whitespace());
    if ok {
        Ok(())
    } else {
        Err(Invalid(
            StatusCode::BAD_REQUEST,
            "a target is a channel ref such as `/.dm/owner#fleet`",
        ))
    }
}

fn entry(message: AgentMessage) -> AgentMessageEntry {
    AgentMessageEntry {
        seq: message.seq,
        direction: if message.inbound { "in" } else { "out" }.to_owned(),
        target: message.target,
        sender: message.sender,
        text: message.body,
        created_at_ms: message.created_at_ms,
    }
}

/// `POST /api/daemon/runner-keys`: a new runner key for one of the calling machine's bots; the
/// bot's older keys stop working.
pub async fn runner_keys_route(
    State(hub): State<Arc<Hub>>,
    headers: HeaderMap,
    Json(request): Json<RunnerKeyRequest>,
) -> Response {
    let machine = match hub.machine_of_key(&headers).await {
        Ok(machine) => machine,
        Err(refused) => return refused,
    };
    if let Err(refused) = check_bot(&request.agent_id) {
        return refused.into_response();
    }
    let Ok(key) = credential::mint(CredentialKind::Runner) else {
        return refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server could not mint a key",
        );
    };
    let store = hub.store();
    let now = now_ms();
    let minted = async {
        store
            .revoke_runner_keys(machine.id.clone(), request.agent_id.clone(), now)
            .await?;
        store
            .insert_runner_key(
                CredentialHash::of(key.expose_secret()),
                machine.id.clone(),
                request.agent_id.clone(),
                now,
            )
            .await
    };
    if let Err(error) = minted.await {
        return unavailable(error);
    }
    info!(machine = %machine.id, bot = %request.agent_id, "runner key minted");
    Json(RunnerKeyResponse {
        agent_id: request.agent_id,
        runner_key: key.expose_secret().to_owned(),
    })
    .into_response()
}

/// What `inboxPull` and `listChannels` take: nothing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

/// What `read` takes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReadRequest {
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    after: Option<i64>,
    #[serde(default)]
    limit: Option<i64>,
}

/// `POST /api/agent/{operation}` with `Authorization: Bearer pdk_rk_…`: the runner key says
/// which agent (bot and machine) calls; nothing in the body can name another.
pub async fn agent_route(
    State(hub): State<Arc<Hub>>,
    Path(operation): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let Some(key) = credential::bearer(&headers, CredentialKind::Runner) else {
        return refusal(
            StatusCode::UNAUTHORIZED,
            "the agent data plane needs `Authorization: Bearer pdk_rk_…` (the bot's runner key, which its daemon's credential proxy puts in)",
        );
    };
    let store = hub.store();
    let (machine_id, agent_id) = match store.runner_key(CredentialHash::of(key)).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            return refusal(StatusCode::UNAUTHORIZED, "unknown or replaced runner key");
        }
        Err(error) => return unavailable(error),
    };
    let launch = headers
        .get(AGENT_ID_HEADER)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("-");
    debug!(machine = %machine_id, bot = %agent_id, launch, operation, "agent data plane");
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &body
    };
    let bad = |error: serde_json::Error| {
        refusal(
            StatusCode::BAD_REQUEST,
            &format!("the request body does not fit `{operation}`: {error}"),
        )
    };
    match operation.as_str() {
        "inboxPull" => {
            if let Err(error) = serde_json::from_slice::<Empty>(body) {
                return bad(error);
            }
            let pulled = async {
                let acked = store
                    .agent_acked(machine_id.clone(), agent_id.clone())
                    .await?;
                let messages = store
                    .agent_messages(machine_id.clone(), agent_id.clone(), acked, true, PAGE)
                    .await?;
                Ok::<_, StoreError>(InboxPullAnswer {
                    messages: messages.into_iter().map(entry).collect(),
                    acked,
                })
            };
            match pulled.await {
                Ok(answer) => Json(answer).into_response(),
                Err(error) => unavailable(error),
            }
        }
        "ack" => {
            let request: AckRequest = match serde_json::from_slice(body) {
                Ok(request) => request,
                Err(error) => return bad(error),
            };
            match store.ack_agent(machine_id, agent_id, request.upto).await {
                Ok(acked) => Json(json!({ "acked": acked })).into_response(),
                Err(error) => unavailable(error),
            }
        }
        "read" => {
            let request: ReadRequest = match serde_json::from_slice(body) {
                Ok(request) => request,
                Err(error) => return bad(error),
            };
            let limit = request.limit.unwrap_or(PAGE).clamp(1, PAGE);
            match store
                .agent_messages(
                    machine_id,
                    agent_id,
                    request.after.unwrap_or(0),
                    false,
                    limit,
                )
                .await
            {
                Ok(messages) => {
                    let messages: Vec<AgentMessageEntry> = messages
                        .into_iter()
                        .filter(|message| {
                            request
                                .target
                                .as_deref()
                                .is_none_or(|target| message.target == target)
                        })
                        .map(entry)
                        .collect();
                    Json(json!({ "messages": messages })).into_response()
                }
                Err(error) => unavailable(error),
            }
        }
        "listChannels" => {
            if let Err(error) = serde_json::from_slice::<Empty>(body) {
                return bad(error);
            }
            list_channels(store, machine_id, agent_id).await
        }
        "send" => {
            let request: SendRequest = match serde_json::from_slice(body) {
                Ok(request) => request,
                Err(error) => return bad(error),
            };
            if let Err(refused) =
                check_target(&request.target).and_then(|()| check_text(&request.text))
            {
                return refused.into_response();
            }
            let message = AgentMessage {
                seq: 0,
                inbound: false,
                target: request.target,
                sender: agent_id.clone(),
                body: request.text,
                created_at_ms: now_ms(),
            };
            match store
                .append_agent_message(machine_id.clone(), agent_id.clone(), message)
                .await
            {
                Ok(seq) => {
                    info!(machine = %machine_id, bot = %agent_id, seq, "a bot sent a message");
                    Json(json!({ "seq": seq })).into_response()
                }
                Err(error) => unavailable(error),
            }
        }
        _ => refusal(
            StatusCode::NOT_FOUND,
            "unknown agent operation; known: send, inboxPull, ack, read, listChannels",
        ),
    }
}

/// `listChannels`: each target the agent's conversation has, with its size and latest message.
async fn list_channels(
    store: &Arc<dyn crate::store::ServerStore>,
    machine_id: String,
    agent_id: String,
) -> Response {
    match store
        .agent_messages(machine_id, agent_id, 0, false, i64::MAX)
        .await
    {
        Ok(messages) => {
            let mut channels: Vec<(String, i64, i64)> = Vec::new();
            for message in messages {
                match channels
                    .iter_mut()
                    .find(|(target, _, _)| *target == message.target)
                {
                    Some((_, count, latest)) => {
                        *count += 1;
                        *latest = message.seq;
                    }
                    None => channels.push((message.target, 1, message.seq)),
                }
            }
            let channels: Vec<Value> = channels
                .into_iter()
                .map(|(target, messages, latest)| {
                    json!({ "target": target, "messages": messages, "latestSeq": latest })
                })
                .collect();
            Json(json!({ "channels": channels })).into_response()
        }
        Err(error) => unavailable(error),
    }
}

/// The machine whose daemon defines bot `bot` (checked first), or the refusal to answer with.
async fn bot_machine(hub: &Hub, bot: &str, machine: Option<&str>) -> Result<String, Response> {
    check_bot(bot).map_err(IntoResponse::into_response)?;
    hub.machine_of_bot(bot, machine)
        .await
        .map_err(|(status, message)| refusal(status, &message))
}

/// An owner's `POST /api/messages`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerMessage {
    pub bot: String,
    pub text: String,
    /// A machine id or name, when several machines define the bot.
    #[serde(default)]
    pub machine: Option<String>,
}

/// Stores an owner's message for a bot and wakes the bot on its daemon. `sender` is the API
/// key's name. A daemon that is away gets the wake when it reconnects.
pub async fn post_message(hub: &Hub, sender: &str, body: &[u8]) -> Response {
    let request: OwnerMessage = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(error) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &format!("expected {{\"bot\": …, \"text\": …, \"machine\"?: …}}: {error}"),
            );
        }
    };
    if let Err(refused) = check_text(&request.text) {
        return refused.into_response();
    }
    let machine_id = match bot_machine(hub, &request.bot, request.machine.as_deref()).await {
        Ok(machine_id) => machine_id,
        Err(refused) => return refused,
    };
    let store = hub.store();
    let message = AgentMessage {
        seq: 0,
        inbound: true,
        target: FLEET_OWNER_DM.to_owned(),
        sender: sender.to_owned(),
        body: request.text,
        created_at_ms: now_ms(),
    };
    let seq = match store
        .append_agent_message(machine_id.clone(), request.bot.clone(), message)
        .await
    {
        Ok(seq) => seq,
        Err(error) => return unavailable(error),
    };
    info!(machine = %machine_id, bot = %request.bot, seq, "an owner's message for a bot");
    let waiting = match store.unacked_agents(machine_id.clone()).await {
        Ok(waiting) => waiting
            .into_iter()
            .find(|unacked| unacked.agent_id == request.bot)
            // Its daemon took it already (another wake raced this one): nothing waits.
            .unwrap_or(Unacked {
                agent_id: request.bot.clone(),
                count: 0,
                latest_seq: seq,
            }),
        Err(error) => return unavailable(error),
    };
    let (woken, detail) = match hub.wake(&machine_id, waiting).await {
        Ok(answer) => (true, answer),
        Err(error) => (
            false,
            json!(format!(
                "{}; the bot is woken when its daemon reconnects",
                error.message
            )),
        ),
    };
    (
        StatusCode::OK,
        Json(json!({
            "bot": request.bot,
            "machineId": machine_id,
            "seq": seq,
            "woken": woken,
            "detail": detail,
        })),
    )
        .into_response()
}

/// The query of an owner's `GET /api/messages`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConversationQuery {
    pub bot: String,
    #[serde(default)]
    pub machine: Option<String>,
    #[serde(default)]
    pub after: Option<i64>,
}

/// An owner's `GET /api/messages?bot=…`: the bot's conversation, both directions.
pub async fn conversation(hub: &Hub, query: ConversationQuery) -> Response {
    let machine_id = match bot_machine(hub, &query.bot, query.machine.as_deref()).await {
        Ok(machine_id) => machine_id,
        Err(refused) => return refused,
    };
    match hub
        .store()
        .agent_messages(
            machine_id.clone(),
            query.bot.clone(),
            query.after.unwrap_or(0),
            false,
            PAGE * 10,
        )
        .await
    {
        Ok(messages) => {
            let messages: Vec<AgentMessageEntry> = messages.into_iter().map(entry).collect();
            Json(json!({ "bot": query.bot, "machineId": machine_id, "messages": messages }))
                .into_response()
        }
        Err(error) => unavailable(error),
    }
}

/// An owner's `POST /api/agents/stop`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopRequest {
    pub bot: String,
    #[serde(default)]
    pub machine: Option<String>,
}

/// Stops a bot's running session through its daemon (`agent:stop`).
pub async fn stop_agent(hub: &Hub, body: &[u8]) -> Response {
    let request: StopRequest = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(error) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &format!("expected {{\"bot\": …, \"machine\"?: …}}: {error}"),
            );
        }
    };
    let machine_id = match bot_machine(hub, &request.bot, request.machine.as_deref()).await {
        Ok(machine_id) => machine_id,
        Err(refused) => return refused,
    };
    match hub.stop_agent(&machine_id, &request.bot).await {
        Ok(answer) => {
            Json(json!({ "bot": request.bot, "machineId": machine_id, "answer": answer }))
                .into_response()
        }
        Err(error) => refusal(StatusCode::BAD_GATEWAY, &error.message),
    }
}
