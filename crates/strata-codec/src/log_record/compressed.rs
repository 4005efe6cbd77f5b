//! Records stored compressed: a byte [`COMPRESSED`], the record's length,
//! one zstd frame of it; a zstd context kept per encoder and per reading
//! thread.

use super::LogRecord;
use crate::varint::{put_uvarint, Decbuf};
use crate::CodecError;

/// The first byte of a compressed record.
pub const COMPRESSED: u8 = 0x10;

/// The longest record stored compressed; a longer one is stored as it is,
/// and a compressed one that says it is longer is corrupt (so damage in
/// the length cannot ask for a huge buffer).
pub(super) const MAX_COMPRESSED_RECORD: usize = 64 << 20;

/// zstd's level for records: its fastest but one (`benches/log_record.rs`
/// prints what it takes off a record of node_exporter's values).
const LEVEL: i32 = 1;

/// Encodes records compressed, with a zstd context kept from one record to
/// the next (a context is some hundreds of KiB to set up).
pub struct LogRecordEncoder {
    raw: Vec<u8>,
    zstd: zstd::bulk::Compressor<'static>,
}

impl LogRecordEncoder {
    pub fn new() -> Result<Self, CodecError> {
        let zstd = zstd::bulk::Compressor::new(LEVEL)
            .map_err(|_| CodecError::Corrupt("cannot set up zstd for log records"))?;
        Ok(Self {
            raw: Vec::new(),
            zstd,
        })
    }

    /// Appends `record` to `out`, compressed ([`COMPRESSED`]), or as
    /// [`LogRecord::encode`] writes it if zstd fails or it is longer than
    /// compressed records may be.
    pub fn encode(&mut self, record: &LogRecord, out: &mut Vec<u8>) {
        self.raw.clear();
        record.encode(&mut self.raw);
        let start = out.len();
        if self.raw.len() <= MAX_COMPRESSED_RECORD {
            out.push(COMPRESSED);
            put_uvarint(out, self.raw.len() as u64);
            let header = out.len();
            out.resize(header + zstd::zstd_safe::compress_bound(self.raw.len()), 0);
            if let Some(room) = out.get_mut(header..) {
                if let Ok(n) = self.zstd.compress_to_buffer(&self.raw, room) {
                    out.truncate(header + n);
                    return;
                }
            }
            out.truncate(start);
        }
        out.extend_from_slice(&self.raw);
    }
}

/// Runs `f` on the record a compressed one holds (`bytes` after its
/// [`COMPRESSED`] byte), decompressed into a buffer kept per thread.
pub(super) fn decompressed<R>(
    bytes: &[u8],
    f: impl FnOnce(&[u8]) -> Result<R, CodecError>,
) -> Result<R, CodecError> {
    thread_local! {
        static DECODER: std::cell::RefCell<Option<(zstd::bulk::Decompressor<'static>, Vec<u8>)>> =
            const { std::cell::RefCell::new(None) };
    }
    let mut d = Decbuf::new(bytes);
    let len = d.uvarint();
    d.check()?;
    let frame = d.rest();
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    if len > MAX_COMPRESSED_RECORD {
        return Err(CodecError::Corrupt(
            "compressed log record longer than allowed",
        ));
    }
    DECODER.with(|cell| {
        let mut slot = cell
            .try_borrow_mut()
            .map_err(|_| CodecError::Corrupt("log record decoder in use"))?;
        if slot.is_none() {
            let z = zstd::bulk::Decompressor::new()
                .map_err(|_| CodecError::Corrupt("cannot set up zstd for log records"))?;
            *slot = Some((z, Vec::new()));
        }
        let Some((z, buf)) = slot.as_mut() else {
            return Err(CodecError::Corrupt("cannot set up zstd for log records"));
        };
        buf.clear();
        buf.reserve_exact(len);
        let n = z
            .decompress_to_buffer(frame, buf)
            .map_err(|_| CodecError::Corrupt("compressed log record does not decompress"))?;
        if n != len {
            return Err(CodecError::Corrupt(
                "compressed log record's length does not match its contents",
            ));
        }
        let out = f(buf);
        // A record far larger than usual does not keep its buffer.
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        out
    })
}
