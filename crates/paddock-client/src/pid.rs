//! The daemon's PID record: who is running, on which port and socket. It never holds the token.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Contents of `paddock-daemon-<uid><suffix>.pid`, written as one JSON object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidRecord {
    pub pid: u32,
    pub version: String,
    /// The loopback HTTP port, once the listener is bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_port: Option<u16>,
    pub socket: PathBuf,
    pub started_at_unix_ms: u64,
}

impl PidRecord {
    /// Reads a PID record. A missing file is `Ok(None)`; a file that does not parse is also
    /// `Ok(None)`, because a client must then behave as if no port were discoverable.
    pub fn read(path: &Path) -> io::Result<Option<Self>> {
        match std::fs::read(path) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}
