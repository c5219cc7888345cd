//! One HTTP/1.1 request over a plain `TcpStream`, to check what a server answers before it is
//! measured: wrk counts status codes, not what the bodies say.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context as _, bail};

/// The largest response a probe reads; the largest answers are page snapshots and screenshots of
/// a few hundred kilobytes.
const MAX_RESPONSE_BYTES: u64 = 16 << 20;

/// Where an `http://host:port/path` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `host:port`, as written in the URL; also the `Host` header.
    pub authority: String,
    pub path: String,
}

impl Target {
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("http://")
            .with_context(|| format!("`{url}` is not an http:// URL"))?;
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, "/"),
        };
        if !authority.contains(':') || authority.ends_with(':') {
            bail!("`{url}` has no explicit port");
        }
        Ok(Self {
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// A request to send once.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a str,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Header names and values in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Sends `request` to `target` on a fresh connection and reads the whole response. Errors name
/// the target but never the headers, which may carry a credential.
pub fn send(target: &Target, request: &Request<'_>, timeout: Duration) -> anyhow::Result<Response> {
    let context = || format!("probe http://{}{}", target.authority, target.path);
    let stream = TcpStream::connect(&target.authority).with_context(context)?;
    exchange(stream, target, request, timeout)
}

/// Like [`send`], but connects to `address` (resolved once by the caller, so that name
/// resolution stays out of measured requests) while `Host` still names `target.authority`.
pub fn send_to(
    address: SocketAddr,
    target: &Target,
    request: &Request<'_>,
    timeout: Duration,
) -> anyhow::Result<Response> {
    let context = || {
        format!(
            "probe http://{}{} at {address}",
            target.authority, target.path
        )
    };
    let stream = TcpStream::connect_timeout(&address, timeout).with_context(context)?;
    exchange(stream, target, request, timeout)
}

fn exchange(
    mut stream: TcpStream,
    target: &Target,
    request: &Request<'_>,
    timeout: Duration,
) -> anyhow::Result<Response> {
    let context = || format!("probe http://{}{}", target.authority, target.path);
    // Requests are small: send them at once rather than waiting on Nagle.
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut message = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        request.method,
        target.path,
        target.authority,
        request.body.len()
    );
    for (name, value) in request.headers {
        message.push_str(name);
        message.push_str(": ");
        message.push_str(value);
        message.push_str("\r\n");
    }
    message.push_str("\r\n");
    // One write, so that the request leaves in one segment.
    message.push_str(request.body);
    stream.write_all(message.as_bytes()).with_context(context)?;
    // Read until the response is complete, not until the connection closes: a server may keep
    // it open after the answer despite `Connection: close` (node does, for event streams), and
    // that wait is no part of the answer's latency.
    let mut bytes = Vec::new();
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        let read = stream.read(&mut buffer).with_context(context)?;
        if read == 0 {
            break;
        }
        bytes.extend_from_slice(&buffer[..read]);
        if bytes.len() as u64 > MAX_RESPONSE_BYTES {
            bail!(
                "{}: the response exceeds {MAX_RESPONSE_BYTES} bytes",
                context()
            );
        }
        if is_complete(&bytes) {
            break;
        }
    }
    parse_response(&bytes).with_context(context)
}

/// How a response body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilClose,
}

/// A parsed header block.
#[derive(Debug)]
struct Head {
    status: u16,
    headers: Vec<(String, String)>,
    /// Where the body starts in the response bytes.
    body_start: usize,
    framing: Framing,
}

/// Parses the header block, or `None` while it is incomplete.
fn parse_head(bytes: &[u8]) -> anyhow::Result<Option<Head>> {
    let Some(end) = bytes.windows(4).position(|window| window == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&bytes[..end]).context("response headers are not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = match status_line.split(' ').collect::<Vec<_>>().as_slice() {
        [version, code, ..] if version.starts_with("HTTP/1.") => code
            .parse::<u16>()
            .with_context(|| format!("status line `{status_line}`"))?,
        _ => bail!("not an HTTP/1.x status line: `{status_line}`"),
    };
    let mut content_length = None;
    let mut chunked = false;
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            bail!("malformed header line `{line}`");
        };
        let value = value.trim();
        headers.push((name.to_owned(), value.to_owned()));
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(
                value
                    .parse::<usize>()
                    .with_context(|| format!("Content-Length `{value}`"))?,
            );
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value
                .rsplit(',')
                .next()
                .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
        }
    }
    let framing = if chunked {
        Framing::Chunked
    } else if let Some(length) = content_length {
        Framing::Length(length)
    } else if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Length(0)
    } else {
        Framing::UntilClose
    };
    Ok(Some(Head {
        status,
        headers,
        body_start: end + 4,
        framing,
    }))
}

/// Whether `bytes` hold a whole response, so reading can stop. A malformed header block counts
/// as complete: reading on would not repair it, and [`parse_response`] reports it.
fn is_complete(bytes: &[u8]) -> bool {
    match parse_head(bytes) {
        Ok(None) => false,
        Err(_) => true,
        Ok(Some(head)) => {
            let rest = &bytes[head.body_start..];
            match head.framing {
                Framing::Length(length) => rest.len() >= length,
                Framing::Chunked => dechunk(rest).is_ok(),
                Framing::UntilClose => false,
            }
        }
    }
}

/// Parses a complete HTTP/1.1 response: the status and the body, framed by `Content-Length`,
/// chunked transfer coding, or the end of the connection.
pub fn parse_response(bytes: &[u8]) -> anyhow::Result<Response> {
    let Some(head) = parse_head(bytes)? else {
        bail!("the response has no complete header block");
    };
    let rest = &bytes[head.body_start..];
    let body = match head.framing {
        Framing::Chunked => dechunk(rest)?,
        Framing::Length(length) => match rest.get(..length) {
            Some(body) => body.to_vec(),
            None => bail!("the body ends after {} of {length} bytes", rest.len()),
        },
        Framing::UntilClose => rest.to_vec(),
    };
    Ok(Response {
        status: head.status,
        headers: head.headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = rest.windows(2).position(|window| window == b"\r\n") else {
            bail!("truncated chunk size line");
        };
        let line = std::str::from_utf8(&rest[..line_end]).context("chunk size is not UTF-8")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .with_context(|| format!("chunk size `{size_text}`"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let end = size.checked_add(2).context("chunk size overflows")?;
        let (Some(chunk), Some(b"\r\n")) = (rest.get(..size), rest.get(size..end)) else {
            bail!("truncated chunk of {size} bytes");
        };
        body.extend_from_slice(chunk);
        rest = &rest[end..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_targets() {
        assert_eq!(
            Target::parse("http://127.0.0.1:4242/mcp").unwrap(),
            Target {
                authority: "127.0.0.1:4242".to_owned(),
                path: "/mcp".to_owned()
            }
        );
        assert_eq!(Target::parse("http://127.0.0.1:1").unwrap().path, "/");
        assert!(Target::parse("https://127.0.0.1:1/mcp").is_err());
        assert!(Target::parse("http://127.0.0.1/mcp").is_err());
        assert!(Target::parse("http://127.0.0.1:/mcp").is_err());
    }

    #[test]
    fn reads_a_content_length_body() {
        let response = parse_response(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nCONTENT-LENGTH: 4\r\n\r\nabcdEXTRA",
        )
        .unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"abcd");
        assert_eq!(response.header("Content-Type"), Some("application/json"));
        assert_eq!(response.header("mcp-session-id"), None);
    }

    #[test]
    fn reads_a_chunked_body() {
        let response = parse_response(
            b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\na;ext=1\r\n0123456789\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(response.status, 201);
        assert_eq!(response.body, b"abc0123456789");
    }

    #[test]
    fn reads_a_body_up_to_the_end_of_the_connection() {
        let response = parse_response(b"HTTP/1.0 404 Not Found\r\n\r\nnope").unwrap();
        assert_eq!(response.status, 404);
        assert_eq!(response.body, b"nope");
    }

    #[test]
    fn knows_when_a_response_is_complete() {
        let sized = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd";
        assert!(is_complete(sized));
        assert!(!is_complete(&sized[..sized.len() - 1]));
        assert!(!is_complete(b"HTTP/1.1 200 OK\r\nContent-Len"));
        let chunked =
            b"HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        assert!(is_complete(chunked));
        assert!(!is_complete(&chunked[..chunked.len() - 6]));
        assert!(is_complete(b"HTTP/1.1 204 No Content\r\n\r\n"));
        assert!(!is_complete(b"HTTP/1.0 200 OK\r\n\r\nuntil the end"));
        assert!(is_complete(b"SSH-2.0-OpenSSH\r\n\r\n"));
    }

    #[test]
    fn refuses_truncated_or_malformed_responses() {
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort").is_err());
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
                .is_err()
        );
        assert!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err()
        );
        assert!(
            parse_response(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab"
            )
            .is_err()
        );
        assert!(parse_response(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 OK\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n").is_err());
    }
}
