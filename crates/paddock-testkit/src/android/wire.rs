//! The adb transport's message format (AOSP `protocol.md`): a 24-byte little-endian header of
//! six 32-bit words — command, arg0, arg1, payload length, payload checksum, magic — followed
//! by the payload.

use std::io::{self, Read, Write};

/// `CNXN`: the connection handshake.
pub const A_CNXN: u32 = 0x4e58_4e43;
/// `AUTH`: the RSA challenge this device never sends (it behaves as `ro.adb.secure=0`).
pub const A_AUTH: u32 = 0x4854_5541;
/// `OPEN`: the host opens a stream to a named service.
pub const A_OPEN: u32 = 0x4e45_504f;
/// `OKAY`: a stream is ready (after OPEN), or the last WRTE was taken.
pub const A_OKAY: u32 = 0x5941_4b4f;
/// `CLSE`: a stream is closed, or an OPEN failed.
pub const A_CLSE: u32 = 0x4553_4c43;
/// `WRTE`: stream data.
pub const A_WRTE: u32 = 0x4554_5257;
/// `STLS`: the TLS upgrade of wireless debugging, which this device never asks for.
pub const A_STLS: u32 = 0x534c_5453;

/// The protocol version an Android 11 adbd speaks: the one after which checksums are skipped.
pub const A_VERSION: u32 = 0x0100_0001;
/// The largest payload this device accepts and offers in its CNXN. Android 11's adbd offers
/// 1 MiB; the brief for this fake asks for 256 KiB, which every host since 2016 accepts too.
pub const DEVICE_MAX_PAYLOAD: u32 = 256 * 1024;
/// The largest payload read from a host before the handshake settles it: hosts older than
/// 2016 send 4 KiB, newer ones announce up to 1 MiB in their CNXN.
pub const READ_LIMIT: u32 = 1024 * 1024;

/// One transport message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub command: u32,
    pub arg0: u32,
    pub arg1: u32,
    pub payload: Vec<u8>,
}

/// Why a message could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("the host closed the connection")]
    Closed,
    #[error("reading from the host failed: {0}")]
    Io(#[from] io::Error),
    #[error("header magic `{magic:#010x}` does not match command `{command:#010x}`")]
    BadMagic { command: u32, magic: u32 },
    #[error("payload of {length} bytes is over the limit of {limit}")]
    TooLong { length: u32, limit: u32 },
}

/// The checksum the header carries: the sum of the payload's bytes (the field is named
/// `data_crc32` in the docs, but adb has always summed bytes).
pub fn checksum(payload: &[u8]) -> u32 {
    payload
        .iter()
        .fold(0u32, |sum, byte| sum.wrapping_add(u32::from(*byte)))
}

impl Packet {
    pub fn new(command: u32, arg0: u32, arg1: u32, payload: Vec<u8>) -> Self {
        Self {
            command,
            arg0,
            arg1,
            payload,
        }
    }

    /// The header and payload as they go on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(24 + self.payload.len());
        // Payloads are bounded by the negotiated maximum (at most 1 MiB), so the length fits.
        let length = u32::try_from(self.payload.len()).unwrap_or(u32::MAX);
        for word in [
            self.command,
            self.arg0,
            self.arg1,
            length,
            checksum(&self.payload),
            self.command ^ 0xffff_ffff,
        ] {
            bytes.extend_from_slice(&word.to_le_bytes());
        }
        bytes.extend_from_slice(&self.payload);
        bytes
    }

    pub fn write_to(&self, writer: &mut impl Write) -> io::Result<()> {
        writer.write_all(&self.encode())?;
        writer.flush()
    }

    /// Reads one message. The checksum is not verified: since protocol version 0x01000001
    /// neither side checks it, and an Android 11 adbd does not either.
    pub fn read_from(reader: &mut impl Read, limit: u32) -> Result<Self, WireError> {
        let mut header = [0u8; 24];
        if let Err(error) = reader.read_exact(&mut header) {
            return Err(match error.kind() {
                io::ErrorKind::UnexpectedEof => WireError::Closed,
                _ => WireError::Io(error),
            });
        }
        let word = |index: usize| {
            let mut bytes = [0u8; 4];
            bytes.copy_from_slice(&header[index * 4..index * 4 + 4]);
            u32::from_le_bytes(bytes)
        };
        let (command, arg0, arg1, length, magic) = (word(0), word(1), word(2), word(3), word(5));
        if magic != command ^ 0xffff_ffff {
            return Err(WireError::BadMagic { command, magic });
        }
        if length > limit {
            return Err(WireError::TooLong { length, limit });
        }
        let mut payload = vec![0u8; length as usize];
        reader
            .read_exact(&mut payload)
            .map_err(|error| match error.kind() {
                io::ErrorKind::UnexpectedEof => WireError::Closed,
                _ => WireError::Io(error),
            })?;
        Ok(Self {
            command,
            arg0,
            arg1,
            payload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_round_trips_with_its_checksum_and_magic() {
        let packet = Packet::new(A_WRTE, 7, 9, b"hello".to_vec());
        let bytes = packet.encode();
        assert_eq!(&bytes[0..4], b"WRTE");
        assert_eq!(
            u32::from_le_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]),
            u32::from(b'h') + u32::from(b'e') + 2 * u32::from(b'l') + u32::from(b'o')
        );
        let read = Packet::read_from(&mut bytes.as_slice(), READ_LIMIT).ok();
        assert_eq!(read, Some(packet));
    }

    #[test]
    fn a_bad_magic_is_refused() {
        let mut bytes = Packet::new(A_OKAY, 1, 2, Vec::new()).encode();
        bytes[20] ^= 1;
        assert!(matches!(
            Packet::read_from(&mut bytes.as_slice(), READ_LIMIT),
            Err(WireError::BadMagic { .. })
        ));
    }
}
