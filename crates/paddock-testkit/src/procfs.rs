//! What `/proc` says about processes, for tests that check what the daemon started: its
//! descendants, their arguments, and the TCP sockets they listen on.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::Context as _;

/// The state `/proc/net/tcp` gives a listening socket.
const TCP_LISTEN: &str = "0A";

/// Every live descendant of `ancestor`, children first (not `ancestor` itself).
pub fn descendants(ancestor: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for pid in pids() {
        if let Some(parent) = parent_of(pid) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![ancestor];
    while let Some(pid) = queue.pop() {
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            if !found.contains(&child) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// The arguments of `pid`, or `None` once it has gone (or is a zombie, which has none).
pub fn cmdline(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    if raw.is_empty() {
        return None;
    }
    Some(
        raw.split(|byte| *byte == 0)
            .filter(|argument| !argument.is_empty())
            .map(|argument| String::from_utf8_lossy(argument).into_owned())
            .collect(),
    )
}

/// A TCP socket in LISTEN state and the process holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpListening {
    pub pid: u32,
    pub ipv6: bool,
    /// The local address as `/proc/net/tcp` writes it (hex).
    pub address: String,
    pub port: u16,
    pub inode: u64,
}

/// The TCP sockets, IPv4 and IPv6, in LISTEN state that any of `pids` holds.
///
/// Each process's own `/proc/<pid>/net/tcp{,6}` is read, since a sandboxed process may live in
/// a network namespace of its own; its sockets are matched by inode against the
/// `socket:[inode]` links in `/proc/<pid>/fd`. Processes that exit meanwhile are skipped.
pub fn tcp_listening(pids: &[u32]) -> anyhow::Result<Vec<TcpListening>> {
    let mut found = Vec::new();
    for &pid in pids {
        let sockets = socket_inodes(pid)?;
        if sockets.is_empty() {
            continue;
        }
        for (file, ipv6) in [("tcp", false), ("tcp6", true)] {
            let path = format!("/proc/{pid}/net/{file}");
            let table = match std::fs::read_to_string(&path) {
                Ok(table) => table,
                // Gone, or a kernel without IPv6.
                Err(_) if !Path::new(&format!("/proc/{pid}")).exists() => break,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(error).with_context(|| path.clone()),
            };
            for row in listening_rows(&table).with_context(|| path.clone())? {
                if sockets.contains(&row.inode) {
                    found.push(TcpListening {
                        pid,
                        ipv6,
                        address: row.address,
                        port: row.port,
                        inode: row.inode,
                    });
                }
            }
        }
    }
    Ok(found)
}

struct Row {
    address: String,
    port: u16,
    inode: u64,
}

/// The LISTEN rows of one `/proc/net/tcp` or `tcp6` table.
fn listening_rows(table: &str) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    // Columns: sl, local_address, rem_address, st, tx:rx queue, tr:when, retrnsmt, uid,
    // timeout, inode, …
    for line in table.lines().skip(1) {
        let columns: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(state), Some(inode)) =
            (columns.get(1), columns.get(3), columns.get(9))
        else {
            anyhow::bail!("a row with too few columns: `{line}`");
        };
        if *state != TCP_LISTEN {
            continue;
        }
        let (address, port) = local
            .split_once(':')
            .with_context(|| format!("a local address without a port: `{line}`"))?;
        rows.push(Row {
            address: address.to_owned(),
            port: u16::from_str_radix(port, 16).with_context(|| format!("port in `{line}`"))?,
            inode: inode
                .parse()
                .with_context(|| format!("inode in `{line}`"))?,
        });
    }
    Ok(rows)
}

/// The inodes of the sockets `pid` has open (none once it has gone).
fn socket_inodes(pid: u32) -> anyhow::Result<HashSet<u64>> {
    let path = format!("/proc/{pid}/fd");
    let entries = match std::fs::read_dir(&path) {
        Ok(entries) => entries,
        Err(_) if !Path::new(&format!("/proc/{pid}")).exists() => return Ok(HashSet::new()),
        Err(error) => return Err(error).context(path),
    };
    Ok(entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter_map(|target| {
            target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect())
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces; state and parent follow it.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listen_rows_are_read() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n   1: 0100007F:A2C4 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 20 4 30 10 -1\n";
        let rows = listening_rows(table).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].address.as_str(), rows[0].port, rows[0].inode),
            ("0100007F", 8080, 4242)
        );
    }
}
