//! The control socket server: a 0600 Unix socket speaking framed JSON (see
//! `paddock_client::control`), refusing peers whose uid differs from the daemon's. A connection
//! may switch to MCP with `mcp/connect`, after which it carries JSON-RPC lines.

use std::io;
use std::path::Path;
use std::sync::Arc;

use paddock_client::control::{
    AuthHelloParams, AuthHelloResult, ControlCall, ControlError, ControlRequest, ControlResponse,
    CredentialsRevokeParams, DevicesListResult, DevicesWarmParams, DevicesWarmResult, ErrorCode,
    McpConnectParams, McpConnectResult, PiiAddParams, PiiBotParams, PiiFilter, PiiFilterParams,
    PiiListResult, PiiRedactResult, PiiSetEnabledParams, PiiTextParams, RevokedResult,
    StatusResult, StopResult, VoucherListResult, read_frame, write_frame,
};
use serde::Serialize;
use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use crate::agents::{AgentsHost, CursorItem};
use crate::subsystem::BoxFuture;

/// The control methods, typed as `paddock_client::control` defines them. The daemon's
/// implementation ([`crate::run::ControlServices`]) hands each method to the subsystem that
/// owns it; the socket server here only decodes requests and encodes answers.
pub trait ControlHandler: Send + Sync + 'static {
    /// `daemon/status`.
    fn status(&self) -> StatusResult;
    /// `daemon/stop`: begins a graceful shutdown.
    fn request_stop(&self);
    /// `mcp/connect`: checks the session before the connection switches to MCP, and names the
    /// session it will serve (a task's agent always gets its task's device session).
    fn check_mcp_session(
        &self,
        role: &Role,
        params: &McpConnectParams,
    ) -> Result<String, ControlError>;
    /// Serves MCP on the rest of the connection.
    fn serve_mcp(
        &self,
        role: Role,
        params: McpConnectParams,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
    ) -> BoxFuture<'static, ()>;
    /// `devices/list`.
    fn devices_list(&self) -> DevicesListResult;
    /// `devices/warm`, sending a progress line as each device is ready.
    fn devices_warm(
        &self,
        params: DevicesWarmParams,
        progress: mpsc::UnboundedSender<String>,
    ) -> BoxFuture<'static, Result<DevicesWarmResult, ControlError>>;
    /// `credentials/list`: the live vouchers (never their values).
    fn credentials_list(&self) -> VoucherListResult;
    /// `credentials/revoke`.
    fn credentials_revoke(
        &self,
        params: CredentialsRevokeParams,
    ) -> Result<RevokedResult, ControlError>;
    /// `pii/list`.
    fn pii_list(
        &self,
        params: PiiBotParams,
    ) -> BoxFuture<'static, Result<PiiListResult, ControlError>>;
    /// `pii/add`.
    fn pii_add(&self, params: PiiAddParams) -> BoxFuture<'static, Result<PiiFilter, ControlError>>;
    /// `pii/setEnabled`.
    fn pii_set_enabled(
        &self,
        params: PiiSetEnabledParams,
    ) -> BoxFuture<'static, Result<PiiListResult, ControlError>>;
    /// `pii/delete`.
    fn pii_delete(
        &self,
        params: PiiFilterParams,
    ) -> BoxFuture<'static, Result<PiiListResult, ControlError>>;
    /// `pii/test`.
    fn pii_test(
        &self,
        params: PiiTextParams,
    ) -> BoxFuture<'static, Result<PiiRedactResult, ControlError>>;
    /// `pii/redact`.
    fn pii_redact(
        &self,
        params: PiiTextParams,
    ) -> BoxFuture<'static, Result<PiiRedactResult, ControlError>>;
    /// The hosted agents (`agents/*`).
    fn agents(&self) -> &AgentsHost;
    /// Bots and their inboxes (`bots/*`, and a session's `inbox/*` and `message/send`).
    fn bots(&self) -> &crate::bots::BotsHost;
    /// `auth/hello`: who the presented token or voucher speaks for.
    fn authenticate(&self, params: &AuthHelloParams) -> Result<Role, ControlError>;
}

/// Who a control connection speaks for, once its first frame proved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The daemon's token: every method.
    Owner,
    /// A launch's voucher: that session's own methods only; a task's agent may also open the
    /// MCP connection bound to its task's device.
    Session {
        id: String,
        bot: String,
        task: Option<String>,
    },
}

impl Role {
    fn hello(&self) -> AuthHelloResult {
        match self {
            Self::Owner => AuthHelloResult {
                role: "owner".to_owned(),
                session: None,
                bot: None,
            },
            Self::Session { id, bot, .. } => AuthHelloResult {
                role: "session".to_owned(),
                session: Some(id.clone()),
                bot: Some(bot.clone()),
            },
        }
    }
}

/// Whether `role` may make `call`. `daemon/status` carries no secret and needs no proof; the
/// owner may do everything but a session's own inbox calls; an agent session may pull, ack and
/// send for its own bot and list and add its own bot's PII filters; a task's agent may open
/// its task's MCP connection.
fn permitted(role: Option<&Role>, call: &ControlCall) -> Result<(), ControlError> {
    let session_only = matches!(
        call,
        ControlCall::InboxPull | ControlCall::InboxAck(_) | ControlCall::MessageSend(_)
    );
    match (role, call) {
        (_, ControlCall::Status) => Ok(()),
        (Some(Role::Owner), _) if session_only => Err(ControlError::new(
            ErrorCode::InvalidRequest,
            format!(
                "`{}` is an agent session's own call (it authenticates with its voucher); the owner reads a bot's messages with `paddock bot outbox`",
                call.method()
            ),
        )),
        (Some(Role::Owner), _) => Ok(()),
        (Some(Role::Session { .. }), _) if session_only => Ok(()),
        (Some(Role::Session { task: Some(_), .. }), ControlCall::McpConnect(_)) => Ok(()),
        (Some(Role::Session { bot, .. }), ControlCall::PiiList(params)) if params.bot == *bot => {
            Ok(())
        }
        (Some(Role::Session { bot, .. }), ControlCall::PiiAdd(params)) if params.bot == *bot => {
            Ok(())
        }
        (Some(Role::Session { bot, .. }), _) => Err(ControlError::new(
            ErrorCode::Forbidden,
            format!(
                "an agent session may only pull, ack and send its own inbox, ask `pii/list` and `pii/add` for its own bot `{bot}`, and `daemon/status` (a task's agent may also open its task's MCP connection)"
            ),
        )),
        (None, _) => Err(ControlError::new(
            ErrorCode::Unauthenticated,
            format!(
                "`{}` needs proof of who is asking: send `auth/hello` with the daemon's token (the owner) or a launch's voucher as the connection's first frame\nhint: the paddock CLI does this for you",
                call.method()
            ),
        )),
    }
}

/// Binds the control socket at `path` with mode 0600, replacing a stale socket file. The caller
/// must hold the instance lock, which proves that no live daemon owns the old file, and has
/// verified the socket's directory (ours, 0700).
pub fn bind_control_socket(path: &Path) -> io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    // The umask makes the socket 0600 from its creation: a chmod after bind would leave a
    // window in which another user could connect. Startup creates no other files concurrently.
    let previous = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = UnixListener::bind(path);
    rustix::process::umask(previous);
    let listener = bound?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(listener)
}

/// Most control connections served at once. Only processes of the daemon's own uid can connect
/// (the socket is 0600 in a 0700 directory, and peers are checked), so this bounds a runaway
/// client rather than an attacker; a connection over the cap is told so and closed. Long-lived
/// `mcp/connect` connections are never shed to make room: each is a user's MCP session.
pub const MAX_CONTROL_CONNECTIONS: usize = 256;

/// Accepts connections until `shutdown` turns true.
pub async fn serve_control(
    listener: UnixListener,
    handler: Arc<dyn ControlHandler>,
    mut shutdown: watch::Receiver<bool>,
) {
    let own_uid = paddock_client::paths::current_uid();
    let mut backoff = paddock_http::AcceptBackoff::new("control socket");
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONTROL_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff.on_success(std::time::Instant::now());
                let Ok(permit) = open.clone().try_acquire_owned() else {
                    tokio::spawn(refuse_busy(stream));
                    continue;
                };
                let handler = handler.clone();
                tokio::spawn(async move {
                    serve_connection(stream, handler, own_uid).await;
                    drop(permit);
                });
            }
            Err(error) => {
                let mut stop = shutdown.clone();
                let stopped = async move {
                    let _ = stop.wait_for(|stop| *stop).await;
                };
                if !backoff.wait_after(&error, stopped).await {
                    return;
                }
            }
        }
    }
}

async fn refuse_busy(stream: UnixStream) {
    let (_, mut writer) = stream.into_split();
    let response = error_response(
        None,
        ControlError::new(
            ErrorCode::Busy,
            format!("the daemon already serves {MAX_CONTROL_CONNECTIONS} control connections"),
        ),
    );
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(1),
        write_frame(&mut writer, &response),
    )
    .await;
}

async fn serve_connection(stream: UnixStream, handler: Arc<dyn ControlHandler>, own_uid: u32) {
    let peer_uid = stream.peer_cred().map(|cred| cred.uid()).ok();
    let (read, mut writer) = stream.into_split();
    if peer_uid != Some(own_uid) {
        warn!(?peer_uid, "refused a control connection from another user");
        let _ = write_frame(
            &mut writer,
            &error_response(
                None,
                ControlError::new(
                    ErrorCode::Forbidden,
                    "control socket peer is not the daemon's user",
                ),
            ),
        )
        .await;
        return;
    }
    let mut reader = BufReader::new(read);
    let mut role: Option<Role> = None;
    let mut first = true;
    loop {
        let frame = match read_frame(&mut reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(error) => {
                debug!(%error, "control connection closed on a bad frame");
                let _ = write_frame(
                    &mut writer,
                    &error_response(
                        None,
                        ControlError::new(ErrorCode::InvalidFrame, error.to_string()),
                    ),
                )
                .await;
                return;
            }
        };
        let request = match serde_json::from_slice::<ControlRequest>(&frame) {
            Ok(request) => request,
            Err(error) => {
                let id = serde_json::from_slice::<serde_json::Value>(&frame)
                    .ok()
                    .and_then(|value| value.get("id").and_then(serde_json::Value::as_u64));
                let response = error_response(
                    id,
                    ControlError::new(ErrorCode::InvalidRequest, error.to_string()),
                );
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let id = Some(request.id);
        let was_first = std::mem::replace(&mut first, false);
        if let ControlCall::AuthHello(params) = &request.call {
            let outcome = if was_first {
                handler.authenticate(params)
            } else {
                Err(ControlError::new(
                    ErrorCode::InvalidRequest,
                    "`auth/hello` must be the connection's first frame",
                ))
            };
            match outcome {
                Ok(proved) => {
                    let response = answer(id, Ok(proved.hello()));
                    role = Some(proved);
                    if write_frame(&mut writer, &response).await.is_err() {
                        return;
                    }
                    continue;
                }
                Err(error) => {
                    // A wrong proof ends the connection: nothing more is read from it.
                    let _ = write_frame(&mut writer, &error_response(id, error)).await;
                    return;
                }
            }
        }
        if let Err(error) = permitted(role.as_ref(), &request.call) {
            if write_frame(&mut writer, &error_response(id, error))
                .await
                .is_err()
            {
                return;
            }
            continue;
        }
        let response = match request.call {
            ControlCall::AuthHello(_) => continue,
            ControlCall::Status => answer(id, Ok(handler.status())),
            ControlCall::Stop => {
                let response = answer(id, Ok(StopResult { stopping: true }));
                // Stop only after the answer is written, so the caller learns it was accepted.
                let _ = write_frame(&mut writer, &response).await;
                handler.request_stop();
                continue;
            }
            ControlCall::DevicesList => answer(id, Ok(handler.devices_list())),
            ControlCall::DevicesWarm(params) => {
                let (progress_tx, progress_rx) = mpsc::unbounded_channel();
                let work = handler.devices_warm(params, progress_tx);
                match with_progress(id, &mut writer, work, progress_rx).await {
                    Some(outcome) => answer(id, outcome),
                    None => return,
                }
            }
            ControlCall::CredentialsList => answer(id, Ok(handler.credentials_list())),
            ControlCall::CredentialsRevoke(params) => {
                answer(id, handler.credentials_revoke(params))
            }
            ControlCall::PiiList(params) => answer(id, handler.pii_list(params).await),
            ControlCall::PiiAdd(params) => answer(id, handler.pii_add(params).await),
            ControlCall::PiiSetEnabled(params) => answer(id, handler.pii_set_enabled(params).await),
            ControlCall::PiiDelete(params) => answer(id, handler.pii_delete(params).await),
            ControlCall::PiiTest(params) => answer(id, handler.pii_test(params).await),
            ControlCall::PiiRedact(params) => answer(id, handler.pii_redact(params).await),
            ControlCall::AgentsOpen(params) => answer(id, handler.agents().open(*params).await),
            ControlCall::AgentsSend(params) => answer(id, handler.agents().send(params).await),
            ControlCall::AgentsInterrupt(params) => {
                answer(id, handler.agents().interrupt(params).await)
            }
            ControlCall::AgentsStop(params) => answer(id, handler.agents().stop(params).await),
            ControlCall::AgentsSnapshot(params) => {
                answer(id, handler.agents().snapshot(params).await)
            }
            ControlCall::AgentsList => answer(id, Ok(handler.agents().list().await)),
            ControlCall::BotsAdd(params) => answer(id, handler.bots().add(params).await),
            ControlCall::BotsRemove(params) => answer(id, handler.bots().remove(params).await),
            ControlCall::BotsList => answer(id, handler.bots().list().await),
            ControlCall::BotsMessage(params) => answer(id, handler.bots().message(params).await),
            ControlCall::BotsOutbox(params) => answer(id, handler.bots().outbox(params).await),
            ControlCall::InboxPull => match &role {
                Some(Role::Session { bot, .. }) => answer(id, handler.bots().pull(bot).await),
                _ => continue,
            },
            ControlCall::InboxAck(params) => match &role {
                Some(Role::Session { bot, .. }) => {
                    answer(id, handler.bots().ack(bot, params).await)
                }
                _ => continue,
            },
            ControlCall::MessageSend(params) => match &role {
                Some(Role::Session { bot, .. }) => {
                    answer(id, handler.bots().send(bot, params).await)
                }
                _ => continue,
            },
            ControlCall::AgentsEvents(params) => match handler.agents().follow(&params) {
                Err(error) => error_response(id, error),
                Ok(cursor) => match stream_events(id, &mut reader, &mut writer, cursor).await {
                    Some(closed) => answer(id, Ok(closed)),
                    None => return,
                },
            },
            ControlCall::McpConnect(params) => {
                // `permitted` let no connection without a role through.
                let Some(role) = role.clone() else { return };
                let session_id = match handler.check_mcp_session(&role, &params) {
                    Ok(session_id) => session_id,
                    Err(error) => {
                        let _ = write_frame(&mut writer, &error_response(id, error)).await;
                        continue;
                    }
                };
                let response = answer(id, Ok(McpConnectResult { session_id }));
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
                handler.serve_mcp(role, params, reader, writer).await;
                return;
            }
        };
        if write_frame(&mut writer, &response).await.is_err() {
            return;
        }
    }
}

/// Writes a session's events as `event` frames until it has closed and every event was
/// written; returns the close for the answer, or `None` when the client went away (it sends
/// nothing while it follows: any frame or the end of its stream ends the follow).
async fn stream_events(
    id: Option<u64>,
    reader: &mut BufReader<OwnedReadHalf>,
    writer: &mut OwnedWriteHalf,
    mut cursor: crate::agents::EventCursor,
) -> Option<paddock_client::control::AgentsClosed> {
    loop {
        let item = tokio::select! {
            item = cursor.next() => item,
            _ = read_frame(reader) => return None,
        };
        match item {
            CursorItem::Closed(closed) => return Some(closed),
            CursorItem::Event(frame) => {
                let frame = ControlResponse {
                    id,
                    result: None,
                    error: None,
                    progress: None,
                    event: serde_json::to_value(frame).ok(),
                };
                if write_frame(writer, &frame).await.is_err() {
                    return None;
                }
            }
        }
    }
}

/// Runs `work`, writing each progress message as an interim frame; `None` when the client is
/// gone.
async fn with_progress<T>(
    id: Option<u64>,
    writer: &mut OwnedWriteHalf,
    mut work: BoxFuture<'static, Result<T, ControlError>>,
    mut progress: mpsc::UnboundedReceiver<String>,
) -> Option<Result<T, ControlError>> {
    let progress_frame = |message: String| ControlResponse {
        id,
        result: None,
        error: None,
        progress: Some(message),
        event: None,
    };
    let outcome = loop {
        tokio::select! {
            outcome = &mut work => break outcome,
            Some(message) = progress.recv() => {
                if write_frame(writer, &progress_frame(message)).await.is_err() {
                    return None;
                }
            }
        }
    };
    while let Ok(message) = progress.try_recv() {
        let _ = write_frame(writer, &progress_frame(message)).await;
    }
    Some(outcome)
}

/// The answer frame for a typed outcome.
fn answer<T: Serialize>(id: Option<u64>, outcome: Result<T, ControlError>) -> ControlResponse {
    match outcome.and_then(|result| {
        serde_json::to_value(result)
            .map_err(|error| ControlError::new(ErrorCode::Internal, error.to_string()))
    }) {
        Ok(result) => ControlResponse {
            id,
            result: Some(result),
            error: None,
            progress: None,
            event: None,
        },
        Err(error) => error_response(id, error),
    }
}

fn error_response(id: Option<u64>, error: ControlError) -> ControlResponse {
    ControlResponse {
        id,
        result: None,
        error: Some(error),
        progress: None,
        event: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connect() -> ControlCall {
        ControlCall::McpConnect(McpConnectParams {
            session_id: "anything".to_owned(),
            reconnectable: false,
        })
    }

    fn session(task: Option<&str>) -> Role {
        Role::Session {
            id: "agt-1".to_owned(),
            bot: "default".to_owned(),
            task: task.map(str::to_owned),
        }
    }

    #[test]
    fn only_a_tasks_agent_may_open_mcp_with_its_voucher() {
        assert!(permitted(Some(&session(Some("tsk-1"))), &connect()).is_ok());
        let refused = permitted(Some(&session(None)), &connect()).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert!(permitted(Some(&Role::Owner), &connect()).is_ok());
        assert_eq!(
            permitted(None, &connect()).unwrap_err().code,
            ErrorCode::Unauthenticated
        );
        // A task's agent gets nothing else of the owner's.
        assert_eq!(
            permitted(Some(&session(Some("tsk-1"))), &ControlCall::DevicesList)
                .unwrap_err()
                .code,
            ErrorCode::Forbidden
        );
    }
}
