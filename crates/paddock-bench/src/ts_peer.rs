//! The TypeScript MCP SDK peer (`bench/peers/ts-mcp-server`), run under node for the length of
//! a benchmark.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context as _, bail};

/// How much of the peer's stderr is kept for error messages.
const STDERR_CAPTURE_BYTES: usize = 16 * 1024;

/// How long node may take to load the SDK and listen.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The peer's directory in this repository, as of the build.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers/ts-mcp-server")
}

/// A running peer, killed on drop.
#[derive(Debug)]
pub struct TsPeer {
    child: Child,
    pub port: u16,
}

impl TsPeer {
    /// Starts `node server.mjs 0` in `dir` and waits for the port it prints.
    pub fn start(node: &Path, dir: &Path) -> anyhow::Result<Self> {
        Self::start_with_env(node, dir, &[])
    }

    /// [`Self::start`] with extra environment for node (such as `PEER_TOOL`).
    pub fn start_with_env(node: &Path, dir: &Path, env: &[(&str, &str)]) -> anyhow::Result<Self> {
        if !dir.join("server.mjs").is_file() {
            bail!(
                "no TypeScript MCP peer at `{}`\nhint: pass --ts-server-dir <bench/peers/ts-mcp-server>",
                dir.display()
            );
        }
        if !dir.join("node_modules/@modelcontextprotocol/sdk").is_dir() {
            bail!(
                "the TypeScript MCP peer's dependencies are not installed (`{}` has no node_modules)\nhint: npm ci --prefix bench/peers/ts-mcp-server",
                dir.display()
            );
        }
        let mut child = Command::new(node)
            .arg("server.mjs")
            .arg("0")
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| {
                format!(
                    "could not run `{}`\nhint: apt-get install nodejs npm",
                    node.display()
                )
            })?;
        let (stderr, stderr_reader) = capture_stderr(&mut child);
        let (lines, first_line) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                // The first line is the port; the rest is drained so node never blocks on a
                // full pipe.
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let _ = lines.send(line);
                }
            });
        }
        let mut peer = Self { child, port: 0 };
        match first_line.recv_timeout(START_TIMEOUT) {
            Ok(line) => {
                peer.port = parse_port(&line)?;
                Ok(peer)
            }
            Err(_) => {
                peer.stop();
                // The child is gone, so its stderr reaches end of file and the reader returns.
                if let Some(reader) = stderr_reader {
                    let _ = reader.join();
                }
                let stderr = stderr
                    .lock()
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    .unwrap_or_default();
                bail!(
                    "the TypeScript MCP peer did not print its port within {}s; its stderr:\n{stderr}",
                    START_TIMEOUT.as_secs()
                )
            }
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TsPeer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Keeps the first [`STDERR_CAPTURE_BYTES`] of the child's stderr and discards the rest.
fn capture_stderr(child: &mut Child) -> (Arc<Mutex<Vec<u8>>>, Option<JoinHandle<()>>) {
    let captured = Arc::new(Mutex::new(Vec::new()));
    let reader = child.stderr.take().map(|mut stderr| {
        let sink = captured.clone();
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 4096];
            while let Ok(read) = stderr.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                let mut kept = sink.lock().unwrap_or_else(|poison| poison.into_inner());
                let room = STDERR_CAPTURE_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        })
    });
    (captured, reader)
}

/// The port line `server.mjs` prints once it listens.
fn parse_port(line: &str) -> anyhow::Result<u16> {
    match line.trim().parse::<u16>() {
        Ok(port) if port != 0 => Ok(port),
        _ => bail!("the TypeScript MCP peer printed `{line}` instead of its port"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_port_line() {
        assert_eq!(parse_port("41234").unwrap(), 41234);
        assert_eq!(parse_port(" 8080\r").unwrap(), 8080);
        assert!(parse_port("0").is_err());
        assert!(parse_port("65536").is_err());
        assert!(parse_port("listening on 8080").is_err());
        assert!(parse_port("").is_err());
    }
}
