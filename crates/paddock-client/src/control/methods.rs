//! Every control-socket method with its parameters and its result, as Rust types. The CLI and
//! the daemon share these definitions, so neither reads a field by string.
//!
//! A [`Method`] names its wire method, its parameter type and its output type; a client calls
//! it with [`super::ControlClient::request`]. On the wire a request is
//! `{"id":N,"method":"…","params":{…}}` (see [`ControlCall`]) and a failure is a
//! [`ControlError`] with an [`ErrorCode`].

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// One control-socket method: its wire name, what it takes and what it answers.
pub trait Method {
    /// The wire method, `daemon/status` and the like.
    const NAME: &'static str;
    type Params;
    type Output: Serialize + DeserializeOwned;
    /// The request for these parameters.
    fn call(params: Self::Params) -> ControlCall;
}

/// The requests of the control socket (`method` and `params` on the wire).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum ControlCall {
    /// Proves who is calling, as the connection's first frame: the owner with the daemon's
    /// token, an agent session with its launch's voucher ([`AuthHelloResult`]). Without it a
    /// connection may only ask `daemon/status`.
    #[serde(rename = "auth/hello")]
    AuthHello(AuthHelloParams),
    /// Reports pid, version, uptime, state and endpoints ([`StatusResult`]).
    #[serde(rename = "daemon/status")]
    Status,
    /// Begins a graceful shutdown; the answer arrives before the daemon exits.
    #[serde(rename = "daemon/stop")]
    Stop,
    /// Turns this connection into an MCP connection: after the answer, each line in either
    /// direction is one JSON-RPC message.
    #[serde(rename = "mcp/connect")]
    McpConnect(McpConnectParams),
    /// Lists the device pool and its sessions ([`DevicesListResult`]).
    #[serde(rename = "devices/list")]
    DevicesList,
    /// Boots more warm devices; progress frames arrive before the answer.
    #[serde(rename = "devices/warm")]
    DevicesWarm(DevicesWarmParams),
    /// Lists the live credential vouchers: ids, launches, capabilities, ages — never values.
    #[serde(rename = "credentials/list")]
    CredentialsList,
    /// Revokes a voucher, or every voucher of a launch.
    #[serde(rename = "credentials/revoke")]
    CredentialsRevoke(CredentialsRevokeParams),
    /// Lists a bot's PII filters in pipeline order ([`PiiListResult`]).
    #[serde(rename = "pii/list")]
    PiiList(PiiBotParams),
    /// Appends a plugin filter to a bot's pipeline ([`PiiFilter`]). What an agent session may
    /// do, with `pii/list`.
    #[serde(rename = "pii/add")]
    PiiAdd(PiiAddParams),
    /// Enables or disables one filter of a bot. For the owner, not for agent sessions.
    #[serde(rename = "pii/setEnabled")]
    PiiSetEnabled(PiiSetEnabledParams),
    /// Deletes one filter of a bot (deleted defaults stay deleted). For the owner.
    #[serde(rename = "pii/delete")]
    PiiDelete(PiiFilterParams),
    /// The playground: runs a bot's pipeline over at most 1024 bytes and stores nothing.
    #[serde(rename = "pii/test")]
    PiiTest(PiiTextParams),
    /// Runs a bot's pipeline over a text ([`PiiRedactResult`]).
    #[serde(rename = "pii/redact")]
    PiiRedact(PiiTextParams),
    /// Launches an agent CLI hosted by the daemon ([`AgentsOpenResult`]); it outlives the
    /// connection that asked for it.
    #[serde(rename = "agents/open")]
    AgentsOpen(Box<AgentsOpenParams>),
    /// Sends a message to a hosted agent: accepted, queued behind the running turn, or
    /// rejected ([`AgentsSendResult`]).
    #[serde(rename = "agents/send")]
    AgentsSend(AgentsSendParams),
    /// Interrupts a hosted agent's running turn.
    #[serde(rename = "agents/interrupt")]
    AgentsInterrupt(AgentsSessionParams),
    /// Stops a hosted agent through the contract (bounded; the process group is killed after
    /// the grace period) and reports how it closed ([`AgentsClosed`]).
    #[serde(rename = "agents/stop")]
    AgentsStop(AgentsStopParams),
    /// One hosted agent's state ([`AgentSummary`]).
    #[serde(rename = "agents/snapshot")]
    AgentsSnapshot(AgentsSessionParams),
    /// Every hosted agent of this daemon run, running or recently closed.
    #[serde(rename = "agents/list")]
    AgentsList,
    /// Streams a hosted agent's events from sequence number `from` as `event` frames; the
    /// answer comes when the session has closed and every event was sent ([`AgentsClosed`]).
    #[serde(rename = "agents/events")]
    AgentsEvents(AgentsEventsParams),
    /// Adds or replaces a bot: what to launch when a message wakes it.
    #[serde(rename = "bots/add")]
    BotsAdd(BotDefinition),
    /// Removes a bot with its inbox and outbox.
    #[serde(rename = "bots/remove")]
    BotsRemove(BotParams),
    /// Every bot.
    #[serde(rename = "bots/list")]
    BotsList,
    /// A message for a bot from its owner: stored in its inbox; the bot is woken with a notice
    /// that carries no body.
    #[serde(rename = "bots/message")]
    BotsMessage(BotMessageParams),
    /// What a bot sent, and its drafts.
    #[serde(rename = "bots/outbox")]
    BotsOutbox(BotParams),
    /// For an agent session: its bot's unseen messages, bodies included; they count as seen.
    #[serde(rename = "inbox/pull")]
    InboxPull,
    /// For an agent session: acknowledges its inbox up to a sequence number.
    #[serde(rename = "inbox/ack")]
    InboxAck(InboxAckParams),
    /// For an agent session: sends a message through the freshness guard and the bot's PII
    /// pipeline; held or blocked sends are saved as drafts.
    #[serde(rename = "message/send")]
    MessageSend(MessageSendParams),
}

impl ControlCall {
    /// The wire method of this request.
    pub fn method(&self) -> &'static str {
        match self {
            Self::AuthHello(_) => AuthHello::NAME,
            Self::Status => DaemonStatus::NAME,
            Self::Stop => DaemonStop::NAME,
            Self::McpConnect(_) => McpConnect::NAME,
            Self::DevicesList => DevicesList::NAME,
            Self::DevicesWarm(_) => DevicesWarm::NAME,
            Self::CredentialsList => CredentialsList::NAME,
            Self::CredentialsRevoke(_) => CredentialsRevoke::NAME,
            Self::PiiList(_) => PiiList::NAME,
            Self::PiiAdd(_) => PiiAdd::NAME,
            Self::PiiSetEnabled(_) => PiiSetEnabled::NAME,
            Self::PiiDelete(_) => PiiDelete::NAME,
            Self::PiiTest(_) => PiiTest::NAME,
            Self::PiiRedact(_) => PiiRedact::NAME,
            Self::AgentsOpen(_) => AgentsOpen::NAME,
            Self::AgentsSend(_) => AgentsSend::NAME,
            Self::AgentsInterrupt(_) => AgentsInterrupt::NAME,
            Self::AgentsStop(_) => AgentsStop::NAME,
            Self::AgentsSnapshot(_) => AgentsSnapshot::NAME,
            Self::AgentsList => AgentsList::NAME,
            Self::AgentsEvents(_) => AgentsEvents::NAME,
            Self::BotsAdd(_) => BotsAdd::NAME,
            Self::BotsRemove(_) => BotsRemove::NAME,
            Self::BotsList => BotsList::NAME,
            Self::BotsMessage(_) => BotsMessage::NAME,
            Self::BotsOutbox(_) => BotsOutbox::NAME,
            Self::InboxPull => InboxPull::NAME,
            Self::InboxAck(_) => InboxAck::NAME,
            Self::MessageSend(_) => MessageSend::NAME,
        }
    }
}

macro_rules! methods {
    ($( $(#[$meta:meta])* $marker:ident = $name:literal, ($params:ty) -> $output:ty, $into:expr; )*) => {
        $(
            $(#[$meta])*
            #[derive(Debug, Clone, Copy)]
            pub struct $marker;

            impl Method for $marker {
                const NAME: &'static str = $name;
                type Params = $params;
                type Output = $output;
                fn call(params: $params) -> ControlCall {
                    ($into)(params)
                }
            }
        )*

        /// Every method of the control socket, in the order README's table lists them.
        pub const METHOD_NAMES: &[&str] = &[$($name),*];
    };
}

methods! {
    /// `auth/hello`.
    AuthHello = "auth/hello", (AuthHelloParams) -> AuthHelloResult, ControlCall::AuthHello;
    /// `daemon/status`.
    DaemonStatus = "daemon/status", (()) -> StatusResult, |()| ControlCall::Status;
    /// `daemon/stop`.
    DaemonStop = "daemon/stop", (()) -> StopResult, |()| ControlCall::Stop;
    /// `mcp/connect`.
    McpConnect = "mcp/connect", (McpConnectParams) -> McpConnectResult, ControlCall::McpConnect;
    /// `devices/list`.
    DevicesList = "devices/list", (()) -> DevicesListResult, |()| ControlCall::DevicesList;
    /// `devices/warm`.
    DevicesWarm = "devices/warm", (DevicesWarmParams) -> DevicesWarmResult, ControlCall::DevicesWarm;
    /// `credentials/list`.
    CredentialsList = "credentials/list", (()) -> VoucherListResult, |()| ControlCall::CredentialsList;
    /// `credentials/revoke`.
    CredentialsRevoke = "credentials/revoke", (CredentialsRevokeParams) -> RevokedResult, ControlCall::CredentialsRevoke;
    /// `pii/list`.
    PiiList = "pii/list", (PiiBotParams) -> PiiListResult, ControlCall::PiiList;
    /// `pii/add`.
    PiiAdd = "pii/add", (PiiAddParams) -> PiiFilter, ControlCall::PiiAdd;
    /// `pii/setEnabled`.
    PiiSetEnabled = "pii/setEnabled", (PiiSetEnabledParams) -> PiiListResult, ControlCall::PiiSetEnabled;
    /// `pii/delete`.
    PiiDelete = "pii/delete", (PiiFilterParams) -> PiiListResult, ControlCall::PiiDelete;
    /// `pii/test`.
    PiiTest = "pii/test", (PiiTextParams) -> PiiRedactResult, ControlCall::PiiTest;
    /// `pii/redact`.
    PiiRedact = "pii/redact", (PiiTextParams) -> PiiRedactResult, ControlCall::PiiRedact;
    /// `agents/open`.
    AgentsOpen = "agents/open", (AgentsOpenParams) -> AgentsOpenResult, |params| ControlCall::AgentsOpen(Box::new(params));
    /// `agents/send`.
    AgentsSend = "agents/send", (AgentsSendParams) -> AgentsSendResult, ControlCall::AgentsSend;
    /// `agents/interrupt`.
    AgentsInterrupt = "agents/interrupt", (AgentsSessionParams) -> AgentSummary, ControlCall::AgentsInterrupt;
    /// `agents/stop`.
    AgentsStop = "agents/stop", (AgentsStopParams) -> AgentsClosed, ControlCall::AgentsStop;
    /// `agents/snapshot`.
    AgentsSnapshot = "agents/snapshot", (AgentsSessionParams) -> AgentSummary, ControlCall::AgentsSnapshot;
    /// `agents/list`.
    AgentsList = "agents/list", (()) -> AgentsListResult, |()| ControlCall::AgentsList;
    /// `agents/events`.
    AgentsEvents = "agents/events", (AgentsEventsParams) -> AgentsClosed, ControlCall::AgentsEvents;
    /// `bots/add`.
    BotsAdd = "bots/add", (BotDefinition) -> BotDefinition, ControlCall::BotsAdd;
    /// `bots/remove`.
    BotsRemove = "bots/remove", (BotParams) -> BotRemoved, ControlCall::BotsRemove;
    /// `bots/list`.
    BotsList = "bots/list", (()) -> BotsListResult, |()| ControlCall::BotsList;
    /// `bots/message`.
    BotsMessage = "bots/message", (BotMessageParams) -> BotMessageResult, ControlCall::BotsMessage;
    /// `bots/outbox`.
    BotsOutbox = "bots/outbox", (BotParams) -> OutboxResult, ControlCall::BotsOutbox;
    /// `inbox/pull`.
    InboxPull = "inbox/pull", (()) -> InboxPullResult, |()| ControlCall::InboxPull;
    /// `inbox/ack`.
    InboxAck = "inbox/ack", (InboxAckParams) -> InboxCursorResult, ControlCall::InboxAck;
    /// `message/send`.
    MessageSend = "message/send", (MessageSendParams) -> MessageSendResult, ControlCall::MessageSend;
}

/// A failure on the control socket: a code a program can branch on and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("[{code}] {message}")]
pub struct ControlError {
    pub code: ErrorCode,
    pub message: String,
}

impl ControlError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// The error codes of the control socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The peer is not the daemon's user, or an agent session asked for what only the owner
    /// may do.
    Forbidden,
    /// The connection has not proved who it is (`auth/hello` with the token or a voucher).
    Unauthenticated,
    /// A frame that is not a line of JSON, or too long; the connection closes.
    InvalidFrame,
    /// A frame that is JSON but not a known request; the connection stays open.
    InvalidRequest,
    /// A known method with parameters it cannot use.
    InvalidParams,
    NotFound,
    /// The daemon serves as many control connections as it will.
    Busy,
    /// A device operation failed.
    DeviceError,
    /// The PII pipelines could not be opened (a broken `machine-id` file).
    PiiUnavailable,
    /// A bot's `pipelines.json` does not parse; other bots are unaffected.
    CorruptPipeline,
    /// A PII filter failed (errored, timed out, returned an invalid result): nothing was sent.
    FilterFailed,
    Internal,
    /// A code this client does not know (a newer daemon).
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Unauthenticated => "unauthenticated",
            Self::InvalidFrame => "invalid_frame",
            Self::InvalidRequest => "invalid_request",
            Self::InvalidParams => "invalid_params",
            Self::NotFound => "not_found",
            Self::Busy => "busy",
            Self::DeviceError => "device_error",
            Self::PiiUnavailable => "pii_unavailable",
            Self::CorruptPipeline => "corrupt_pipeline",
            Self::FilterFailed => "filter_failed",
            Self::Internal => "internal",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The daemon's lifecycle state as reported on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DaemonState {
    Starting,
    Ready,
    Failed,
    ShuttingDown,
}

impl DaemonState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::ShuttingDown => "shutting_down",
        }
    }
}

/// The answer to `daemon/status`. Never carries the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusResult {
    pub pid: u32,
    pub version: String,
    pub uptime_ms: u64,
    pub state: DaemonState,
    pub http_endpoint: Option<String>,
    pub socket: PathBuf,
}

/// The answer to `daemon/stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopResult {
    pub stopping: bool,
}

/// `mcp/connect`: `session_id` becomes the connection's session key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpConnectParams {
    pub session_id: String,
    /// The client chose the session id (`paddock mcp --session-id`), so it can come back: when
    /// this connection closes, the session keeps its device for the daemon's grace period
    /// (`--session-grace-secs`) instead of releasing it at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reconnectable: bool,
}

/// The answer to `mcp/connect`; JSON-RPC lines follow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpConnectResult {
    pub session_id: String,
}

/// The answer to `devices/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DevicesListResult {
    pub devices: Vec<DeviceEntry>,
    pub default_profile: String,
}

/// One device of the pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceEntry {
    pub id: String,
    /// `web` or `android`.
    pub platform: String,
    pub profile: String,
    /// `warming`, `idle`, `in_use`, …
    pub state: String,
    /// The session bound to it.
    pub session: Option<String>,
    /// The device's process (Chromium), when it has one.
    pub pid: Option<u32>,
}

/// `devices/warm`: boot `count` (1–16) more devices of `platform`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevicesWarmParams {
    pub count: usize,
    pub platform: String,
    pub profile: Option<String>,
    /// Android: the AVD whose emulator to boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avd: Option<String>,
}

/// The answer to `devices/warm`: the ids of the devices now warm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DevicesWarmResult {
    pub warmed: Vec<String>,
}

/// `credentials/revoke`: exactly one of a voucher id or a launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialsRevokeParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
}

/// The answer to `credentials/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoucherListResult {
    pub vouchers: Vec<VoucherEntry>,
}

/// The answer to `credentials/revoke`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokedResult {
    pub revoked: Vec<VoucherEntry>,
}

/// One live voucher: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoucherEntry {
    pub id: String,
    pub launch: String,
    pub capabilities: Vec<GrantEntry>,
    pub age_ms: u64,
    pub minted_at_unix_ms: u64,
}

/// One capability of a voucher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantEntry {
    pub upstream: String,
    /// `POST`, or `*` for any method.
    pub method: String,
    pub path_prefix: String,
}

/// `pii/list`: the bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PiiBotParams {
    pub bot: String,
}

/// `pii/add`: a plugin source and its description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PiiAddParams {
    pub bot: String,
    pub source: SensitiveText,
    pub description: String,
}

/// `pii/setEnabled`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PiiSetEnabledParams {
    pub bot: String,
    pub filter_id: String,
    pub enabled: bool,
}

/// `pii/delete`: one filter of a bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PiiFilterParams {
    pub bot: String,
    pub filter_id: String,
}

/// `pii/test` and `pii/redact`: the text to filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PiiTextParams {
    pub bot: String,
    pub text: SensitiveText,
}

/// Text that may hold the very values PII filters exist to remove (message text, plugin
/// sources). It travels as a plain JSON string, but its `Debug` shows only its length, so a
/// logged request never carries it. Read it with [`SensitiveText::expose`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SensitiveText(String);

impl SensitiveText {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// The text itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SensitiveText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SensitiveText(<{} bytes>)", self.0.len())
    }
}

/// The answer to `pii/list` (and to `pii/setEnabled` and `pii/delete`: the list after).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PiiListResult {
    pub bot: String,
    /// Changes with every management change of the bot's pipeline.
    pub revision: u64,
    pub filters: Vec<PiiFilter>,
}

/// One filter as listed (and as `pii/add` answers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PiiFilter {
    /// `keys`, `email`, `id-numbers`, `phone-numbers`, `bank-cards` or `plugin-N`.
    pub id: String,
    pub enabled: bool,
    pub kind: PiiFilterKind,
    /// A default filter's display name, a plugin's description.
    pub description: String,
    /// When a plugin was added, RFC 3339 UTC; absent for defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// Whether a filter is built in or an added plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiiFilterKind {
    Default,
    Plugin,
}

/// The answer to `pii/test` and `pii/redact`, and what `paddock pii redact` prints: the
/// filtered text and the ids of the filters that reported a hit, never a detected value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PiiRedactResult {
    pub text: String,
    pub triggered_filters: Vec<String>,
}

/// `agents/open`: what to launch, where, and how it reaches its model API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsOpenParams {
    /// `claude`, `codex`, `opencode`, `pi` or `cursor`.
    pub backend: String,
    /// The working directory (absolute).
    pub cwd: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `default`, `acceptEdits`, `plan` or `bypassPermissions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Markdown instructions given at launch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Environment for this launch (above the daemon's layer). Never a key: the agent gets a
    /// voucher.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    /// The bot this session works for (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot: Option<String>,
    /// How permission requests are answered while nobody is attached: `deny` (default) or
    /// `allow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<String>,
    /// The model upstream for this launch; absent, the daemon resolves one from its own
    /// configuration and environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<AgentUpstream>,
    /// The first message, admitted as command `c1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<SensitiveText>,
    /// This launch's sandbox, over the daemon's (`[agents]` in the config file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<AgentSandbox>,
}

/// One agent's sandbox: on or off, and more paths than every launch gets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSandbox {
    /// `landlock` or `off`; absent, the daemon's setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Hierarchies (or files) it may also read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<PathBuf>,
    /// … read and execute (a toolchain outside /usr).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec: Vec<PathBuf>,
    /// … read and write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<PathBuf>,
}

/// A model upstream as the caller resolved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentUpstream {
    /// `https://…` (or `http://` for a local gateway), with an optional base path.
    pub url: String,
    /// The header that carries the key upstream: `x-api-key`, `authorization`, …
    pub header: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    pub key: AgentKey,
}

/// Where the daemon gets the real key for one launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum AgentKey {
    /// A source the daemon reads itself: `file:PATH` or `keychain:SERVICE`.
    Source(String),
    /// The key itself, handed over from the caller's environment for this launch only: it
    /// lives in the daemon's memory until the session closes and is never written anywhere.
    Value(SensitiveText),
}

/// `agents/open`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsOpenResult {
    pub session: AgentSummary,
    /// The first message's receipt, when a prompt was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<AgentsSendResult>,
}

/// Names a hosted session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsSessionParams {
    pub id: String,
}

/// `agents/send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsSendParams {
    pub id: String,
    pub text: SensitiveText,
}

/// A message's receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsSendResult {
    /// The command id events refer to (`c1`, `c2`, …).
    pub command_id: String,
    /// `accepted`, `queued` or `rejected`.
    pub receipt: String,
    /// For `queued`: 1 is next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// For `rejected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `agents/stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsStopParams {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Grace before the process group is killed (default 10 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_after_ms: Option<u64>,
}

/// `agents/events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsEventsParams {
    pub id: String,
    /// The first sequence number wanted (events are numbered from 1); 0 or 1 replays all.
    #[serde(default)]
    pub from: u64,
}

/// One event of a hosted session, as an `event` frame of `agents/events` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEventFrame {
    /// 1, 2, 3 … per session, without gaps.
    pub seq: u64,
    /// The contract's event: `{"type":"assistant_text_delta","text":"…"}` and the like.
    pub event: serde_json::Value,
}

/// A hosted session as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSummary {
    pub id: String,
    pub backend: String,
    pub bot: String,
    /// `ready`, `idle`, `busy`, `stopping` or `closed`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_command: Option<String>,
    pub queued: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub cwd: PathBuf,
    /// The launch's voucher id (`v-…`), while it is live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voucher: Option<String>,
    /// The highest event sequence number so far.
    pub last_seq: u64,
    pub started_at_unix_ms: u64,
}

/// `agents/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsListResult {
    pub sessions: Vec<AgentSummary>,
}

/// How a hosted session closed (`agents/stop`, and `agents/events` at the end).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsClosed {
    pub id: String,
    /// `stopped`, `crashed` or `daemon_shutdown`.
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub forced: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Commands that never ran.
    pub failed_commands: Vec<String>,
    pub last_seq: u64,
}

/// `auth/hello`: exactly one of the daemon's token (the owner) or a launch's voucher (that
/// agent session).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthHelloParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<SensitiveText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voucher: Option<SensitiveText>,
}

/// Who the connection now speaks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthHelloResult {
    /// `owner` or `session`.
    pub role: String,
    /// For `session`: the hosted session and its bot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot: Option<String>,
}

/// A bot's definition (`bots/add`, and how `bots/list` shows it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BotDefinition {
    pub id: String,
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The working directory (absolute).
    pub cwd: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// As in `agents/open` (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// As in `agents/open` (default `deny`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<String>,
    /// As in `agents/open`: this bot's sandbox over the daemon's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<AgentSandbox>,
}

/// Names a bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BotParams {
    pub bot: String,
}

/// `bots/remove`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BotRemoved {
    pub bot: String,
    pub removed: bool,
}

/// `bots/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BotsListResult {
    pub bots: Vec<BotDefinition>,
}

/// `bots/message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BotMessageParams {
    pub bot: String,
    /// The channel ref the message arrives in (default `/.dm/owner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub text: SensitiveText,
}

/// `bots/message`'s answer: the message's number in the bot's inbox, and the bot's session
/// if one is running (otherwise its manager is starting one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BotMessageResult {
    pub seq: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// One message as `inbox/pull` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxEntry {
    pub seq: u64,
    pub target: String,
    pub sender: String,
    pub text: String,
    pub received_at_unix_ms: u64,
}

/// `inbox/pull`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxPullResult {
    pub bot: String,
    pub messages: Vec<InboxEntry>,
    pub seen: u64,
    pub acked: u64,
}

/// `inbox/ack`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InboxAckParams {
    /// Acknowledge up to this sequence number (default: everything seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upto: Option<u64>,
}

/// A bot's inbox cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxCursorResult {
    pub bot: String,
    pub seen: u64,
    pub acked: u64,
}

/// `message/send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageSendParams {
    pub target: String,
    pub text: SensitiveText,
    /// Send even though messages arrived that the agent has not seen.
    #[serde(default)]
    pub continue_anyway: bool,
}

/// `message/send`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendResult {
    /// `sent`, `held` (newer messages are unseen; saved as a draft) or `blocked` (the PII
    /// pipeline failed; saved as a draft, nothing sent).
    pub state: String,
    /// The freshness decision: `forward`, `held` or `bypass`.
    pub plan: String,
    /// Stable for the same bot, target, text and seen boundary.
    pub producer_fact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For `held`: the latest unseen messages, to reconcile first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<InboxEntry>,
    /// The PII filters that changed the sent text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggered_filters: Vec<String>,
}

/// One outbox entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxMessage {
    pub id: u64,
    pub target: String,
    pub text: String,
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub producer_fact_id: String,
    pub created_at_unix_ms: u64,
}

/// `bots/outbox`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxResult {
    pub bot: String,
    pub messages: Vec<OutboxMessage>,
}
