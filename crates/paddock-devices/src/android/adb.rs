//! An async client for the adb server's host protocol (AOSP `packages/modules/adb`,
//! `docs/dev/services.md`, `sync.md`, `shell_protocol.h`).
//!
//! Paddock talks to the adb server the user already runs (`ADB_SERVER_SOCKET`, or
//! `ANDROID_ADB_SERVER_ADDRESS`/`ANDROID_ADB_SERVER_PORT`, else `127.0.0.1:5037`, as `adb` itself
//! resolves it). Every request opens one TCP connection: a 4-hex-digit length and the service
//! name, answered `OKAY` or `FAIL` with a message. Device services go through
//! `host:transport:<serial>` on the same connection, then `shell,v2,raw:` (framed stdout, stderr
//! and exit status), `exec:` (raw bytes, for binary output such as `screencap -p`) or `sync:`
//! (file transfer).
//!
//! Written here rather than taken from `adb_client`: that crate's API is blocking, tracks devices
//! through a callback that sees only additions, and reads no `ADB_SERVER_SOCKET`; this client is
//! a few hundred lines on tokio, so an observation's requests can run concurrently, a cancelled
//! MCP call drops its connection at once, and `host:track-devices` is one stream of full lists.

use std::fmt;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Where the adb server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAddress {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for ServerAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tcp:{}:{}", self.host, self.port)
    }
}

/// The default adb server port.
pub const DEFAULT_PORT: u16 = 5037;

/// The largest chunk a `sync:` DATA packet carries.
const SYNC_CHUNK: usize = 64 * 1024;

/// How long connecting to the adb server may take (it is local or on the LAN).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an adb request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdbError {
    /// No adb server answers at the address.
    #[error(
        "no adb server answers at `{address}` ({reason}); start one with `adb start-server`, or run the daemon with `--android-adb start`"
    )]
    NoServer { address: String, reason: String },
    /// The server or the device refused the request (its `FAIL` message).
    #[error("adb: {0}")]
    Refused(String),
    /// The connection broke or the peer spoke something else than the protocol.
    #[error("adb connection: {0}")]
    Connection(String),
    /// The address settings cannot be used.
    #[error("{0}")]
    Config(String),
}

impl AdbError {
    /// True when the device itself is missing or offline (as opposed to a failed command).
    pub fn is_device_gone(&self) -> bool {
        match self {
            Self::Refused(message) => {
                message.contains("not found")
                    || message.contains("offline")
                    || message.contains("no devices")
                    || message.contains("unauthorized")
            }
            Self::Connection(_) => true,
            _ => false,
        }
    }
}

fn broken(error: std::io::Error) -> AdbError {
    AdbError::Connection(error.to_string())
}

impl ServerAddress {
    /// The address `adb` itself would use, from the given environment lookup.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Self, AdbError> {
        if let Some(socket) = var("ADB_SERVER_SOCKET").filter(|value| !value.is_empty()) {
            return Self::parse_socket(&socket);
        }
        let host = var("ANDROID_ADB_SERVER_ADDRESS")
            .filter(|value| !value.is_empty())
            .unwrap_or_else(|| "127.0.0.1".to_owned());
        let port = match var("ANDROID_ADB_SERVER_PORT").filter(|value| !value.is_empty()) {
            Some(port) => port.parse().map_err(|_| {
                AdbError::Config(format!(
                    "ANDROID_ADB_SERVER_PORT `{port}` is not a port number"
                ))
            })?,
            None => DEFAULT_PORT,
        };
        Ok(Self { host, port })
    }

    /// `tcp:HOST:PORT` or `tcp:PORT`, the forms of `ADB_SERVER_SOCKET` that reach a TCP server.
    pub fn parse_socket(socket: &str) -> Result<Self, AdbError> {
        let Some(rest) = socket.strip_prefix("tcp:") else {
            return Err(AdbError::Config(format!(
                "ADB_SERVER_SOCKET `{socket}` is not supported; use `tcp:HOST:PORT`"
            )));
        };
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) => (host.trim_matches(['[', ']']).to_owned(), port),
            None => ("127.0.0.1".to_owned(), rest),
        };
        let port = port.parse().map_err(|_| {
            AdbError::Config(format!(
                "ADB_SERVER_SOCKET `{socket}` has no valid port; use `tcp:HOST:PORT`"
            ))
        })?;
        if host.is_empty() {
            return Err(AdbError::Config(format!(
                "ADB_SERVER_SOCKET `{socket}` has no host; use `tcp:HOST:PORT`"
            )));
        }
        Ok(Self { host, port })
    }
}

/// A device as `host:devices-l` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedDevice {
    pub serial: String,
    /// `device`, `offline`, `unauthorized`, `recovery`, …
    pub state: String,
    pub model: Option<String>,
    pub product: Option<String>,
}

impl ListedDevice {
    pub fn is_online(&self) -> bool {
        self.state == "device"
    }
}

/// What a shell command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit: u8,
}

impl ShellOutput {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// The client. Cheap to clone: it holds only the address.
#[derive(Debug, Clone)]
pub struct Adb {
    address: ServerAddress,
}

/// One connection to the adb server, after a request was accepted.
struct Connection {
    stream: TcpStream,
}

impl Connection {
    async fn open(address: &ServerAddress) -> Result<Self, AdbError> {
        let target = format!("{}:{}", address.host, address.port);
        let no_server = |reason: String| AdbError::NoServer {
            address: address.to_string(),
            reason,
        };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&target))
            .await
            .map_err(|_| no_server("connecting timed out".into()))?
            .map_err(|error| no_server(error.to_string()))?;
        stream.set_nodelay(true).map_err(broken)?;
        Ok(Self { stream })
    }

    /// Sends one service request and reads its `OKAY` (or the `FAIL` message as an error).
    async fn request(&mut self, service: &str) -> Result<(), AdbError> {
        if service.len() > 0xffff {
            return Err(AdbError::Config(format!(
                "an adb request of {} bytes is too long",
                service.len()
            )));
        }
        let message = format!("{:04x}{service}", service.len());
        self.stream
            .write_all(message.as_bytes())
            .await
            .map_err(broken)?;
        self.status().await
    }

    async fn status(&mut self) -> Result<(), AdbError> {
        let mut status = [0u8; 4];
        self.stream.read_exact(&mut status).await.map_err(broken)?;
        match &status {
            b"OKAY" => Ok(()),
            b"FAIL" => {
                let message = self.read_hex_prefixed().await?;
                Err(AdbError::Refused(
                    String::from_utf8_lossy(&message).into_owned(),
                ))
            }
            other => Err(AdbError::Connection(format!(
                "expected OKAY or FAIL, got {:?}",
                String::from_utf8_lossy(other)
            ))),
        }
    }

    /// A 4-hex-digit length and that many bytes.
    async fn read_hex_prefixed(&mut self) -> Result<Vec<u8>, AdbError> {
        let mut length = [0u8; 4];
        self.stream.read_exact(&mut length).await.map_err(broken)?;
        let length = std::str::from_utf8(&length)
            .ok()
            .and_then(|text| usize::from_str_radix(text, 16).ok())
            .ok_or_else(|| {
                AdbError::Connection(format!(
                    "bad length prefix {:?}",
                    String::from_utf8_lossy(&length)
                ))
            })?;
        let mut body = vec![0u8; length];
        self.stream.read_exact(&mut body).await.map_err(broken)?;
        Ok(body)
    }

    async fn read_to_end(&mut self) -> Result<Vec<u8>, AdbError> {
        let mut out = Vec::new();
        self.stream.read_to_end(&mut out).await.map_err(broken)?;
        Ok(out)
    }
}

impl Adb {
    pub fn new(address: ServerAddress) -> Self {
        Self { address }
    }

    pub fn address(&self) -> &ServerAddress {
        &self.address
    }

    /// A connection switched to the device `serial`.
    async fn transport(&self, serial: &str) -> Result<Connection, AdbError> {
        let mut connection = Connection::open(&self.address).await?;
        connection
            .request(&format!("host:transport:{serial}"))
            .await?;
        Ok(connection)
    }

    /// A host request whose answer is one length-prefixed string.
    async fn host_query(&self, service: &str) -> Result<String, AdbError> {
        let mut connection = Connection::open(&self.address).await?;
        connection.request(service).await?;
        let body = connection.read_hex_prefixed().await?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// The server's protocol version (`host:version`).
    pub async fn version(&self) -> Result<u32, AdbError> {
        let text = self.host_query("host:version").await?;
        u32::from_str_radix(text.trim(), 16)
            .map_err(|_| AdbError::Connection(format!("bad version answer `{text}`")))
    }

    /// Every device the server knows, with its state (`host:devices-l`).
    pub async fn devices(&self) -> Result<Vec<ListedDevice>, AdbError> {
        Ok(parse_device_list(&self.host_query("host:devices-l").await?))
    }

    /// `host:connect:HOST:PORT` — asks the server to connect a device over TCP; the server's
    /// answer (`connected to …`, `already connected to …`), or an error for `failed to …`.
    pub async fn connect_device(&self, address: &str) -> Result<String, AdbError> {
        let answer = self.host_query(&format!("host:connect:{address}")).await?;
        if answer.starts_with("connected") || answer.starts_with("already connected") {
            Ok(answer)
        } else {
            Err(AdbError::Refused(answer))
        }
    }

    /// The device's features as its banner declared them.
    pub async fn features(&self, serial: &str) -> Result<Vec<String>, AdbError> {
        let text = self
            .host_query(&format!("host-serial:{serial}:features"))
            .await?;
        Ok(text
            .split(',')
            .map(str::trim)
            .filter(|feature| !feature.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Follows `host:track-devices`: every change of the device list arrives as the whole list.
    pub async fn track_devices(&self) -> Result<DeviceTracker, AdbError> {
        let mut connection = Connection::open(&self.address).await?;
        connection.request("host:track-devices-l").await?;
        Ok(DeviceTracker { connection })
    }

    /// Runs `command` through the shell protocol (v2): separate stdout and stderr, and the exit
    /// status.
    pub async fn shell(&self, serial: &str, command: &str) -> Result<ShellOutput, AdbError> {
        let mut connection = self.transport(serial).await?;
        connection
            .request(&format!("shell,v2,raw:{command}"))
            .await?;
        let mut output = ShellOutput::default();
        let mut exited = None;
        loop {
            let mut header = [0u8; 5];
            match connection.stream.read_exact(&mut header).await {
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(error) => return Err(broken(error)),
            }
            let length = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
            if length > 64 * 1024 * 1024 {
                return Err(AdbError::Connection(format!(
                    "a shell packet of {length} bytes is implausible"
                )));
            }
            let mut data = vec![0u8; length];
            connection
                .stream
                .read_exact(&mut data)
                .await
                .map_err(broken)?;
            match header[0] {
                1 => output.stdout.extend_from_slice(&data),
                2 => output.stderr.extend_from_slice(&data),
                3 => {
                    exited = Some(data.first().copied().unwrap_or(0));
                    break;
                }
                // stdin, close-stdin and window-size packets come only from the host.
                _ => {}
            }
        }
        match exited {
            Some(code) => {
                output.exit = code;
                Ok(output)
            }
            None => Err(AdbError::Connection(format!(
                "the shell command `{}` ended without an exit status (the device went away?)",
                first_word(command)
            ))),
        }
    }

    /// Runs `command` with `exec:` and returns its raw output (binary-safe, no pty, no exit
    /// status: for `screencap -p` and `uiautomator dump /dev/tty`).
    pub async fn exec(&self, serial: &str, command: &str) -> Result<Vec<u8>, AdbError> {
        let mut connection = self.transport(serial).await?;
        connection.request(&format!("exec:{command}")).await?;
        connection.read_to_end().await
    }

    /// Writes `bytes` to `remote` on the device with permission bits `mode` (`sync:` SEND).
    pub async fn push(
        &self,
        serial: &str,
        bytes: &[u8],
        remote: &str,
        mode: u32,
    ) -> Result<(), AdbError> {
        let mut connection = self.transport(serial).await?;
        connection.request("sync:").await?;
        let spec = format!("{remote},{mode}");
        let stream = &mut connection.stream;
        write_sync(stream, b"SEND", spec.len(), spec.as_bytes()).await?;
        for chunk in bytes.chunks(SYNC_CHUNK) {
            write_sync(stream, b"DATA", chunk.len(), chunk).await?;
        }
        let mtime = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs() as usize)
            .unwrap_or(0);
        write_sync(stream, b"DONE", mtime, &[]).await?;
        let mut reply = [0u8; 8];
        stream.read_exact(&mut reply).await.map_err(broken)?;
        let length = u32::from_le_bytes([reply[4], reply[5], reply[6], reply[7]]) as usize;
        let result = match &reply[..4] {
            b"OKAY" => Ok(()),
            b"FAIL" => {
                let mut message = vec![0u8; length.min(64 * 1024)];
                stream.read_exact(&mut message).await.map_err(broken)?;
                Err(AdbError::Refused(format!(
                    "push to `{remote}`: {}",
                    String::from_utf8_lossy(&message)
                )))
            }
            other => Err(AdbError::Connection(format!(
                "unexpected sync reply {:?}",
                String::from_utf8_lossy(other)
            ))),
        };
        // QUIT ends the sync session politely; the connection closes either way.
        let _ = write_sync(stream, b"QUIT", 0, &[]).await;
        result
    }
}

async fn write_sync(
    stream: &mut TcpStream,
    id: &[u8; 4],
    length: usize,
    data: &[u8],
) -> Result<(), AdbError> {
    let length = u32::try_from(length)
        .map_err(|_| AdbError::Config(format!("a sync field of {length} does not fit")))?;
    let mut packet = Vec::with_capacity(8 + data.len());
    packet.extend_from_slice(id);
    packet.extend_from_slice(&length.to_le_bytes());
    packet.extend_from_slice(data);
    stream.write_all(&packet).await.map_err(broken)
}

fn first_word(command: &str) -> &str {
    command.split_whitespace().next().unwrap_or("")
}

/// The updates of `host:track-devices-l`.
pub struct DeviceTracker {
    connection: Connection,
}

impl fmt::Debug for DeviceTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceTracker").finish_non_exhaustive()
    }
}

impl DeviceTracker {
    /// The next device list (the first one arrives at once).
    pub async fn next(&mut self) -> Result<Vec<ListedDevice>, AdbError> {
        let body = self.connection.read_hex_prefixed().await?;
        Ok(parse_device_list(&String::from_utf8_lossy(&body)))
    }
}

/// Parses the lines of `host:devices-l` / `host:track-devices-l`: `SERIAL STATE key:value …`
/// (columns separated by spaces or a tab).
pub fn parse_device_list(text: &str) -> Vec<ListedDevice> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let serial = words.next()?.to_owned();
            let state = words.next()?.to_owned();
            let mut device = ListedDevice {
                serial,
                state,
                model: None,
                product: None,
            };
            for word in words {
                if let Some(model) = word.strip_prefix("model:") {
                    device.model = Some(model.replace('_', " "));
                } else if let Some(product) = word.strip_prefix("product:") {
                    device.product = Some(product.to_owned());
                }
            }
            Some(device)
        })
        .collect()
}

/// Quotes `text` as one word for the device's `sh` (mksh/toybox): single quotes, with each `'`
/// written as `'\''`.
pub fn shell_quote(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for character in text.chars() {
        if character == '\'' {
            quoted.push_str("'\\''");
        } else {
            quoted.push(character);
        }
    }
    quoted.push('\'');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_address_follows_adb_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        assert_eq!(
            ServerAddress::from_env(env(&[])).ok(),
            Some(ServerAddress {
                host: "127.0.0.1".into(),
                port: 5037
            })
        );
        assert_eq!(
            ServerAddress::from_env(env(&[("ADB_SERVER_SOCKET", "tcp:10.0.0.2:6000")])).ok(),
            Some(ServerAddress {
                host: "10.0.0.2".into(),
                port: 6000
            })
        );
        assert_eq!(
            ServerAddress::from_env(env(&[("ADB_SERVER_SOCKET", "tcp:7000")])).ok(),
            Some(ServerAddress {
                host: "127.0.0.1".into(),
                port: 7000
            })
        );
        assert_eq!(
            ServerAddress::from_env(env(&[
                ("ANDROID_ADB_SERVER_ADDRESS", "192.168.1.5"),
                ("ANDROID_ADB_SERVER_PORT", "5038")
            ]))
            .ok(),
            Some(ServerAddress {
                host: "192.168.1.5".into(),
                port: 5038
            })
        );
        let error = ServerAddress::from_env(env(&[("ADB_SERVER_SOCKET", "localabstract:adb")]))
            .err()
            .map(|error| error.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("`localabstract:adb` is not supported"),
            "{error}"
        );
        assert!(ServerAddress::parse_socket("tcp:host:port").is_err());
        assert!(ServerAddress::parse_socket("tcp::5037").is_err());
    }

    #[test]
    fn device_lists_parse_both_column_styles() {
        let list = parse_device_list(
            "emulator-5554\tdevice\n127.0.0.1:40001          device product:sdk_gphone_x86 model:Pixel_5 device:generic_x86 transport_id:3\nR58M\toffline\n",
        );
        assert_eq!(list.len(), 3);
        assert_eq!(list[0].serial, "emulator-5554");
        assert!(list[0].is_online());
        assert_eq!(list[1].model.as_deref(), Some("Pixel 5"));
        assert_eq!(list[1].product.as_deref(), Some("sdk_gphone_x86"));
        assert_eq!(list[2].state, "offline");
        assert!(!list[2].is_online());
        assert!(parse_device_list("").is_empty());
    }

    #[test]
    fn shell_quoting_survives_quotes() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[tokio::test]
    async fn a_missing_server_is_a_clear_error() {
        // A port nobody listens on: bind one, learn it, close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .unwrap_or(1);
        let adb = Adb::new(ServerAddress {
            host: "127.0.0.1".into(),
            port,
        });
        let error = adb
            .version()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("no adb server answers at `tcp:127.0.0.1:"),
            "{error}"
        );
        assert!(error.contains("adb start-server"), "{error}");
    }
}
