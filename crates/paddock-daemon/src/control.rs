//! The control socket server: a 0600 Unix socket speaking framed JSON (see
//! `paddock_client::control`), refusing peers whose uid differs from the daemon's.

use std::io;
use std::path::Path;
use std::sync::Arc;

use paddock_client::control::{
    ControlCall, ControlErrorBody, ControlRequest, ControlResponse, StatusResult, read_frame,
    write_frame,
};
use tokio::io::BufReader;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

/// What the control socket needs from the daemon.
pub trait ControlHandler: Send + Sync + 'static {
    fn status(&self) -> StatusResult;
    /// Asks the daemon to shut down gracefully.
    fn request_stop(&self);
}

/// Binds the control socket at `path` with mode 0600, replacing a stale socket file. The caller
/// must hold the instance lock, which proves that no live daemon owns the old file.
pub fn bind_control_socket(path: &Path) -> io::Result<UnixListener> {
    if let Some(parent) = path.parent() {
        crate::files::create_private_dir(parent)?;
    }
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

/// Accepts connections until `shutdown` turns true.
pub async fn serve_control(
    listener: UnixListener,
    handler: Arc<dyn ControlHandler>,
    mut shutdown: watch::Receiver<bool>,
) {
    let own_uid = paddock_client::paths::current_uid();
    loop {
        tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let handler = handler.clone();
                    tokio::spawn(serve_connection(stream, handler, own_uid));
                }
                Err(error) => warn!(%error, "control socket accept failed"),
            },
        }
    }
}

async fn serve_connection(stream: UnixStream, handler: Arc<dyn ControlHandler>, own_uid: u32) {
    let peer_uid = stream.peer_cred().map(|cred| cred.uid()).ok();
    let (read, mut write) = stream.into_split();
    if peer_uid != Some(own_uid) {
        warn!(?peer_uid, "refused a control connection from another user");
        let _ = write_frame(
            &mut write,
            &error_response(
                None,
                "forbidden",
                "control socket peer is not the daemon's user",
            ),
        )
        .await;
        return;
    }
    let (out_tx, mut out_rx) = mpsc::channel::<ControlResponse>(16);
    let writer = tokio::spawn(async move {
        while let Some(response) = out_rx.recv().await {
            if write_frame(&mut write, &response).await.is_err() {
                return;
            }
        }
    });
    let mut reader = BufReader::new(read);
    loop {
        let frame = match read_frame(&mut reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(error) => {
                debug!(%error, "control connection closed on a bad frame");
                let _ = out_tx
                    .send(error_response(None, "invalid_frame", &error.to_string()))
                    .await;
                break;
            }
        };
        let response = match serde_json::from_slice::<ControlRequest>(&frame) {
            Ok(request) => dispatch(request, handler.as_ref()),
            Err(error) => {
                let id = serde_json::from_slice::<serde_json::Value>(&frame)
                    .ok()
                    .and_then(|value| value.get("id").and_then(serde_json::Value::as_u64));
                error_response(id, "invalid_request", &error.to_string())
            }
        };
        let stop = response
            .result
            .as_ref()
            .is_some_and(|result| result.get("stopping") == Some(&serde_json::Value::Bool(true)));
        if out_tx.send(response).await.is_err() {
            break;
        }
        if stop {
            // Stop only after the answer is queued, so the caller learns that it was accepted.
            handler.request_stop();
        }
    }
    drop(out_tx);
    let _ = writer.await;
}

fn dispatch(request: ControlRequest, handler: &dyn ControlHandler) -> ControlResponse {
    let result = match request.call {
        ControlCall::Status => serde_json::to_value(handler.status()),
        ControlCall::Stop => Ok(serde_json::json!({ "stopping": true })),
    };
    match result {
        Ok(result) => ControlResponse {
            id: Some(request.id),
            result: Some(result),
            error: None,
        },
        Err(error) => error_response(Some(request.id), "internal", &error.to_string()),
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
    }
}
