//! The control socket server: a 0600 Unix socket speaking framed JSON (see
//! `paddock_client::control`), refusing peers whose uid differs from the daemon's. A connection
//! may switch to MCP with `mcp/connect`, after which it carries JSON-RPC lines.

use std::io;
use std::path::Path;
use std::sync::Arc;

use paddock_client::control::{
    ControlCall, ControlErrorBody, ControlRequest, ControlResponse, StatusResult, read_frame,
    write_frame,
};
use tokio::io::BufReader;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tracing::{debug, warn};

use crate::pii::PiiOperation;
use crate::subsystem::BoxFuture;

/// What the control socket needs from the daemon.
pub trait ControlHandler: Send + Sync + 'static {
    fn status(&self) -> StatusResult;
    /// Asks the daemon to shut down gracefully.
    fn request_stop(&self);
    /// Checks an `mcp/connect` session id; the error message goes back to the client.
    fn check_mcp_session(&self, session_id: &str) -> Result<(), String>;
    /// Serves MCP on the rest of the connection.
    fn serve_mcp(
        &self,
        session_id: String,
        reader: BufReader<OwnedReadHalf>,
        writer: OwnedWriteHalf,
    ) -> BoxFuture<'static, ()>;
    /// The device pool and its sessions.
    fn devices_list(&self) -> serde_json::Value;
    /// Boots warm devices, sending a progress line as each is ready.
    fn devices_warm(
        &self,
        count: usize,
        platform: String,
        profile: Option<String>,
        progress: tokio::sync::mpsc::UnboundedSender<String>,
    ) -> BoxFuture<'static, Result<serde_json::Value, String>>;
    /// The live credential vouchers (never their values).
    fn credentials_list(&self) -> serde_json::Value;
    /// Revokes one voucher or a launch's; the error is `(code, message)`.
    fn credentials_revoke(
        &self,
        id: Option<String>,
        launch: Option<String>,
    ) -> Result<serde_json::Value, (&'static str, String)>;
    /// Performs a `pii/*` operation; the error is `(code, message)` and never holds text.
    fn pii(
        &self,
        operation: PiiOperation,
    ) -> BoxFuture<'static, Result<serde_json::Value, (&'static str, String)>>;
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
        "busy",
        &format!("the daemon already serves {MAX_CONTROL_CONNECTIONS} control connections"),
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
                "forbidden",
                "control socket peer is not the daemon's user",
            ),
        )
        .await;
        return;
    }
    let mut reader = BufReader::new(read);
    loop {
        let frame = match read_frame(&mut reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(error) => {
                debug!(%error, "control connection closed on a bad frame");
                let _ = write_frame(
                    &mut writer,
                    &error_response(None, "invalid_frame", &error.to_string()),
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
                let response = error_response(id, "invalid_request", &error.to_string());
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let id = Some(request.id);
        match request.call {
            ControlCall::Status => {
                let response = match serde_json::to_value(handler.status()) {
                    Ok(result) => ok_response(id, result),
                    Err(error) => error_response(id, "internal", &error.to_string()),
                };
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
            }
            ControlCall::Stop => {
                let response = ok_response(id, serde_json::json!({ "stopping": true }));
                // Stop only after the answer is written, so the caller learns it was accepted.
                let _ = write_frame(&mut writer, &response).await;
                handler.request_stop();
            }
            ControlCall::DevicesList => {
                let response = ok_response(id, handler.devices_list());
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
            }
            ControlCall::DevicesWarm {
                count,
                platform,
                profile,
            } => {
                let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
                let mut work = handler.devices_warm(count, platform, profile, progress_tx);
                let outcome = loop {
                    tokio::select! {
                        outcome = &mut work => break outcome,
                        Some(message) = progress_rx.recv() => {
                            let frame = ControlResponse { id, result: None, error: None, progress: Some(message) };
                            if write_frame(&mut writer, &frame).await.is_err() {
                                return;
                            }
                        }
                    }
                };
                while let Ok(message) = progress_rx.try_recv() {
                    let frame = ControlResponse {
                        id,
                        result: None,
                        error: None,
                        progress: Some(message),
                    };
                    let _ = write_frame(&mut writer, &frame).await;
                }
                let response = match outcome {
                    Ok(result) => ok_response(id, result),
                    Err(message) => error_response(id, "device_error", &message),
                };
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
            }
            ControlCall::CredentialsList => {
                let response = ok_response(id, handler.credentials_list());
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
            }
            ControlCall::CredentialsRevoke {
                id: voucher,
                launch,
            } => {
                let response = match handler.credentials_revoke(voucher, launch) {
                    Ok(result) => ok_response(id, result),
                    Err((code, message)) => error_response(id, code, &message),
                };
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
            }
            call @ (ControlCall::PiiList { .. }
            | ControlCall::PiiAdd { .. }
            | ControlCall::PiiSetEnabled { .. }
            | ControlCall::PiiDelete { .. }
            | ControlCall::PiiTest { .. }
            | ControlCall::PiiRedact { .. }) => {
                let response = match PiiOperation::from_call(call) {
                    Some(operation) => match handler.pii(operation).await {
                        Ok(result) => ok_response(id, result),
                        Err((code, message)) => error_response(id, code, &message),
                    },
                    None => error_response(id, "internal", "not a `pii/*` method"),
                };
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
            }
            ControlCall::McpConnect { session_id } => {
                if let Err(message) = handler.check_mcp_session(&session_id) {
                    let _ =
                        write_frame(&mut writer, &error_response(id, "invalid_params", &message))
                            .await;
                    continue;
                }
                let response = ok_response(id, serde_json::json!({ "session_id": session_id }));
                if write_frame(&mut writer, &response).await.is_err() {
                    return;
                }
                handler.serve_mcp(session_id, reader, writer).await;
                return;
            }
        }
    }
}

fn ok_response(id: Option<u64>, result: serde_json::Value) -> ControlResponse {
    ControlResponse {
        id,
        result: Some(result),
        error: None,
        progress: None,
    }
}

fn error_response(id: Option<u64>, code: &str, message: &str) -> ControlResponse {
    ControlResponse {
        id,
        result: None,
        error: Some(ControlErrorBody {
            code: code.to_owned(),
            message: message.to_owned(),
        }),
        progress: None,
    }
}
