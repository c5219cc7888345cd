//! The daemon's PID record: who is running, on which port and socket, and enough about the
//! process (its start time and command line) that a later `paddock daemon stop` signals only
//! that very process, never one that reused its pid. It never holds the token.

use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use paddock_secrets::private::{PrivateFileError, open_private_file};

/// The largest PID record read; a real one is a few hundred bytes.
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// Contents of `daemon<suffix>.pid`, written as one JSON object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidRecord {
    pub pid: u32,
    pub version: String,
    /// The loopback HTTP port, once the listener is bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_port: Option<u16>,
    pub socket: PathBuf,
    pub started_at_unix_ms: u64,
    /// The process's start time in clock ticks after boot (field 22 of `/proc/<pid>/stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
    /// The process's command line (`/proc/<pid>/cmdline`, one entry per argument). The daemon's
    /// arguments never carry a secret.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cmdline: Vec<String>,
}

/// Why a PID record does not describe the live process it names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProcessMismatch {
    #[error("no process {pid} is running")]
    Gone { pid: u32 },
    #[error("process {pid} runs as uid {uid}, not as you (uid {expected})")]
    OtherUser { pid: u32, uid: u32, expected: u32 },
    #[error(
        "process {pid} started at a different time than the recorded daemon: its pid was reused"
    )]
    StartTime { pid: u32 },
    #[error("process {pid} runs a different command line than the recorded daemon")]
    CommandLine { pid: u32 },
    #[error("the PID record of process {pid} lacks its start time and command line")]
    Unverifiable { pid: u32 },
}

impl PidRecord {
    /// Reads a PID record. A missing file is `Ok(None)`; a file that does not parse is also
    /// `Ok(None)`, because a client must then behave as if no port were discoverable. A file
    /// that is not a private file of ours (another user's, a symlink, group- or world-readable)
    /// is an error: it is never trusted.
    pub fn read(path: &Path) -> Result<Option<Self>, PrivateFileError> {
        let file = match open_private_file(path) {
            Ok(file) => file,
            Err(PrivateFileError::NotFound { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        let mut bytes = Vec::new();
        file.take(MAX_RECORD_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|source| PrivateFileError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(serde_json::from_slice(&bytes).ok())
    }

    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// Checks that the process this record names is still the daemon that wrote it: it runs as
    /// the current uid, started at the recorded time and runs the recorded command line. Reads
    /// only `/proc/<pid>/status`, `stat` and `cmdline`, which stay readable for a process that
    /// made itself non-dumpable (unlike `/proc/<pid>/exe`).
    #[cfg(target_os = "linux")]
    pub fn verify_process(&self) -> Result<(), ProcessMismatch> {
        let pid = self.pid;
        let Some(start_ticks) = self.start_ticks else {
            return Err(ProcessMismatch::Unverifiable { pid });
        };
        if self.cmdline.is_empty() {
            return Err(ProcessMismatch::Unverifiable { pid });
        }
        let live = ProcessFacts::read(pid).map_err(|_| ProcessMismatch::Gone { pid })?;
        let expected = crate::paths::current_uid();
        if live.uid != expected {
            return Err(ProcessMismatch::OtherUser {
                pid,
                uid: live.uid,
                expected,
            });
        }
        if live.start_ticks != start_ticks {
            return Err(ProcessMismatch::StartTime { pid });
        }
        if live.cmdline != self.cmdline {
            return Err(ProcessMismatch::CommandLine { pid });
        }
        Ok(())
    }
}

/// What `/proc` says about one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessFacts {
    /// The real uid.
    pub uid: u32,
    /// Field 22 of `/proc/<pid>/stat`.
    pub start_ticks: u64,
    pub cmdline: Vec<String>,
}

impl ProcessFacts {
    /// Reads the facts of `pid`.
    #[cfg(target_os = "linux")]
    pub fn read(pid: u32) -> io::Result<Self> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let uid = status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|uid| uid.parse().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Uid line"))?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        let start_ticks = parse_start_ticks(&stat)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "short stat line"))?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))?;
        Ok(Self {
            uid,
            start_ticks,
            cmdline: split_cmdline(&cmdline),
        })
    }

    /// The calling process's own facts, for its PID record.
    #[cfg(target_os = "linux")]
    pub fn current() -> io::Result<Self> {
        Self::read(std::process::id())
    }
}

/// Field 22 (`starttime`) of a `/proc/<pid>/stat` line. The command name (field 2) is in
/// parentheses and may itself contain spaces and parentheses, so fields are counted after the
/// last `)`.
pub fn parse_start_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // After `)` come field 3 (state) onwards: field 22 is the 20th of them.
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn split_cmdline(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|byte| *byte == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_ticks_count_fields_after_the_command_name() {
        let stat = "4242 (paddock (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 3 0 987654 1000 10";
        assert_eq!(parse_start_ticks(stat), Some(987654));
        assert_eq!(parse_start_ticks("1 (short) S 1"), None);
        assert_eq!(parse_start_ticks("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_record_of_this_process_verifies_and_a_changed_one_does_not() {
        let facts = ProcessFacts::current().unwrap_or_else(|error| panic!("{error}"));
        let record = PidRecord {
            pid: std::process::id(),
            version: "t".into(),
            http_port: None,
            socket: PathBuf::from("/x"),
            started_at_unix_ms: 0,
            start_ticks: Some(facts.start_ticks),
            cmdline: facts.cmdline.clone(),
        };
        assert_eq!(record.verify_process(), Ok(()));
        let reused = PidRecord {
            start_ticks: Some(facts.start_ticks + 1),
            ..record.clone()
        };
        assert!(matches!(
            reused.verify_process(),
            Err(ProcessMismatch::StartTime { .. })
        ));
        let other = PidRecord {
            cmdline: vec!["/bin/sleep".into()],
            ..record.clone()
        };
        assert!(matches!(
            other.verify_process(),
            Err(ProcessMismatch::CommandLine { .. })
        ));
        let bare = PidRecord {
            start_ticks: None,
            ..record
        };
        assert!(matches!(
            bare.verify_process(),
            Err(ProcessMismatch::Unverifiable { .. })
        ));
    }
}
