//! The control socket's wire protocol: one JSON object per line in each direction.
//!
//! A request is `{"id":N,"method":"daemon/status","params":{…}}`; the answer repeats the id with
//! either `result` or `error` (`{"code":"…","message":"…"}`). The CLI and `paddock mcp` use
//! this socket; it never passes through the HTTP ingress.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// The largest frame either side accepts; larger frames close the connection with an error.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// A request on the control socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControlRequest {
    pub id: u64,
    #[serde(flatten)]
    pub call: ControlCall,
}

/// The typed methods of the control socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
pub enum ControlCall {
    /// Reports pid, version, uptime, state and endpoints.
    #[serde(rename = "daemon/status")]
    Status,
    /// Begins a graceful shutdown; the answer arrives before the daemon exits.
    #[serde(rename = "daemon/stop")]
    Stop,
    /// Turns this connection into an MCP connection: after the answer, each line in either
    /// direction is one JSON-RPC message. `session_id` is the connection's session key.
    #[serde(rename = "mcp/connect")]
    McpConnect { session_id: String },
    /// Lists the device pool and its sessions.
    #[serde(rename = "devices/list")]
    DevicesList,
    /// Boots `count` more warm devices; progress frames arrive before the answer.
    #[serde(rename = "devices/warm")]
    DevicesWarm {
        count: usize,
        platform: String,
        profile: Option<String>,
    },
    /// Lists the live credential vouchers: ids, launches, capabilities, ages — never values.
    #[serde(rename = "credentials/list")]
    CredentialsList,
    /// Revokes voucher `id`, or every voucher of `launch` (exactly one of the two).
    #[serde(rename = "credentials/revoke")]
    CredentialsRevoke {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        launch: Option<String>,
    },
    /// Lists a bot's PII filters in pipeline order ([`PiiListResult`]).
    #[serde(rename = "pii/list")]
    PiiList { bot: String },
    /// Appends a plugin filter to a bot's pipeline ([`PiiFilter`]). What an agent session may
    /// do, with `pii/list`.
    #[serde(rename = "pii/add")]
    PiiAdd {
        bot: String,
        source: SensitiveText,
        description: String,
    },
    /// Enables or disables one filter of a bot. For the owner, not for agent sessions.
    #[serde(rename = "pii/setEnabled", rename_all = "camelCase")]
    PiiSetEnabled {
        bot: String,
        filter_id: String,
        enabled: bool,
    },
    /// Deletes one filter of a bot (deleted defaults stay deleted). For the owner, not for
    /// agent sessions.
    #[serde(rename = "pii/delete", rename_all = "camelCase")]
    PiiDelete { bot: String, filter_id: String },
    /// The playground: runs a bot's pipeline over at most 1024 bytes and stores nothing
    /// ([`PiiRedactResult`]).
    #[serde(rename = "pii/test")]
    PiiTest { bot: String, text: SensitiveText },
    /// Runs a bot's pipeline over a text ([`PiiRedactResult`]).
    #[serde(rename = "pii/redact")]
    PiiRedact { bot: String, text: SensitiveText },
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

/// The answer to `pii/list`.
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

/// An answer on the control socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControlResponse {
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ControlErrorBody>,
    /// An interim progress message for a long request; the final answer follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
}

/// A typed error on the control socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlErrorBody {
    pub code: String,
    pub message: String,
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

/// Errors of a control-socket client.
#[derive(Debug, thiserror::Error)]
pub enum ControlClientError {
    #[error("no daemon is listening on control socket `{path}`")]
    NotRunning {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing the control socket's directory")]
    UnsafeDirectory(#[source] paddock_secrets::private::PrivateDirError),
    #[error(
        "control socket `{path}` belongs to uid {owner}, not to you; refusing to talk to it (another user may be impersonating the daemon)"
    )]
    ForeignSocket { path: PathBuf, owner: u32 },
    #[error(
        "the process listening on control socket `{path}` runs as uid {}, not as you; refusing to talk to it (another user may be impersonating the daemon)",
        .uid.map(|uid| uid.to_string()).unwrap_or_else(|| "unknown".to_owned())
    )]
    ForeignListener { path: PathBuf, uid: Option<u32> },
    #[error("control socket I/O failed")]
    Io(#[from] std::io::Error),
    #[error("the daemon closed the control connection")]
    Closed,
    #[error("the daemon sent a malformed control frame")]
    Malformed(#[source] serde_json::Error),
    #[error("the daemon answered `{}`: {}", .0.code, .0.message)]
    Remote(ControlErrorBody),
    #[error("the control request timed out after {0:?}")]
    TimedOut(Duration),
}

impl ControlClientError {
    pub fn is_not_running(&self) -> bool {
        matches!(self, Self::NotRunning { .. })
    }

    /// True when the socket or its directory is not the current user's: something else is
    /// listening where the daemon should be.
    pub fn is_impersonation(&self) -> bool {
        matches!(
            self,
            Self::UnsafeDirectory(_) | Self::ForeignSocket { .. } | Self::ForeignListener { .. }
        )
    }
}

/// Connects to a control socket after checking that nobody else can be listening there: the
/// socket's directory must be a private directory of ours (0700, ours, not a symlink), the
/// socket file must be ours, and the process that accepted the connection must run as our uid
/// (`SO_PEERCRED`). A socket that fails any check is refused before a byte is sent.
pub async fn connect_socket(path: &Path) -> Result<UnixStream, ControlClientError> {
    let not_running = |source: std::io::Error| ControlClientError::NotRunning {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        match paddock_secrets::private::check_private_dir(dir) {
            Ok(()) => {}
            Err(error) if error.is_missing() => {
                return Err(not_running(std::io::Error::from(
                    std::io::ErrorKind::NotFound,
                )));
            }
            Err(error) => return Err(ControlClientError::UnsafeDirectory(error)),
        }
    }
    let expected = crate::paths::current_uid();
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match std::fs::symlink_metadata(path) {
            Ok(metadata) if metadata.uid() != expected => {
                return Err(ControlClientError::ForeignSocket {
                    path: path.to_path_buf(),
                    owner: metadata.uid(),
                });
            }
            Ok(_) => {}
            Err(source) => return Err(not_running(source)),
        }
    }
    let stream = UnixStream::connect(path).await.map_err(not_running)?;
    let peer = stream.peer_cred().map(|cred| cred.uid()).ok();
    if peer != Some(expected) {
        return Err(ControlClientError::ForeignListener {
            path: path.to_path_buf(),
            uid: peer,
        });
    }
    Ok(stream)
}

/// A control-socket connection with request/response calls.
#[derive(Debug)]
pub struct ControlClient {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    next_id: u64,
}

impl ControlClient {
    /// Connects to the daemon's control socket at `path` (see [`connect_socket`] for the checks).
    pub async fn connect(path: &Path) -> Result<Self, ControlClientError> {
        let stream = connect_socket(path).await?;
        let (read, write) = stream.into_split();
        Ok(Self {
            reader: BufReader::new(read),
            writer: write,
            next_id: 1,
        })
    }

    /// Sends `call` and waits at most `timeout` for its answer.
    pub async fn call(
        &mut self,
        call: ControlCall,
        timeout: Duration,
    ) -> Result<Value, ControlClientError> {
        self.call_with_progress(call, timeout, |_| {}).await
    }

    /// Like [`ControlClient::call`], passing each progress message to `progress`.
    pub async fn call_with_progress(
        &mut self,
        call: ControlCall,
        timeout: Duration,
        mut progress: impl FnMut(&str),
    ) -> Result<Value, ControlClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = ControlRequest { id, call };
        let exchange = async {
            write_frame(&mut self.writer, &request).await?;
            loop {
                let frame = read_frame(&mut self.reader)
                    .await?
                    .ok_or(ControlClientError::Closed)?;
                let response: ControlResponse =
                    serde_json::from_slice(&frame).map_err(ControlClientError::Malformed)?;
                if response.id != Some(id) {
                    continue;
                }
                if let Some(message) = &response.progress {
                    progress(message);
                    continue;
                }
                return match (response.result, response.error) {
                    (_, Some(error)) => Err(ControlClientError::Remote(error)),
                    (Some(result), None) => Ok(result),
                    (None, None) => Ok(Value::Null),
                };
            }
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| ControlClientError::TimedOut(timeout))?
    }

    pub async fn status(&mut self, timeout: Duration) -> Result<StatusResult, ControlClientError> {
        let value = self.call(ControlCall::Status, timeout).await?;
        serde_json::from_value(value).map_err(ControlClientError::Malformed)
    }
}

/// Writes one JSON value and a newline.
pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(
    writer: &mut W,
    value: &T,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    writer.write_all(&bytes).await?;
    writer.flush().await
}

/// Reads one newline-terminated frame; `Ok(None)` at a clean end of stream. A frame over
/// [`MAX_FRAME_BYTES`] is an `InvalidData` error.
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut frame = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return if frame.is_empty() {
                Ok(None)
            } else {
                Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "control frame ended without a newline",
                ))
            };
        }
        let (chunk, done) = match available.iter().position(|byte| *byte == b'\n') {
            Some(newline) => (&available[..newline], Some(newline + 1)),
            None => (available, None),
        };
        if frame.len() + chunk.len() > MAX_FRAME_BYTES {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "control frame exceeds the size limit",
            ));
        }
        frame.extend_from_slice(chunk);
        let consumed = done.unwrap_or(chunk.len());
        reader.consume(consumed);
        if done.is_some() {
            return Ok(Some(frame));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shapes() {
        let request = ControlRequest {
            id: 7,
            call: ControlCall::Status,
        };
        assert_eq!(
            serde_json::to_string(&request).ok().as_deref(),
            Some(r#"{"id":7,"method":"daemon/status"}"#)
        );
        let parsed: ControlRequest =
            serde_json::from_str(r#"{"id":1,"method":"daemon/stop","params":null}"#)
                .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(parsed.call, ControlCall::Stop);
        assert!(serde_json::from_str::<ControlRequest>(r#"{"id":1,"method":"nope"}"#).is_err());
        let revoke = ControlRequest {
            id: 2,
            call: ControlCall::CredentialsRevoke {
                id: Some("v-0123456789ab".into()),
                launch: None,
            },
        };
        assert_eq!(
            serde_json::to_string(&revoke).ok().as_deref(),
            Some(r#"{"id":2,"method":"credentials/revoke","params":{"id":"v-0123456789ab"}}"#)
        );
        let list = ControlRequest {
            id: 3,
            call: ControlCall::CredentialsList,
        };
        assert_eq!(
            serde_json::to_string(&list).ok().as_deref(),
            Some(r#"{"id":3,"method":"credentials/list"}"#)
        );
        let set_enabled = ControlRequest {
            id: 4,
            call: ControlCall::PiiSetEnabled {
                bot: "helper".into(),
                filter_id: "email".into(),
                enabled: false,
            },
        };
        assert_eq!(
            serde_json::to_string(&set_enabled).ok().as_deref(),
            Some(
                r#"{"id":4,"method":"pii/setEnabled","params":{"bot":"helper","filterId":"email","enabled":false}}"#
            )
        );
        let redact = ControlRequest {
            id: 5,
            call: ControlCall::PiiRedact {
                bot: "helper".into(),
                text: SensitiveText::new("mail me at a@example.com"),
            },
        };
        assert_eq!(
            serde_json::to_string(&redact).ok().as_deref(),
            Some(
                r#"{"id":5,"method":"pii/redact","params":{"bot":"helper","text":"mail me at a@example.com"}}"#
            )
        );
        // A logged request shows the text's length, not the text.
        let logged = format!("{redact:?}");
        assert!(!logged.contains("example.com"), "{logged}");
        assert!(logged.contains("<24 bytes>"), "{logged}");
    }

    #[tokio::test]
    async fn frames_split_on_newlines_and_enforce_the_limit() {
        let data = b"{\"a\":1}\n{\"b\":2}\npartial".to_vec();
        let mut reader = BufReader::new(&data[..]);
        assert_eq!(
            read_frame(&mut reader).await.ok().flatten(),
            Some(b"{\"a\":1}".to_vec())
        );
        assert_eq!(
            read_frame(&mut reader).await.ok().flatten(),
            Some(b"{\"b\":2}".to_vec())
        );
        assert!(read_frame(&mut reader).await.is_err());

        let huge = vec![b'x'; MAX_FRAME_BYTES + 10];
        let mut reader = BufReader::new(&huge[..]);
        let error = read_frame(&mut reader).await.err();
        assert_eq!(
            error.map(|error| error.kind()),
            Some(std::io::ErrorKind::InvalidData)
        );
    }
}
