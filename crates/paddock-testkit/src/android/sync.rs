//! The `sync:` service (AOSP `sync.md`): binary requests of a four-letter id, a little-endian
//! length and a path — STAT/STA2/LST2 to stat, LIST/LIS2 to list, SEND to store a file from
//! DATA chunks up to a DONE carrying its mtime (answered OKAY, or FAIL with a reason), RECV to
//! send a file back as DATA chunks and DONE, QUIT to end — on the fake file system.

use std::io::{self, Read};
use std::sync::Mutex;

use super::device::{self, Device, FsError, Stat};
use super::transport::{StreamReader, StreamWriter, lock};

const fn id(name: &[u8; 4]) -> u32 {
    u32::from_le_bytes(*name)
}

const STAT: u32 = id(b"STAT");
const STA2: u32 = id(b"STA2");
const LST2: u32 = id(b"LST2");
const LIST: u32 = id(b"LIST");
const LIS2: u32 = id(b"LIS2");
const SEND: u32 = id(b"SEND");
const RECV: u32 = id(b"RECV");
const DENT: u32 = id(b"DENT");
const DNT2: u32 = id(b"DNT2");
const DONE: u32 = id(b"DONE");
const DATA: u32 = id(b"DATA");
const OKAY: u32 = id(b"OKAY");
const FAIL: u32 = id(b"FAIL");
const QUIT: u32 = id(b"QUIT");

/// The largest DATA chunk a push may carry (64 KiB).
const SYNC_DATA_MAX: u32 = 64 * 1024;
/// adbd reads a file into a 64 KiB buffer that also holds the 8-byte DATA header, so its
/// chunks are 8 bytes short of the maximum.
const RECV_CHUNK: usize = SYNC_DATA_MAX as usize - 8;

fn read_u32(reader: &mut impl Read) -> io::Result<u32> {
    let mut bytes = [0u8; 4];
    reader.read_exact(&mut bytes)?;
    Ok(u32::from_le_bytes(bytes))
}

/// Where a stat answer's numbers come from.
struct Metadata {
    mode: u32,
    size: u64,
    mtime: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    ino: u64,
}

fn metadata(path: &str, stat: Stat) -> Metadata {
    // Inode numbers only need to differ between paths.
    let ino = path.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    }) & 0xff_ffff;
    let shell_owned = path.starts_with("/data/local/tmp") || path.starts_with("/storage/emulated");
    let (uid, gid) = if shell_owned { (2000, 2000) } else { (0, 0) };
    match stat {
        Stat::Directory { mtime } => Metadata {
            mode: 0o040771,
            size: 4096,
            mtime,
            uid,
            gid,
            nlink: 2,
            ino,
        },
        Stat::File { size, mode, mtime } => Metadata {
            mode,
            size,
            mtime,
            uid,
            gid,
            nlink: 1,
            ino,
        },
    }
}

/// The fields of a `stat_v2` (and `dent_v2`) after the id: no error, then dev, ino, mode,
/// nlink, uid, gid, size and the three times (all the mtime).
fn push_stat_v2(out: &mut Vec<u8>, meta: &Metadata) {
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&0xfd05u64.to_le_bytes());
    out.extend_from_slice(&meta.ino.to_le_bytes());
    out.extend_from_slice(&meta.mode.to_le_bytes());
    out.extend_from_slice(&meta.nlink.to_le_bytes());
    out.extend_from_slice(&meta.uid.to_le_bytes());
    out.extend_from_slice(&meta.gid.to_le_bytes());
    out.extend_from_slice(&meta.size.to_le_bytes());
    for _ in 0..3 {
        out.extend_from_slice(&i64::from(meta.mtime).to_le_bytes());
    }
}

fn stat_v2_bytes(reply_id: u32, path: &str, stat: Option<Stat>) -> Vec<u8> {
    let mut out = Vec::with_capacity(72);
    out.extend_from_slice(&reply_id.to_le_bytes());
    match stat {
        None => {
            out.extend_from_slice(&FsError::NotFound.errno().to_le_bytes());
            out.resize(72, 0);
        }
        Some(stat) => push_stat_v2(&mut out, &metadata(path, stat)),
    }
    out
}

fn fail(writer: &mut StreamWriter, reason: &str) -> io::Result<()> {
    let mut out = FAIL.to_le_bytes().to_vec();
    out.extend_from_slice(&u32::try_from(reason.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(reason.as_bytes());
    writer.queue(&out)?;
    writer.flush()
}

/// Serves sync requests until QUIT, a broken request or the host closing the stream.
pub(crate) fn serve(device: &Mutex<Device>, mut reader: StreamReader, mut writer: StreamWriter) {
    while let Ok(true) = handle(device, &mut reader, &mut writer) {}
}

fn handle(
    device: &Mutex<Device>,
    reader: &mut StreamReader,
    writer: &mut StreamWriter,
) -> io::Result<bool> {
    let request = match read_u32(reader) {
        Ok(request) => request,
        Err(_) => return Ok(false),
    };
    let length = read_u32(reader)?;
    if length > 1024 {
        fail(writer, "path too long")?;
        return Ok(false);
    }
    let mut name = vec![0u8; length as usize];
    reader.read_exact(&mut name)?;
    let name = String::from_utf8_lossy(&name).into_owned();
    match request {
        STAT => {
            let path = device::normalize(&name, "/");
            let stat = lock(device).files.stat(&path);
            let mut out = STAT.to_le_bytes().to_vec();
            let (mode, size, mtime) = match stat {
                Some(stat) => {
                    let meta = metadata(&path, stat);
                    (meta.mode, meta.size as u32, meta.mtime)
                }
                None => (0, 0, 0),
            };
            for word in [mode, size, mtime] {
                out.extend_from_slice(&word.to_le_bytes());
            }
            writer.queue(&out)?;
        }
        STA2 | LST2 => {
            let path = device::normalize(&name, "/");
            let stat = lock(device).files.stat(&path);
            writer.queue(&stat_v2_bytes(request, &path, stat))?;
        }
        LIST | LIS2 => list(device, writer, &name, request == LIS2)?,
        SEND => {
            if !send(device, reader, writer, &name)? {
                return Ok(false);
            }
        }
        RECV => {
            if !recv(device, writer, &name)? {
                return Ok(false);
            }
        }
        QUIT => return Ok(false),
        other => {
            fail(writer, &format!("unknown command {other:08x}"))?;
            return Ok(false);
        }
    }
    writer.flush()?;
    Ok(true)
}

fn list(device: &Mutex<Device>, writer: &mut StreamWriter, name: &str, v2: bool) -> io::Result<()> {
    let path = device::normalize(name, "/");
    let entries = {
        let device = lock(device);
        let here = device.files.stat(&path);
        device.files.list(&path).ok().map(|mut entries| {
            // readdir returns `.` and `..` too, and adbd passes them on.
            if let Some(here) = here {
                entries.insert(
                    0,
                    (
                        "..".to_owned(),
                        Stat::Directory {
                            mtime: device::BOOT_TIME,
                        },
                    ),
                );
                entries.insert(0, (".".to_owned(), here));
            }
            entries
        })
    };
    // A directory that cannot be opened lists as empty.
    for (entry, stat) in entries.unwrap_or_default() {
        let full = if entry == "." || entry == ".." {
            path.clone()
        } else {
            format!("{}/{entry}", path.trim_end_matches('/'))
        };
        let meta = metadata(&full, stat);
        let name_length = u32::try_from(entry.len()).unwrap_or(0);
        let mut out = Vec::new();
        if v2 {
            out.extend_from_slice(&DNT2.to_le_bytes());
            push_stat_v2(&mut out, &meta);
            out.extend_from_slice(&name_length.to_le_bytes());
        } else {
            out.extend_from_slice(&DENT.to_le_bytes());
            for word in [meta.mode, meta.size as u32, meta.mtime, name_length] {
                out.extend_from_slice(&word.to_le_bytes());
            }
        }
        out.extend_from_slice(entry.as_bytes());
        writer.queue(&out)?;
    }
    // DONE is the size of a directory entry, zeroed.
    let mut done = DONE.to_le_bytes().to_vec();
    done.resize(if v2 { 76 } else { 20 }, 0);
    writer.queue(&done)
}

/// `strtoul(…, 0)`: decimal, `0x` hexadecimal or `0` octal.
fn parse_mode(text: &str) -> Option<u32> {
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16).ok()
    } else if text.len() > 1 && text.starts_with('0') {
        u32::from_str_radix(&text[1..], 8).ok()
    } else {
        text.parse().ok()
    }
}

/// Receives DATA chunks up to DONE; returns the data and the mtime, or `None` when the host
/// sent something else (after which the stream is out of step).
fn receive_chunks(reader: &mut StreamReader) -> io::Result<Result<(Vec<u8>, u32), String>> {
    let mut data = Vec::new();
    loop {
        let id = read_u32(reader)?;
        let size = read_u32(reader)?;
        match id {
            DATA => {
                if size > SYNC_DATA_MAX {
                    return Ok(Err("oversize data message".to_owned()));
                }
                let start = data.len();
                data.resize(start + size as usize, 0);
                reader.read_exact(&mut data[start..])?;
            }
            DONE => return Ok(Ok((data, size))),
            _ => return Ok(Err("invalid data message".to_owned())),
        }
    }
}

/// Reads and drops DATA chunks up to DONE: after a FAIL adbd keeps reading so that the host
/// sees the failure instead of a reset.
fn drain_chunks(reader: &mut StreamReader) -> io::Result<()> {
    loop {
        let id = read_u32(reader)?;
        let size = read_u32(reader)?;
        match id {
            DATA if size <= SYNC_DATA_MAX => {
                let mut sink = vec![0u8; size as usize];
                reader.read_exact(&mut sink)?;
            }
            _ => return Ok(()),
        }
    }
}

fn send(
    device: &Mutex<Device>,
    reader: &mut StreamReader,
    writer: &mut StreamWriter,
    spec: &str,
) -> io::Result<bool> {
    let Some((path, mode)) = spec.rsplit_once(',') else {
        fail(writer, "missing , in ID_SEND_V1")?;
        return Ok(false);
    };
    let Some(mode) = parse_mode(mode) else {
        fail(writer, "bad mode")?;
        return Ok(false);
    };
    // adbd copies the user's permission bits to group and others.
    let mut mode = mode & 0o777;
    mode |= (mode >> 3) & 0o070;
    mode |= (mode >> 3) & 0o007;
    let path = device::normalize(path, "/");
    // Check that the file can be created before the data comes, as adbd opens it first.
    let prepared = {
        let mut device = lock(device);
        match device.files.stat(&path) {
            Some(Stat::Directory { .. }) => Err(format!(
                "couldn't create file: {}",
                FsError::IsDirectory.message()
            )),
            _ => match device.files.make_parents(&path) {
                Err(error) => Err(format!("secure_mkdirs failed: {}", error.message())),
                Ok(()) => device
                    .files
                    .write(&path, Vec::new(), mode, device::BOOT_TIME, true)
                    .map_err(|error| format!("couldn't create file: {}", error.message())),
            },
        }
    };
    if let Err(reason) = prepared {
        fail(writer, &reason)?;
        drain_chunks(reader)?;
        return Ok(false);
    }
    match receive_chunks(reader)? {
        Ok((data, mtime)) => {
            let written = lock(device).files.write(&path, data, mode, mtime, true);
            match written {
                Ok(()) => {
                    let mut okay = OKAY.to_le_bytes().to_vec();
                    okay.extend_from_slice(&0u32.to_le_bytes());
                    writer.queue(&okay)?;
                    Ok(true)
                }
                Err(error) => {
                    fail(writer, &format!("write failed: {}", error.message()))?;
                    Ok(false)
                }
            }
        }
        Err(reason) => {
            let _ = lock(device).files.remove(&path, false);
            fail(writer, &reason)?;
            Ok(false)
        }
    }
}

fn recv(device: &Mutex<Device>, writer: &mut StreamWriter, name: &str) -> io::Result<bool> {
    let path = device::normalize(name, "/");
    let data = lock(device).files.read(&path).map(|file| file.data.clone());
    let data = match data {
        Ok(data) => data,
        Err(error) => {
            fail(writer, &format!("open failed: {}", error.message()))?;
            return Ok(false);
        }
    };
    for chunk in data.chunks(RECV_CHUNK) {
        let mut out = DATA.to_le_bytes().to_vec();
        out.extend_from_slice(&u32::try_from(chunk.len()).unwrap_or(0).to_le_bytes());
        out.extend_from_slice(chunk);
        writer.queue(&out)?;
    }
    let mut done = DONE.to_le_bytes().to_vec();
    done.extend_from_slice(&0u32.to_le_bytes());
    writer.queue(&done)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_like_strtoul() {
        assert_eq!(parse_mode("33188"), Some(0o100644));
        assert_eq!(parse_mode("0644"), Some(0o644));
        assert_eq!(parse_mode("0x1a4"), Some(0o644));
        assert_eq!(parse_mode("x"), None);
    }

    #[test]
    fn a_missing_path_stats_as_enoent() {
        let bytes = stat_v2_bytes(STA2, "/nope", None);
        assert_eq!(bytes.len(), 72);
        assert_eq!(&bytes[0..4], b"STA2");
        assert_eq!(
            u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            2
        );
    }
}
