//! A record read back, plain or compressed; any damage is an error.

use super::compressed::decompressed;
use super::{
    LogExemplar, LogHistogram, LogRecord, LogSample, NewSeries, COMPRESSED, CRC_LEN, VERSION,
    VERSION_EXEMPLARS, VERSION_HISTOGRAMS,
};
use crate::exemplar::Exemplar;
use crate::histogram::decode_sample;
use crate::labels::Label;
use crate::varint::{unzigzag, Decbuf};
use crate::CodecError;

impl LogRecord {
    /// Decodes a record written by [`encode`](Self::encode). Any damage
    /// (truncation, flipped bits, trailing bytes) is an error.
    pub fn decode(bytes: &[u8]) -> Result<LogRecord, CodecError> {
        if bytes.first() == Some(&COMPRESSED) {
            return decompressed(bytes.get(1..).unwrap_or_default(), Self::decode_plain);
        }
        Self::decode_plain(bytes)
    }

    /// Decodes a record as [`encode`](Self::encode) writes it.
    fn decode_plain(bytes: &[u8]) -> Result<LogRecord, CodecError> {
        let (&version, _) = bytes.split_first().ok_or(CodecError::Truncated)?;
        if !matches!(version, VERSION | VERSION_EXEMPLARS | VERSION_HISTOGRAMS) {
            return Err(CodecError::BadVersion(version));
        }
        let (covered, crc) = bytes
            .split_last_chunk::<CRC_LEN>()
            .ok_or(CodecError::Truncated)?;
        let Some((_, body)) = covered.split_first() else {
            return Err(CodecError::Truncated);
        };
        if crc32fast::hash(covered) != u32::from_be_bytes(*crc) {
            return Err(CodecError::BadChecksum);
        }

        let mut d = Decbuf::new(body);
        // Each series takes at least 2 bytes (id, label count).
        let n_series = d.length_prefix(2);
        let mut new_series = Vec::with_capacity(n_series);
        let mut id = 0u64;
        for _ in 0..n_series {
            id = id.wrapping_add(unzigzag(d.uvarint()) as u64);
            // Each label takes at least 2 bytes (two lengths).
            let n_labels = d.length_prefix(2);
            let mut labels = Vec::with_capacity(n_labels);
            for _ in 0..n_labels {
                let name = d.string();
                let value = d.string();
                labels.push(Label { name, value });
            }
            if d.err().is_some() {
                break;
            }
            new_series.push(NewSeries { id, labels });
        }

        // Each sample takes at least 3 bytes (series, time, value).
        let n_samples = d.length_prefix(3);
        let mut samples = Vec::with_capacity(n_samples);
        let (mut series, mut t) = (0u64, 0i64);
        for _ in 0..n_samples {
            series = series.wrapping_add(unzigzag(d.uvarint()) as u64);
            let (dt, is_int) = d.uvarint_flagged();
            t = t.wrapping_add(unzigzag(dt));
            let v = if is_int {
                unzigzag(d.uvarint()) as f64
            } else {
                f64::from_bits(d.be_u64())
            };
            if d.err().is_some() {
                break;
            }
            samples.push(LogSample { series, t, v });
        }

        let mut exemplars = Vec::new();
        if version != VERSION {
            // Each takes at least 11 bytes (series, time, value, labels).
            let n = d.length_prefix(11);
            exemplars.reserve(n);
            let (mut series, mut t) = (0u64, 0i64);
            for _ in 0..n {
                series = series.wrapping_add(unzigzag(d.uvarint()) as u64);
                let exemplar = Exemplar::decode(&mut d, t);
                if d.err().is_some() {
                    break;
                }
                t = exemplar.t;
                exemplars.push(LogExemplar { series, exemplar });
            }
        }

        let mut histograms = Vec::new();
        if version == VERSION_HISTOGRAMS {
            // Each takes at least 3 bytes (series, time, a stale flags byte).
            let n = d.length_prefix(3);
            histograms.reserve(n);
            let (mut series, mut t) = (0u64, 0i64);
            for _ in 0..n {
                series = series.wrapping_add(unzigzag(d.uvarint()) as u64);
                t = t.wrapping_add(unzigzag(d.uvarint()));
                if d.err().is_some() {
                    break;
                }
                match decode_sample(&mut d) {
                    Ok(h) => histograms.push(LogHistogram { series, t, h }),
                    Err(e) => {
                        d.fail(e);
                        break;
                    }
                }
            }
        }

        if d.remaining() != 0 {
            d.fail(CodecError::Corrupt("trailing bytes in log record"));
        }
        d.finish()?;
        Ok(LogRecord {
            new_series,
            samples,
            exemplars,
            histograms,
        })
    }
}
