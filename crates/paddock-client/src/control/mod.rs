//! The control socket's wire protocol: one JSON object per line in each direction.
//!
//! A request is `{"id":N,"method":"daemon/status","params":{…}}`; the answer repeats the id with
//! either `result` or `error` (`{"code":"…","message":"…"}`). The CLI and `paddock mcp` use
//! this socket; it never passes through the HTTP ingress. The methods and their types are in
//! [`methods`]; this module holds the envelope, the framing and the client.

pub mod methods;

pub use methods::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// How long `auth/hello` may take.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest frame either side accepts; larger frames close the connection with an error.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// A request on the control socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControlRequest {
    pub id: u64,
    #[serde(flatten)]
    pub call: ControlCall,
}

/// An answer on the control socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControlResponse {
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ControlError>,
    /// An interim progress message for a long request; the final answer follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// An interim event of a stream (`agents/events`); the final answer follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Value>,
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
    Remote(ControlError),
    #[error("the control request timed out after {0:?}")]
    TimedOut(Duration),
    /// The owner's proof could not be read: the daemon is still starting, or runs with
    /// another environment.
    #[error("could not read the daemon's token to prove you are its owner")]
    Token(#[source] crate::token::TokenFileError),
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

    /// Connects as the daemon's owner: the token file (0600, in the runtime directory) is read
    /// and presented in the first frame, which every method but `daemon/status` requires.
    pub async fn connect_owner(paths: &crate::DaemonPaths) -> Result<Self, ControlClientError> {
        let mut client = Self::connect(&paths.socket).await?;
        let token =
            crate::token::read_token_file(&paths.token_file).map_err(ControlClientError::Token)?;
        client
            .request::<AuthHello>(
                AuthHelloParams {
                    token: Some(SensitiveText::new(token.expose_secret())),
                    voucher: None,
                },
                HELLO_TIMEOUT,
            )
            .await?;
        Ok(client)
    }

    /// Connects as an agent session, presenting its launch's voucher: the connection may then
    /// use only that session's own methods.
    pub async fn connect_session(
        socket: &Path,
        voucher: &str,
    ) -> Result<(Self, AuthHelloResult), ControlClientError> {
        let mut client = Self::connect(socket).await?;
        let hello = client
            .request::<AuthHello>(
                AuthHelloParams {
                    token: None,
                    voucher: Some(SensitiveText::new(voucher)),
                },
                HELLO_TIMEOUT,
            )
            .await?;
        Ok((client, hello))
    }

    /// The connection's two halves, for a protocol that takes over after a control answer
    /// (`mcp/connect`).
    pub fn into_parts(self) -> (BufReader<OwnedReadHalf>, OwnedWriteHalf) {
        (self.reader, self.writer)
    }

    /// Calls method `M` and waits at most `timeout` for its typed answer.
    pub async fn request<M: Method>(
        &mut self,
        params: M::Params,
        timeout: Duration,
    ) -> Result<M::Output, ControlClientError> {
        self.request_with_progress::<M>(params, timeout, |_| {})
            .await
    }

    /// Like [`ControlClient::request`], passing each progress message to `progress`.
    pub async fn request_with_progress<M: Method>(
        &mut self,
        params: M::Params,
        timeout: Duration,
        progress: impl FnMut(&str),
    ) -> Result<M::Output, ControlClientError> {
        let value = self.exchange(M::call(params), timeout, progress).await?;
        serde_json::from_value(value).map_err(ControlClientError::Malformed)
    }

    /// Calls a streaming method (`agents/events`): the returned stream yields each `event`
    /// frame as it arrives and then the typed answer. There is no deadline: the stream lasts as
    /// long as what it follows; drop it (and the client) to stop following.
    pub async fn stream<M: Method>(
        &mut self,
        params: M::Params,
    ) -> Result<EventStream<'_, M>, ControlClientError> {
        let id = self.next_id;
        self.next_id += 1;
        write_frame(
            &mut self.writer,
            &ControlRequest {
                id,
                call: M::call(params),
            },
        )
        .await?;
        Ok(EventStream {
            client: self,
            id,
            done: false,
            method: std::marker::PhantomData,
        })
    }

    /// Sends `call` and returns the `result` of its answer.
    async fn exchange(
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
        self.request::<DaemonStatus>((), timeout).await
    }
}

/// The frames of a streaming method, from [`ControlClient::stream`].
#[derive(Debug)]
pub struct EventStream<'a, M: Method> {
    client: &'a mut ControlClient,
    id: u64,
    done: bool,
    method: std::marker::PhantomData<M>,
}

/// One item of an [`EventStream`].
#[derive(Debug)]
pub enum StreamItem<T> {
    /// An interim `event` frame.
    Event(Value),
    /// The answer; the stream has ended.
    Done(T),
}

impl<M: Method> EventStream<'_, M> {
    /// The next event or the answer; after the answer, [`ControlClientError::Closed`].
    pub async fn next(&mut self) -> Result<StreamItem<M::Output>, ControlClientError> {
        if self.done {
            return Err(ControlClientError::Closed);
        }
        loop {
            let frame = read_frame(&mut self.client.reader)
                .await?
                .ok_or(ControlClientError::Closed)?;
            let response: ControlResponse =
                serde_json::from_slice(&frame).map_err(ControlClientError::Malformed)?;
            if response.id != Some(self.id) {
                continue;
            }
            if let Some(event) = response.event {
                return Ok(StreamItem::Event(event));
            }
            if response.progress.is_some() {
                continue;
            }
            self.done = true;
            return match (response.result, response.error) {
                (_, Some(error)) => Err(ControlClientError::Remote(error)),
                (result, None) => serde_json::from_value(result.unwrap_or(Value::Null))
                    .map(StreamItem::Done)
                    .map_err(ControlClientError::Malformed),
            };
        }
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

/// Whether `bot` is a bot id: 1 to 64 letters, digits, `-`, `_` or `.`, not starting with `.`
/// (it names files and channel refs).
pub fn is_bot_id(bot: &str) -> bool {
    (1..=64).contains(&bot.len())
        && bot
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte))
        && !bot.starts_with('.')
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
            call: CredentialsRevoke::call(CredentialsRevokeParams {
                id: Some("v-0123456789ab".into()),
                launch: None,
            }),
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
            call: PiiSetEnabled::call(PiiSetEnabledParams {
                bot: "helper".into(),
                filter_id: "email".into(),
                enabled: false,
            }),
        };
        assert_eq!(
            serde_json::to_string(&set_enabled).ok().as_deref(),
            Some(
                r#"{"id":4,"method":"pii/setEnabled","params":{"bot":"helper","filterId":"email","enabled":false}}"#
            )
        );
        let redact = ControlRequest {
            id: 5,
            call: PiiRedact::call(PiiTextParams {
                bot: "helper".into(),
                text: SensitiveText::new("mail me at a@example.com"),
            }),
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

    /// Serialises `call`, checks its method is `M::NAME`, and parses it back unchanged.
    fn round_trip<M: Method>(params: M::Params) -> serde_json::Value {
        let call = M::call(params);
        assert_eq!(call.method(), M::NAME);
        let request = ControlRequest { id: 9, call };
        let wire = serde_json::to_value(&request).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(wire["method"], M::NAME, "{wire}");
        let back: ControlRequest =
            serde_json::from_value(wire.clone()).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(back.call, request.call);
        wire
    }

    fn output_round_trip<M: Method>(output: M::Output) -> serde_json::Value
    where
        M::Output: PartialEq + std::fmt::Debug,
    {
        let wire = serde_json::to_value(&output).unwrap_or_else(|error| panic!("{error}"));
        let back: M::Output =
            serde_json::from_value(wire.clone()).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(back, output);
        wire
    }

    #[test]
    fn every_method_round_trips_with_its_types() {
        round_trip::<DaemonStatus>(());
        round_trip::<DaemonStop>(());
        round_trip::<McpConnect>(McpConnectParams {
            session_id: "s".into(),
            reconnectable: false,
        });
        round_trip::<McpConnect>(McpConnectParams {
            session_id: "s".into(),
            reconnectable: true,
        });
        round_trip::<DevicesList>(());
        let warm = round_trip::<DevicesWarm>(DevicesWarmParams {
            count: 2,
            platform: "web".into(),
            profile: None,
            avd: None,
        });
        assert_eq!(warm["params"]["count"], 2);
        let emulator = round_trip::<DevicesWarm>(DevicesWarmParams {
            count: 1,
            platform: "android".into(),
            profile: None,
            avd: Some("pixel_5_api_30".into()),
        });
        assert_eq!(emulator["params"]["avd"], "pixel_5_api_30");
        round_trip::<CredentialsList>(());
        round_trip::<CredentialsRevoke>(CredentialsRevokeParams {
            id: None,
            launch: Some("l".into()),
        });
        round_trip::<PiiList>(PiiBotParams { bot: "b".into() });
        round_trip::<PiiAdd>(PiiAddParams {
            bot: "b".into(),
            source: SensitiveText::new("export default (t) => ({ text: t, triggered: false })"),
            description: "d".into(),
        });
        round_trip::<PiiSetEnabled>(PiiSetEnabledParams {
            bot: "b".into(),
            filter_id: "email".into(),
            enabled: true,
        });
        let delete = round_trip::<PiiDelete>(PiiFilterParams {
            bot: "b".into(),
            filter_id: "plugin-1".into(),
        });
        assert_eq!(delete["params"]["filterId"], "plugin-1");
        round_trip::<PiiTest>(PiiTextParams {
            bot: "b".into(),
            text: SensitiveText::new("x"),
        });
        round_trip::<PiiRedact>(PiiTextParams {
            bot: "b".into(),
            text: SensitiveText::new("x"),
        });
        round_trip::<AuthHello>(AuthHelloParams {
            token: Some(SensitiveText::new("t")),
            voucher: None,
        });
        let open = round_trip::<AgentsOpen>(AgentsOpenParams {
            backend: "claude".into(),
            cwd: "/work".into(),
            model: None,
            mode: Some("plan".into()),
            instructions: None,
            env: vec![("A".into(), "1".into())],
            bot: Some("helper".into()),
            permissions: Some("allow".into()),
            upstream: Some(AgentUpstream {
                url: "https://api.anthropic.com".into(),
                header: "x-api-key".into(),
                scheme: None,
                key: AgentKey::Source("file:/k".into()),
            }),
            prompt: Some(SensitiveText::new("hi")),
            sandbox: Some(AgentSandbox {
                mode: None,
                read: vec!["/docs".into()],
                exec: Vec::new(),
                write: Vec::new(),
            }),
        });
        assert_eq!(open["params"]["upstream"]["key"]["source"], "file:/k");
        assert_eq!(open["params"]["sandbox"]["read"][0], "/docs");
        let session = || AgentsSessionParams {
            id: "agt-1-1".into(),
        };
        round_trip::<AgentsSend>(AgentsSendParams {
            id: "agt-1-1".into(),
            text: SensitiveText::new("more"),
        });
        round_trip::<AgentsInterrupt>(session());
        round_trip::<AgentsStop>(AgentsStopParams {
            id: "agt-1-1".into(),
            reason: None,
            force_after_ms: Some(0),
        });
        round_trip::<AgentsSnapshot>(session());
        round_trip::<AgentsList>(());
        let events = round_trip::<AgentsEvents>(AgentsEventsParams {
            id: "agt-1-1".into(),
            from: 7,
        });
        assert_eq!(events["params"]["from"], 7);
        round_trip::<BotsAdd>(BotDefinition {
            id: "helper".into(),
            backend: "claude".into(),
            model: None,
            cwd: "/work".into(),
            instructions: None,
            mode: None,
            permissions: None,
            sandbox: None,
        });
        round_trip::<BotsRemove>(BotParams {
            bot: "helper".into(),
        });
        round_trip::<BotsList>(());
        round_trip::<BotsMessage>(BotMessageParams {
            bot: "helper".into(),
            target: None,
            text: SensitiveText::new("hello"),
        });
        round_trip::<BotsOutbox>(BotParams {
            bot: "helper".into(),
        });
        round_trip::<InboxPull>(());
        round_trip::<InboxAck>(InboxAckParams { upto: Some(3) });
        let send = round_trip::<MessageSend>(MessageSendParams {
            target: "/.dm/owner".into(),
            text: SensitiveText::new("reply"),
            continue_anyway: true,
        });
        assert_eq!(send["params"]["continueAnyway"], true);
        assert_eq!(METHOD_NAMES.len(), 29);

        let voucher = VoucherEntry {
            id: "v-1".into(),
            launch: "l".into(),
            capabilities: vec![GrantEntry {
                upstream: "anthropic".into(),
                method: "POST".into(),
                path_prefix: "/v1/messages".into(),
            }],
            age_ms: 5,
            minted_at_unix_ms: 7,
        };
        let listed = output_round_trip::<CredentialsList>(VoucherListResult {
            vouchers: vec![voucher.clone()],
        });
        // The wire keeps its camelCase names.
        assert_eq!(listed["vouchers"][0]["ageMs"], 5);
        assert_eq!(
            listed["vouchers"][0]["capabilities"][0]["pathPrefix"],
            "/v1/messages"
        );
        output_round_trip::<CredentialsRevoke>(RevokedResult {
            revoked: vec![voucher],
        });
        let devices = output_round_trip::<DevicesList>(DevicesListResult {
            devices: vec![DeviceEntry {
                id: "web-1".into(),
                platform: "web".into(),
                profile: "pixel7".into(),
                state: "idle".into(),
                session: None,
                pid: Some(42),
            }],
            default_profile: "pixel7".into(),
        });
        assert_eq!(devices["defaultProfile"], "pixel7");
        assert!(devices["devices"][0]["session"].is_null());
        output_round_trip::<DevicesWarm>(DevicesWarmResult {
            warmed: vec!["web-2".into()],
        });
        output_round_trip::<DaemonStop>(StopResult { stopping: true });
        output_round_trip::<McpConnect>(McpConnectResult {
            session_id: "s".into(),
        });
    }

    #[test]
    fn errors_carry_typed_codes_and_tolerate_new_ones() {
        let error = ControlError::new(ErrorCode::NotFound, "no voucher `v-1`");
        let wire = serde_json::to_value(&error).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(wire["code"], "not_found");
        let newer: ControlError =
            serde_json::from_str(r#"{"code":"rate_limited","message":"slow down"}"#)
                .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(newer.code, ErrorCode::Unknown);
        assert_eq!(error.to_string(), "[not_found] no voucher `v-1`");
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
