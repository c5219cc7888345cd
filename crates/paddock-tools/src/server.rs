//! The registry and the rmcp server it hands out per request (HTTP) or per connection (socket).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures_util::FutureExt as _;
use paddock_store::{ChoiceScope, Choices, Store};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tracing::{debug, warn};

use crate::audit::{AuditAuth, AuditSink, Outcome, ToolCallEvent};
use crate::auth::AuthContext;
use crate::backend::Backend;
use crate::catalog::{CatalogTool, ToolDef};
use crate::discovery::{Layer, ProcessOptions, StartupSelection};
use crate::error::{ToolError, ToolErrorCode};
use crate::policy::Policy;
use crate::resources::{ResourceRef, Resources};
use crate::session::{IN_BAND_ARGUMENT, SESSION_HEADER, SessionKey};
use crate::tasks::{CallRecorder, TaskBackend};
use crate::tools::{Call, Image, Output};

/// Produces the daemon-specific part of `daemonInfo`.
pub type InfoSource = Arc<dyn Fn() -> Value + Send + Sync>;

/// What a registry is built from.
pub struct RegistryConfig {
    pub catalog: Vec<CatalogTool>,
    pub startup: StartupSelection,
    pub process_options: ProcessOptions,
    pub store: Arc<Store>,
    pub audit: Arc<dyn AuditSink>,
    pub info: InfoSource,
}

impl std::fmt::Debug for RegistryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryConfig")
            .field("tools", &self.catalog.len())
            .field("process_options", &self.process_options)
            .finish_non_exhaustive()
    }
}

/// Everything a tool call knows about its caller. Built by the transport.
#[derive(Clone)]
pub struct ToolCtx {
    pub auth: AuthContext,
    pub policy: Arc<Policy>,
    /// The connection profile's key (the caller's principal or connection).
    pub profile: String,
    /// The routing session fixed by the transport (a socket connection); HTTP requests name
    /// theirs per request.
    pub session: Option<SessionKey>,
    pub backend: Arc<dyn Backend>,
    /// The daemon's tasks, for the task tools (`None` where there are none: `[unavailable]`).
    pub tasks: Option<Arc<dyn TaskBackend>>,
    /// Receives this caller's tool calls: a task's agent connection, or every session when
    /// the daemon records tool calls.
    pub recorder: Option<Arc<dyn CallRecorder>>,
    /// The joined daemons, for the fleet server's tools (`None` on a daemon).
    pub fleet: Option<Arc<dyn crate::fleet::FleetBackend>>,
}

impl std::fmt::Debug for ToolCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCtx")
            .field("auth", &self.auth)
            .field("policy", &self.policy.name())
            .field("profile", &self.profile)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// Short guidance for models, sent with `initialize` and `server/discover`.
pub const INSTRUCTIONS: &str = "Paddock drives real devices. Acquire one first (`getWeb` for a \
headless browser with mobile emulation, `getAndroid` for an Android phone or emulator); it is bound to your session until `releaseDevice`. \
Over HTTP, send the returned `sessionUuid` with every device tool, as the \
`x-paddock-session-id` header or the `__mcpSessionId` argument; over stdio the connection is \
the session. `observe` returns the screen's elements with refs such as `e12`: act on a ref \
(`tapOn {ref}`), or on `text`/`id` when you have no fresh observation. Refs go stale when the \
page changes, so observe again after every action that changes the screen, and before acting \
on what you expect to see. An action answers with the screen after it, or, when shorter, with \
what changed since your last observation (the header line only if it changed): `+` a new \
element, `-` one gone, `~` one changed (shown as it is now); unchanged elements keep their refs. \
`observe` always returns the whole screen. Lines carry bounds (`@x,y wxh`) only where a ref is \
not enough; `observe {bounds: true}` lists every element's.";

/// The protocol versions served on a long-lived stdio connection: every revision whose stdio
/// transport this server implements in full (2025-03-26 requires JSON-RPC batches, which
/// Paddock does not accept).
const STDIO_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2024_11_05,
];

/// The protocol versions served over HTTP: Streamable HTTP without batches (2025-06-18 on;
/// 2024-11-05 had the older HTTP+SSE transport, and 2025-03-26 requires batches).
pub const HTTP_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
];

/// Where `notifications/tools/list_changed` reaches a client.
enum Notifier {
    /// A long-lived connection (the control socket's MCP).
    Peer(Peer<RoleServer>),
    /// An HTTP `subscriptions/listen` stream (protocol 2026-07-28).
    Subscription(SubscriptionSink),
}

/// An HTTP call in flight: its session header and its JSON-RPC request id.
type InflightKey = (Option<String>, String);

/// Removes an in-flight HTTP call from the registry when the call ends, however it ends.
struct Inflight<'a> {
    registry: &'a Registry,
    key: InflightKey,
}

impl Drop for Inflight<'_> {
    fn drop(&mut self) {
        self.registry.lock_inflight().remove(&self.key);
    }
}

struct LiveConnection {
    ctx: ToolCtx,
    notifier: Notifier,
    advertised: BTreeSet<String>,
}

/// The tool surface of one daemon: catalog, discovery state, audit, live connections.
pub struct Registry {
    catalog: Vec<CatalogTool>,
    pub(crate) startup: StartupSelection,
    pub(crate) process_options: ProcessOptions,
    pub(crate) store: Arc<Store>,
    audit: Arc<dyn AuditSink>,
    pub(crate) info: InfoSource,
    connections: Mutex<HashMap<u64, LiveConnection>>,
    next_connection: AtomicU64,
    /// Bumped by every discovery change, so a `subscriptions/listen` stream can tell whether
    /// one landed between its acknowledgment and its registration.
    discovery_epoch: AtomicU64,
    /// The `instructions` of `initialize`; [`INSTRUCTIONS`] unless the host set its own.
    instructions: std::sync::OnceLock<&'static str>,
    /// What the sessions' tools produced (screenshots), for `resources/list` and `read`.
    pub(crate) resources: Resources,
    /// HTTP calls in flight, by session header and request id, so that a
    /// `notifications/cancelled` POSTed on its own (stateless HTTP before 2026-07-28, where
    /// nothing else ties it to the call) can stop one.
    inflight: Mutex<HashMap<InflightKey, Arc<tokio::sync::Notify>>>,
    /// Set at shutdown: every `subscriptions/listen` stream ends with its final result.
    closing: tokio::sync::watch::Sender<bool>,
    /// What each session last saw of its device (device id, header line and elements), so an
    /// action can answer with what changed since.
    seen: Mutex<HashMap<String, (String, crate::render::Seen)>>,
    /// Where saved web storage states live (set by the daemon; unset, the storage tools are
    /// `[unavailable]`).
    web_storage: std::sync::OnceLock<crate::web_storage::StorageStore>,
}

/// Sessions whose last observation is kept for change lists; beyond this the map starts over.
const SEEN_SESSIONS: usize = 1024;

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.catalog.len())
            .finish_non_exhaustive()
    }
}

impl Registry {
    pub fn new(config: RegistryConfig) -> Arc<Self> {
        Arc::new(Self {
            catalog: config.catalog,
            startup: config.startup,
            process_options: config.process_options,
            store: config.store,
            audit: config.audit,
            info: config.info,
            connections: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(1),
            discovery_epoch: AtomicU64::new(0),
            resources: Resources::default(),
            inflight: Mutex::new(HashMap::new()),
            closing: tokio::sync::watch::Sender::new(false),
            seen: Mutex::new(HashMap::new()),
            web_storage: std::sync::OnceLock::new(),
            instructions: std::sync::OnceLock::new(),
        })
    }

    /// Keeps saved web storage states (`saveStorage`, `getWeb {storage}`) under `dir`, one
    /// subdirectory per connection profile. Only the first call counts.
    /// Replaces the guidance sent with `initialize` (a host whose tools differ, such as the
    /// fleet server).
    pub fn set_instructions(&self, instructions: &'static str) {
        let _ = self.instructions.set(instructions);
    }

    pub fn set_web_storage_dir(&self, dir: std::path::PathBuf) {
        let _ = self
            .web_storage
            .set(crate::web_storage::StorageStore::new(dir));
    }

    /// The saved web storage states, or `[unavailable]` where the host keeps none.
    pub(crate) fn web_storage(&self) -> Result<&crate::web_storage::StorageStore, ToolError> {
        self.web_storage.get().ok_or_else(|| {
            ToolError::new(
                crate::error::ToolErrorCode::Unavailable,
                "this host keeps no saved web storage",
            )
        })
    }

    /// Records what `session` now knows of device `device`'s screen.
    pub(crate) fn remember_seen(
        &self,
        session: &SessionKey,
        device: &str,
        screen: crate::render::Seen,
    ) {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if seen.len() >= SEEN_SESSIONS && !seen.contains_key(session.as_str()) {
            seen.clear();
        }
        seen.insert(session.as_str().to_owned(), (device.to_owned(), screen));
    }

    /// What `session` last saw on device `device`, if it saw that device.
    pub(crate) fn last_seen(
        &self,
        session: &SessionKey,
        device: &str,
    ) -> Option<crate::render::Seen> {
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        seen.get(session.as_str())
            .filter(|(id, _)| id == device)
            .map(|(_, screen)| screen.clone())
    }

    /// Stops the HTTP call `request_id` made with session header `session` (`None` without
    /// one), as a `notifications/cancelled` asks; false when no such call runs.
    pub fn cancel_http_call(&self, session: Option<&str>, request_id: &str) -> bool {
        let key = (session.map(str::to_owned), request_id.to_owned());
        match self.lock_inflight().get(&key) {
            Some(cancel) => {
                // A stored permit: the call sees it even if it has not started waiting.
                cancel.notify_one();
                true
            }
            None => false,
        }
    }

    fn lock_inflight(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<InflightKey, Arc<tokio::sync::Notify>>> {
        self.inflight
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Ends every `subscriptions/listen` stream gracefully (each gets its final result), so
    /// that the HTTP drain at shutdown does not wait for them.
    pub fn close_subscriptions(&self) {
        self.closing.send_replace(true);
    }

    pub fn catalog(&self) -> &[CatalogTool] {
        &self.catalog
    }

    /// An rmcp server for one HTTP request.
    pub fn server(self: &Arc<Self>, ctx: ToolCtx) -> McpServer {
        self.shared_server(Arc::new(ctx))
    }

    /// An rmcp server for one HTTP request, sharing a context built once.
    pub fn shared_server(self: &Arc<Self>, ctx: Arc<ToolCtx>) -> McpServer {
        McpServer {
            ctx,
            registry: self.clone(),
            connection: None,
            listen_epoch: Arc::new(AtomicU64::new(NO_LISTEN)),
        }
    }

    /// An rmcp server for a long-lived connection; pair it with [`Registry::attach`] once the
    /// handshake is done so the connection gets `notifications/tools/list_changed`.
    pub fn connection_server(self: &Arc<Self>, ctx: ToolCtx) -> (McpServer, u64) {
        let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
        (
            McpServer {
                ctx: Arc::new(ctx),
                registry: self.clone(),
                connection: Some(id),
                listen_epoch: Arc::new(AtomicU64::new(NO_LISTEN)),
            },
            id,
        )
    }

    /// Starts sending list-changed notifications to connection `id`; detach on close.
    pub fn attach(&self, id: u64, ctx: ToolCtx, peer: Peer<RoleServer>) {
        self.watch(id, ctx, Notifier::Peer(peer));
    }

    fn watch(&self, id: u64, ctx: ToolCtx, notifier: Notifier) {
        let advertised = self.listed_names(&ctx, ctx.session.as_ref());
        self.lock_connections().insert(
            id,
            LiveConnection {
                ctx,
                notifier,
                advertised,
            },
        );
    }

    pub fn detach(&self, id: u64) {
        self.lock_connections().remove(&id);
    }

    /// Records that `session` has been used, so `sessionUuid` may name it: known at once, written
    /// on a blocking thread (a failure is logged).
    pub fn record_session(&self, session: &SessionKey) {
        self.store.record_session_soon(session.as_str(), |error| {
            warn!(error = %error, "could not record session");
        });
    }

    /// Writes out every audit event recorded so far.
    pub fn flush_audit(&self) {
        self.audit.flush();
    }

    pub fn live_connections(&self) -> usize {
        self.lock_connections().len()
    }

    fn lock_connections(&self) -> std::sync::MutexGuard<'_, HashMap<u64, LiveConnection>> {
        self.connections
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&CatalogTool> {
        self.catalog.iter().find(|tool| tool.def.name == name)
    }

    /// Whether `tool` exists for this caller at all: allowed by policy, its process option
    /// given, and not plan-only.
    pub(crate) fn visible(&self, tool: &ToolDef, ctx: &ToolCtx) -> bool {
        self.callable(tool, ctx) && !tool.plan_only
    }

    /// Whether this caller may call `tool` by name: allowed by policy and its process option
    /// given. Plan-only tools are callable but never listed (spec 003).
    pub(crate) fn callable(&self, tool: &ToolDef, ctx: &ToolCtx) -> bool {
        ctx.policy.allows_tool(tool.name)
            && self.process_options.satisfies(tool.requires)
            && (!tool.needs_tasks || ctx.tasks.is_some())
    }

    /// What `session` last saw of the device bound to it.
    pub(crate) fn seen_now(
        &self,
        ctx: &ToolCtx,
        session: &SessionKey,
    ) -> Option<Vec<paddock_devices::Element>> {
        let device = ctx.backend.device(session.as_str()).ok()?;
        self.last_seen(session, device.id())
            .map(|screen| screen.elements)
    }

    pub(crate) fn profile_choices(&self, ctx: &ToolCtx) -> Choices {
        self.store
            .choices(&ChoiceScope::Profile(ctx.profile.clone()))
    }

    pub(crate) fn session_choices(&self, session: Option<&SessionKey>) -> Choices {
        session
            .map(|key| {
                self.store
                    .choices(&ChoiceScope::Session(key.as_str().to_owned()))
            })
            .unwrap_or_default()
    }

    /// Visible tools with their discovery state and deciding layer.
    pub(crate) fn resolve_all(
        &self,
        ctx: &ToolCtx,
        profile: &Choices,
        session: &Choices,
    ) -> Vec<(&ToolDef, bool, Layer)> {
        self.catalog
            .iter()
            .map(|tool| &tool.def)
            .filter(|tool| self.visible(tool, ctx))
            .map(|tool| {
                let (enabled, layer) = self.startup.resolve(tool, profile, session);
                (tool, enabled, layer)
            })
            .collect()
    }

    /// Names `tools/list` shows to this caller in `session`.
    pub fn listed_names(&self, ctx: &ToolCtx, session: Option<&SessionKey>) -> BTreeSet<String> {
        let profile = self.profile_choices(ctx);
        let session = self.session_choices(session);
        self.resolve_all(ctx, &profile, &session)
            .into_iter()
            .filter(|(_, enabled, _)| *enabled)
            .map(|(tool, _, _)| tool.name.to_owned())
            .collect()
    }

    /// The tools `tools/list` shows to this caller in `session`, as MCP tool definitions.
    pub fn listed_tools(&self, ctx: &ToolCtx, session: Option<&SessionKey>) -> Vec<Tool> {
        let names = self.listed_names(ctx, session);
        self.catalog
            .iter()
            .filter(|tool| names.contains(tool.def.name))
            .map(|tool| self.mcp_tool(tool, &ctx.policy))
            .collect()
    }

    /// Sends `notifications/tools/list_changed` to each live connection whose listed set
    /// changed.
    pub(crate) fn discovery_changed(&self) {
        self.discovery_epoch.fetch_add(1, Ordering::SeqCst);
        let mut connections = self.lock_connections();
        for connection in connections.values_mut() {
            let now = self.listed_names(&connection.ctx, connection.ctx.session.as_ref());
            if now != connection.advertised {
                connection.advertised = now;
                match &connection.notifier {
                    // From 2026-07-28 a connection has no `initialize` (so no peer info), and a
                    // list change goes out only on a `subscriptions/listen` the client opened.
                    Notifier::Peer(peer) if peer.peer_info().is_none() => {}
                    Notifier::Peer(peer) => {
                        let peer = peer.clone();
                        tokio::spawn(async move {
                            if let Err(error) = peer.notify_tool_list_changed().await {
                                warn!(%error, "could not send tools/list_changed");
                            }
                        });
                    }
                    Notifier::Subscription(sink) => {
                        let sink = sink.clone();
                        tokio::spawn(async move {
                            if let Err(error) = sink.notify_tool_list_changed().await {
                                debug!(%error, "could not send tools/list_changed to a listener");
                            }
                        });
                    }
                }
            }
        }
    }

    fn tool_description(&self, tool: &ToolDef, policy: &Policy) -> String {
        match policy.narrowed_operations(tool.name) {
            Some(allowed) => format!(
                "{} Allowed operations under the `{}` policy: {}.",
                tool.description,
                policy.name(),
                allowed
                    .iter()
                    .map(|operation| format!("`{operation}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => tool.description.to_owned(),
        }
    }

    pub(crate) fn mcp_tool(&self, tool: &CatalogTool, policy: &Policy) -> Tool {
        let schema = tool.input_schema.clone();
        let output = tool.output_schema.clone();
        let tool = &tool.def;
        let mut described = Tool::new(tool.name, self.tool_description(tool, policy), schema);
        if let Some(output) = output {
            described = described.with_raw_output_schema(output);
        }
        described.with_title(tool.title).with_annotations(
            ToolAnnotations::new()
                .read_only(tool.hints.read_only)
                .destructive(tool.hints.destructive)
                .idempotent(tool.hints.idempotent)
                .open_world(tool.hints.open_world),
        )
    }

    fn record(&self, ctx: &ToolCtx, call: AuditCall<'_>) {
        let name: String = call.tool.chars().take(128).collect();
        self.audit.record(&ToolCallEvent {
            tool_name: name,
            operation: call.operation,
            outcome: call.outcome,
            duration_ms: u64::try_from(call.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            request_id: call.request_id,
            auth: AuditAuth {
                kind: ctx.auth.kind().as_str(),
                subject: ctx.auth.subject().to_owned(),
                owner_id: ctx.auth.owner_id().map(str::to_owned),
                client_id: ctx.auth.client_id().map(str::to_owned),
            },
        });
    }
}

struct AuditCall<'a> {
    tool: &'a str,
    operation: Option<String>,
    outcome: Outcome,
    started: Instant,
    request_id: Option<String>,
}

/// A caller's context for one HTTP request, put in the request's extensions by a transport
/// that authenticates each request (the fleet server); it replaces the context the server was
/// built with for that request's tool calls.
#[derive(Debug, Clone)]
pub struct RequestCtx(pub Arc<ToolCtx>);

/// The per-request (or per-connection) rmcp server.
#[derive(Clone)]
pub struct McpServer {
    ctx: Arc<ToolCtx>,
    registry: Arc<Registry>,
    connection: Option<u64>,
    /// The registry's discovery epoch when rmcp asked for a `subscriptions/listen` filter,
    /// before it sent the acknowledgment; [`NO_LISTEN`] otherwise.
    listen_epoch: Arc<AtomicU64>,
}

/// [`McpServer::listen_epoch`] with no `subscriptions/listen` under way.
const NO_LISTEN: u64 = u64::MAX;

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("ctx", &self.ctx)
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// The session key of a request: the transport's, the header's, or the in-band argument's
    /// (which is removed from `arguments`). Disagreeing keys are an error.
    fn request_session(
        &self,
        header: Option<&http::HeaderValue>,
        arguments: Option<&mut JsonObject>,
    ) -> Result<Option<SessionKey>, ToolError> {
        let header = header
            .map(|value| {
                value
                    .to_str()
                    .map_err(|_| ToolError::invalid_input("session id header is not ASCII"))
                    .and_then(SessionKey::parse)
            })
            .transpose()?;
        let in_band = match arguments.and_then(|arguments| arguments.remove(IN_BAND_ARGUMENT)) {
            None => None,
            Some(Value::String(text)) => Some(SessionKey::parse(&text)?),
            Some(_) => {
                return Err(ToolError::invalid_input(format!(
                    "`{IN_BAND_ARGUMENT}` must be a string"
                )));
            }
        };
        let mut chosen = self.ctx.session.clone();
        for candidate in [header, in_band].into_iter().flatten() {
            match &chosen {
                Some(existing) if *existing != candidate => {
                    if self.ctx.auth.kind() == crate::auth::AuthKind::Agent {
                        return Err(ToolError::forbidden(
                            "this connection is bound to its task's device session; another session's id is refused",
                        ));
                    }
                    return Err(ToolError::invalid_input(
                        "the request names two different session ids",
                    ));
                }
                _ => chosen = Some(candidate),
            }
        }
        if let Some(key) = &chosen {
            self.registry.record_session(key);
        }
        Ok(chosen)
    }
}

impl McpServer {
    /// This server with the caller's context of the request, when its transport gave one.
    fn for_request(&self, context: &RequestContext<RoleServer>) -> Cow<'_, Self> {
        match context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<RequestCtx>())
        {
            Some(RequestCtx(ctx)) => Cow::Owned(Self {
                ctx: ctx.clone(),
                ..self.clone()
            }),
            None => Cow::Borrowed(self),
        }
    }

    /// `tools/list` for this caller; `header` is the HTTP session header, if any.
    pub fn list(&self, header: Option<&http::HeaderValue>) -> Result<ListToolsResult, ErrorData> {
        let session = self
            .request_session(header, None)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let tools = self.registry.listed_tools(&self.ctx, session.as_ref());
        if let Some(id) = self.connection
            && let Some(connection) = self.registry.lock_connections().get_mut(&id)
        {
            connection.advertised = tools.iter().map(|tool| tool.name.to_string()).collect();
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// `tools/call` over HTTP: [`McpServer::call`], stopped early when a separate
    /// `notifications/cancelled` names `request_id` with the same session header
    /// ([`Registry::cancel_http_call`]). A stopped call answers `[cancelled]` and is audited so.
    pub async fn call_http(
        &self,
        request: CallToolRequestParams,
        header: Option<&http::HeaderValue>,
        request_id: String,
    ) -> Result<CallToolResult, ErrorData> {
        let key = (
            header
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
            request_id.clone(),
        );
        let cancel = Arc::new(tokio::sync::Notify::new());
        self.registry
            .lock_inflight()
            .insert(key.clone(), cancel.clone());
        let _inflight = Inflight {
            registry: &self.registry,
            key,
        };
        let name = request.name.to_string();
        let started = Instant::now();
        tokio::select! {
            outcome = self.call(request, header, Some(request_id.clone())) => outcome,
            () = cancel.notified() => Ok(self.cancelled(&name, started, request_id)),
        }
    }

    /// The answer and audit line of a call the caller cancelled.
    fn cancelled(&self, tool: &str, started: Instant, request_id: String) -> CallToolResult {
        self.registry.record(
            &self.ctx,
            AuditCall {
                tool,
                operation: None,
                outcome: Outcome::Cancelled,
                started,
                request_id: Some(request_id),
            },
        );
        error_result(&ToolError::new(
            ToolErrorCode::Cancelled,
            "the call was cancelled; its device operation stopped and the session keeps its device",
        ))
    }

    /// `tools/call` for this caller; `header` is the HTTP session header, if any.
    pub async fn call(
        &self,
        request: CallToolRequestParams,
        header: Option<&http::HeaderValue>,
        request_id: Option<String>,
    ) -> Result<CallToolResult, ErrorData> {
        let started = Instant::now();
        let registry = &self.registry;
        let name = request.name.as_ref();
        let audit = |outcome, operation: Option<String>| {
            registry.record(
                &self.ctx,
                AuditCall {
                    tool: name,
                    operation,
                    outcome,
                    started,
                    request_id: request_id.clone(),
                },
            );
        };
        let Some(entry) = registry.tool(name) else {
            audit(Outcome::Error, None);
            return Err(unknown_tool(name));
        };
        let tool = &entry.def;
        if !registry.callable(tool, &self.ctx) {
            if let Some(refusal) = self.ctx.policy.refusal() {
                // A bound connection (a task's agent) is told why, in words it can act on.
                audit(Outcome::Denied, None);
                let error =
                    ToolError::forbidden(format!("`{name}` is not available here: {refusal}"));
                if let Some(recorder) = &self.ctx.recorder {
                    recorder.refused(name, &request.arguments.unwrap_or_default(), &error);
                }
                return Ok(error_result(&error));
            }
            // Indistinguishable from an unknown tool for the caller; the audit says why.
            audit(Outcome::Denied, None);
            return Err(unknown_tool(name));
        }
        let mut arguments = request.arguments.unwrap_or_default();
        let session = match self.request_session(header, Some(&mut arguments)) {
            Ok(session) => session,
            Err(error) => {
                audit(Outcome::Error, None);
                if let Some(recorder) = &self.ctx.recorder {
                    recorder.refused(name, &arguments, &error);
                }
                return Ok(error_result(&error));
            }
        };
        let mut operation = None;
        if tool.is_bundle() {
            let requested = match arguments.get("operation") {
                Some(Value::String(text)) if tool.operation(text).is_some() => text.clone(),
                _ => {
                    let error = ToolError::invalid_input(format!(
                        "`{}` needs `operation`, one of: {}",
                        tool.name,
                        tool.operations
                            .iter()
                            .map(|operation| operation.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    audit(Outcome::Error, None);
                    return Ok(error_result(&error));
                }
            };
            if !self.ctx.policy.allows_operation(tool.name, &requested) {
                let error = ToolError::forbidden(format!(
                    "operation `{requested}` of `{}` is not allowed by the `{}` policy profile",
                    tool.name,
                    self.ctx.policy.name()
                ));
                audit(Outcome::Denied, Some(requested));
                return Ok(error_result(&error));
            }
            operation = Some(requested);
        }
        let recording = self.ctx.recorder.clone().zip(session.clone());
        if let Some((recorder, key)) = &recording
            && let Err(error) = recorder.admit(key, tool.name)
        {
            audit(Outcome::Denied, operation);
            return Ok(error_result(&error));
        }
        let before = recording.as_ref().map(|(_, key)| crate::recording::Before {
            arguments: arguments.clone(),
            seen: registry.seen_now(&self.ctx, key),
        });
        let call = Call {
            registry,
            ctx: &self.ctx,
            tool,
            // A tool that declares no use of the routing session is not given one, so its
            // definition cannot fall out of step with its handler.
            session: session.filter(|_| tool.routing_session),
        };
        // A panic in a handler becomes a typed error for this call; the daemon keeps serving.
        let outcome = std::panic::AssertUnwindSafe(entry.handler.call(call, arguments))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::internal(format!(
                    "`{}` failed unexpectedly; the daemon logged the details",
                    tool.name
                )))
            });
        if let (Some((recorder, key)), Some(before)) = (&recording, before) {
            let (ok, text) = match &outcome {
                Ok(Output::Json(value)) => (true, value.to_string()),
                Ok(Output::Rich { text, .. } | Output::Resource { text, .. }) => {
                    (true, text.clone())
                }
                Ok(Output::Forwarded(result)) => (
                    result.is_error != Some(true),
                    result
                        .content
                        .iter()
                        .filter_map(|content| content.as_text().map(|text| text.text.as_str()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                Err(error) => (false, error.to_string()),
            };
            let call = self.recorded_call(tool, key, before, ok, text, started);
            recorder.record(key, call);
        }
        match outcome {
            Ok(Output::Json(value)) => {
                audit(Outcome::Ok, operation);
                Ok(CallToolResult::structured(value))
            }
            Ok(Output::Rich {
                text,
                image,
                structured,
            }) => {
                audit(Outcome::Ok, operation);
                let mut content = vec![ContentBlock::text(text)];
                match image {
                    Some(Image::Inline(jpeg)) => {
                        use base64::Engine as _;
                        content.push(ContentBlock::image(
                            base64::engine::general_purpose::STANDARD.encode(jpeg),
                            "image/jpeg",
                        ));
                    }
                    Some(Image::Link(reference)) => {
                        content.push(ContentBlock::resource_link(resource_of(&reference)));
                    }
                    None => {}
                }
                let mut result = CallToolResult::success(content);
                result.structured_content = structured;
                Ok(result)
            }
            Ok(Output::Resource {
                text,
                resource,
                embedded,
            }) => {
                audit(Outcome::Ok, operation);
                let attached = match embedded {
                    Some(bytes) => {
                        use base64::Engine as _;
                        ContentBlock::resource(
                            rmcp::model::ResourceContents::BlobResourceContents {
                                uri: resource.uri.clone(),
                                mime_type: Some(resource.mime_type.to_owned()),
                                blob: base64::engine::general_purpose::STANDARD.encode(bytes),
                                meta: None,
                            },
                        )
                    }
                    None => ContentBlock::resource_link(resource_of(&resource)),
                };
                Ok(CallToolResult::success(vec![
                    ContentBlock::text(text),
                    attached,
                ]))
            }
            Ok(Output::Forwarded(result)) => {
                let outcome = if result.is_error == Some(true) {
                    Outcome::Error
                } else {
                    Outcome::Ok
                };
                audit(outcome, operation);
                Ok(result)
            }
            Err(error) => {
                let outcome = if error.is_forbidden() {
                    Outcome::Denied
                } else {
                    Outcome::Error
                };
                audit(outcome, operation);
                Ok(error_result(&error))
            }
        }
    }
}

/// The longest answer text a recorded call keeps.
const RECORDED_OUTCOME_BYTES: usize = 8 * 1024;

impl McpServer {
    fn recorded_call(
        &self,
        tool: &ToolDef,
        session: &SessionKey,
        before: crate::recording::Before,
        ok: bool,
        mut text: String,
        started: Instant,
    ) -> crate::tasks::RecordedCall {
        if text.len() > RECORDED_OUTCOME_BYTES {
            let mut end = RECORDED_OUTCOME_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push('…');
        }
        let after = self.registry.seen_now(&self.ctx, session);
        crate::recording::recorded(
            tool,
            before,
            after,
            ok,
            text,
            u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        )
    }
}

/// A progress reporter whose steps go out, in order, as `notifications/progress` for `token`;
/// the task ends when the reporter is dropped.
fn progress_forwarder(
    peer: Peer<RoleServer>,
    token: ProgressToken,
) -> (
    paddock_devices::progress::Reporter,
    tokio::task::JoinHandle<()>,
) {
    let (steps_tx, mut steps) = tokio::sync::mpsc::unbounded_channel();
    let reporter = paddock_devices::progress::Reporter::new(move |step| {
        let _ = steps_tx.send(step);
    });
    let forwarder = tokio::spawn(async move {
        while let Some(step) = steps.recv().await {
            let mut notification = ProgressNotificationParam::new(token.clone(), step.done as f64)
                .with_message(step.message);
            if let Some(total) = step.total {
                notification = notification.with_total(total as f64);
            }
            if let Err(error) = peer.notify_progress(notification).await {
                debug!(%error, "could not send a progress notification");
                return;
            }
        }
    });
    (reporter, forwarder)
}

/// The MCP description of a stored resource.
fn resource_of(reference: &ResourceRef) -> rmcp::model::Resource {
    rmcp::model::Resource::new(&reference.uri, &reference.name)
        .with_mime_type(reference.mime_type)
        .with_size(reference.size)
}

fn session_header(context: &RequestContext<RoleServer>) -> Option<&http::HeaderValue> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get(SESSION_HEADER))
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: `{name}`"), None)
}

fn error_result(error: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_string())])
}

impl McpServer {
    /// Serves one `subscriptions/listen` stream until the client cancels it (closing the HTTP
    /// response) or the daemon shuts down: the stream gets `notifications/tools/list_changed`
    /// whenever the tools listed for its connection profile and session change.
    async fn serve_listener(&self, subscription: SubscriptionContext) -> Result<(), ErrorData> {
        let mut ctx = (*self.ctx).clone();
        ctx.session = self
            .request_session(session_header(subscription.request_context()), None)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let id = self
            .registry
            .next_connection
            .fetch_add(1, Ordering::Relaxed);
        self.registry
            .watch(id, ctx, Notifier::Subscription(subscription.sink().clone()));
        // rmcp acknowledges the subscription before it hands it over, so a change that landed
        // in between reached no watcher: the client, which may already have acted on the
        // acknowledgment, hears of it now (at worst once too often: the change may have been
        // another session's).
        let asked = self.listen_epoch.swap(NO_LISTEN, Ordering::SeqCst);
        if asked != NO_LISTEN
            && self.registry.discovery_epoch.load(Ordering::SeqCst) != asked
            && let Err(error) = subscription.sink().notify_tool_list_changed().await
        {
            debug!(%error, "could not send tools/list_changed to a listener");
        }
        let mut closing = self.registry.closing.subscribe();
        tokio::select! {
            () = subscription.cancelled() => {}
            _ = closing.wait_for(|closing| *closing) => {}
        }
        self.registry.detach(id);
        Ok(())
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("paddock", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            self.registry
                .instructions
                .get()
                .copied()
                .unwrap_or(INSTRUCTIONS),
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(if self.connection.is_some() {
            STDIO_VERSIONS
        } else {
            HTTP_VERSIONS
        })
    }

    /// Over stateless HTTP before 2026-07-28 nothing can carry a notification (no session, no
    /// standalone GET stream), so `tools.listChanged` is not promised there; on a connection
    /// it is, and from 2026-07-28 `subscriptions/listen` carries it.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        if self.connection.is_none()
            && result.protocol_version.as_str() < ProtocolVersion::NO_INITIALIZE.as_str()
            && let Some(tools) = result.capabilities.tools.as_mut()
        {
            tools.list_changed = None;
        }
        Ok(result)
    }

    /// The caller's session's resources (screenshots it took), a page at a time.
    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        let session = self
            .request_session(session_header(&context), None)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let Some(session) = session else {
            return Ok(rmcp::model::ListResourcesResult::with_all_items(Vec::new()));
        };
        let cursor = request
            .as_ref()
            .and_then(|request| request.cursor.as_deref());
        let (page, next) = self
            .registry
            .resources
            .list(&session, cursor)
            .map_err(|problem| ErrorData::invalid_params(problem, None))?;
        let mut result = rmcp::model::ListResourcesResult::with_all_items(
            page.iter().map(resource_of).collect(),
        );
        result.next_cursor = next;
        Ok(result)
    }

    /// One of the caller's session's resources; any other URI (another session's included)
    /// is "not found".
    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        let session = self
            .request_session(session_header(&context), None)
            .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
        let found =
            session.and_then(|session| self.registry.resources.read(&session, &request.uri));
        let Some((reference, data)) = found else {
            return Err(ErrorData::resource_not_found(
                format!(
                    "no resource `{}` in this session (resources are kept {} min, and only for the session that made them)",
                    request.uri,
                    crate::resources::KEEP_FOR.as_secs() / 60
                ),
                None,
            ));
        };
        use base64::Engine as _;
        let contents = rmcp::model::ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(data.as_slice()),
            reference.uri,
        )
        .with_mime_type(reference.mime_type);
        Ok(rmcp::model::ReadResourceResult::new(vec![contents]).into())
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.listen_epoch.store(
            self.registry.discovery_epoch.load(Ordering::SeqCst),
            Ordering::SeqCst,
        );
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.serve_listener(context).await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.for_request(&context).list(session_header(&context))
    }

    /// A call through rmcp: with a `progressToken`, the steps long device operations report
    /// become `notifications/progress`; `notifications/cancelled` (or, over HTTP, the client
    /// closing its connection) drops the call, which stops its device operation where it is —
    /// the session keeps its device and stays usable.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let this = self.for_request(&context);
        let this = this.as_ref();
        let name = request.name.to_string();
        let started = Instant::now();
        let request_id = context.id.to_string();
        let header = session_header(&context);
        let work = async {
            if this.connection.is_none() {
                this.call_http(request, header, request_id.clone()).await
            } else {
                this.call(request, header, Some(request_id.clone())).await
            }
        };
        let (reporter, forwarder) = match context.meta.get_progress_token() {
            Some(token) => {
                let (reporter, forwarder) = progress_forwarder(context.peer.clone(), token);
                (Some(reporter), Some(forwarder))
            }
            None => (None, None),
        };
        let work = async move {
            match reporter {
                Some(reporter) => paddock_devices::progress::with_progress(reporter, work).await,
                None => work.await,
            }
        };
        let outcome = tokio::select! {
            outcome = work => outcome,
            () = context.ct.cancelled() => Ok(this.cancelled(&name, started, request_id.clone())),
        };
        // Every progress notification goes out before the answer.
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        outcome.map(Into::into)
    }
}
