//! Hand-written HTTP/1.1 requests with full control over every header, and their parsed answers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::Context as _;

/// One HTTP/1.1 request, sent on a fresh connection with `Connection: close`.
#[derive(Debug, Clone)]
pub struct RawRequest {
    method: String,
    path: String,
    host: Option<String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl RawRequest {
    pub fn new(method: &str, path: &str) -> Self {
        Self {
            method: method.to_owned(),
            path: path.to_owned(),
            host: None,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn get(path: &str) -> Self {
        Self::new("GET", path)
    }

    /// Overrides the Host header (default `127.0.0.1:<port>`); `""` sends an empty Host.
    pub fn host(mut self, host: &str) -> Self {
        self.host = Some(host.to_owned());
        self
    }

    /// Sends no Host header at all.
    pub fn no_host(mut self) -> Self {
        self.host = Some("\0".to_owned());
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn bearer(self, token: &str) -> Self {
        self.header("Authorization", &format!("Bearer {token}"))
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Sends the request to 127.0.0.1:`port` and reads the whole answer.
    pub fn send(&self, port: u16) -> anyhow::Result<RawResponse> {
        self.send_with_timeout(port, Duration::from_secs(60))
    }

    /// Sends the request and returns the connection unread, for a streamed answer (SSE) that
    /// the caller reads as it arrives.
    pub fn open(&self, port: u16, timeout: Duration) -> anyhow::Result<TcpStream> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).context("connect")?;
        stream.set_read_timeout(Some(timeout))?;
        stream.write_all(self.head(port).as_bytes())?;
        stream.write_all(&self.body)?;
        Ok(stream)
    }

    fn head(&self, port: u16) -> String {
        let mut head = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        match self.host.as_deref() {
            None => head.push_str(&format!("Host: 127.0.0.1:{port}\r\n")),
            Some("\0") => {}
            Some(host) => head.push_str(&format!("Host: {host}\r\n")),
        }
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !self.body.is_empty() || self.method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("Connection: close\r\n\r\n");
        head
    }

    pub fn send_with_timeout(&self, port: u16, timeout: Duration) -> anyhow::Result<RawResponse> {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).context("connect")?;
        stream.set_read_timeout(Some(timeout))?;
        stream.write_all(self.head(port).as_bytes())?;
        // A server may answer (413, 401) and close before the whole body is written; the
        // answer is still readable, so a failed body write is not an error here.
        let _ = stream.write_all(&self.body);
        let mut raw = Vec::new();
        if let Err(error) = stream.read_to_end(&mut raw)
            && raw.is_empty()
        {
            return Err(error).context("read response");
        }
        RawResponse::parse(&raw)
    }
}

/// A parsed HTTP answer.
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    fn parse(raw: &[u8]) -> anyhow::Result<Self> {
        let text = String::from_utf8_lossy(raw);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .with_context(|| format!("no header end in {text:?}"))?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().context("no status line")?;
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .with_context(|| format!("bad status line {status_line:?}"))?;
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Ok(Self {
            status,
            headers,
            body: body.to_owned(),
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(candidate, _)| *candidate == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> anyhow::Result<serde_json::Value> {
        serde_json::from_str(&self.body)
            .with_context(|| format!("body is not JSON: {:?}", self.body))
    }
}
