//! Server side: bounded decompression, protobuf decoding and per-series
//! validation of a remote-write body.

use bytes::Bytes;
use prost::Message;

use strata_write::{
    check_labels, metric_kind, DecodedWrite, MetricMetadata, RawLabel, RawLabels, RawSeries,
    RejectedSeries,
};

use crate::raw_labels::labels_from_raw;
use crate::wire::{self, Sample};
use crate::{Encoding, Version, WriteError};
use strata_codec::histogram::HistogramSample;
use strata_codec::{Exemplar, Label};

/// Size limits applied before any large allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Largest accepted compressed body (413 above it).
    pub max_body_bytes: usize,
    /// Largest accepted decompressed length (413 above it): as the snappy
    /// header declares it, checked before the buffer is allocated; for zstd
    /// as the frame header declares it, or else while decoding, which stops
    /// at the limit.
    pub max_decoded_bytes: usize,
}

impl Default for DecodeLimits {
    /// 16 MiB compressed, 128 MiB decoded: far above what Prometheus sends
    /// (its shards cap a request at a few thousand samples), small enough
    /// that a few concurrent requests cannot exhaust a small node.
    fn default() -> Self {
        Self {
            max_body_bytes: 16 << 20,
            max_decoded_bytes: 128 << 20,
        }
    }
}

/// Decodes and validates a snappy-compressed request body of `version`
/// ([`decode_encoded`] for zstd).
///
/// Whole-request problems are errors (413 for sizes, 400 for corrupt snappy,
/// bad protobuf or a malformed 2.0 symbols table). Series-level problems go
/// to [`DecodedWrite::rejected`]. Native histograms are kept with their
/// series; one failing [`HistogramSample::validate`] is refused alone,
/// with a rejection entry naming its series and the problem. Series with
/// neither float samples nor histograms are valid, kept if they carry
/// valid exemplars and omitted otherwise. Invalid exemplars are dropped and counted
/// ([`DecodedWrite::exemplars_dropped`]), never an error.
pub fn decode(
    version: Version,
    body: &[u8],
    limits: &DecodeLimits,
) -> Result<DecodedWrite, WriteError> {
    decode_encoded(version, Encoding::Snappy, body, limits)
}

/// [`decode`] for a body compressed with `encoding`.
pub fn decode_encoded(
    version: Version,
    encoding: Encoding,
    body: &[u8],
    limits: &DecodeLimits,
) -> Result<DecodedWrite, WriteError> {
    decode_raw(version, encoding, body, limits).map(DecodedWrite::into_owned)
}

/// [`decode_encoded`], with labels left as slices of the decompressed body:
/// no allocation per label, for a server that builds owned labels only for
/// series it has not seen.
pub fn decode_raw(
    version: Version,
    encoding: Encoding,
    body: &[u8],
    limits: &DecodeLimits,
) -> Result<DecodedWrite<RawSeries>, WriteError> {
    let raw = match encoding {
        Encoding::Snappy => decompress(body, limits)?,
        Encoding::Zstd => decompress_zstd(body, limits)?,
    };
    decode_protobuf_bytes(version, Bytes::from(raw))
}

/// Refuses a body over `max_body_bytes`.
fn check_body_size(body: &[u8], limits: &DecodeLimits) -> Result<(), WriteError> {
    if body.len() > limits.max_body_bytes {
        return Err(WriteError::BodyTooLarge {
            size: body.len(),
            limit: limits.max_body_bytes,
        });
    }
    Ok(())
}

/// Checks the size limits and decompresses a zstd body (one frame or
/// several). A frame header that declares a size over `max_decoded_bytes`
/// is refused before anything is allocated; otherwise decoding stops one
/// byte past the limit, so a small bomb costs at most the limit.
pub fn decompress_zstd(body: &[u8], limits: &DecodeLimits) -> Result<Vec<u8>, WriteError> {
    use std::io::Read as _;
    check_body_size(body, limits)?;
    let limit = limits.max_decoded_bytes;
    let too_large = || WriteError::ZstdTooLarge { limit };
    let declared = zstd::zstd_safe::get_frame_content_size(body).ok().flatten();
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let decoder =
        zstd::stream::read::Decoder::with_buffer(body).map_err(WriteError::CorruptZstd)?;
    // The declared size of the first frame, or a guess from a typical
    // ratio; the vector grows past it if needed, up to the limit.
    let guess = declared.map_or(body.len().saturating_mul(4), |n| n as usize);
    let mut out = Vec::with_capacity(guess.min(limit));
    decoder
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(WriteError::CorruptZstd)?;
    if out.len() > limit {
        return Err(too_large());
    }
    Ok(out)
}

/// Checks the size limits and decompresses a snappy block-format body. The
/// declared length is checked against `max_decoded_bytes` before the output
/// buffer is allocated.
pub fn decompress(body: &[u8], limits: &DecodeLimits) -> Result<Vec<u8>, WriteError> {
    check_body_size(body, limits)?;
    // The header is a varint; read it here too, so a length beyond what
    // the snappy crate can represent (4 GiB and up) is still "too large".
    if let Some(declared) = declared_len(body) {
        if declared > limits.max_decoded_bytes as u64 {
            return Err(WriteError::DecodedTooLarge {
                declared: usize::try_from(declared).unwrap_or(usize::MAX),
                limit: limits.max_decoded_bytes,
            });
        }
    }
    let declared = snap::raw::decompress_len(body).map_err(WriteError::CorruptSnappy)?;
    if declared > limits.max_decoded_bytes {
        return Err(WriteError::DecodedTooLarge {
            declared,
            limit: limits.max_decoded_bytes,
        });
    }
    let mut out = vec![0; declared];
    let written = snap::raw::Decoder::new()
        .decompress(body, &mut out)
        .map_err(WriteError::CorruptSnappy)?;
    out.truncate(written);
    Ok(out)
}

/// The decoded length a snappy block declares in its varint header.
fn declared_len(body: &[u8]) -> Option<u64> {
    let mut len = 0u64;
    for (i, &b) in body.iter().take(10).enumerate() {
        len |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(len);
        }
    }
    None
}

/// Decodes and validates an uncompressed protobuf body of `version`.
pub fn decode_protobuf(version: Version, raw: &[u8]) -> Result<DecodedWrite, WriteError> {
    decode_protobuf_bytes(version, Bytes::copy_from_slice(raw)).map(DecodedWrite::into_owned)
}

fn decode_protobuf_bytes(
    version: Version,
    raw: Bytes,
) -> Result<DecodedWrite<RawSeries>, WriteError> {
    if version == Version::V1 {
        if let Some(decoded) = crate::fast_v1::decode(&raw) {
            return Ok(decoded);
        }
    }
    decode_protobuf_prost(version, raw)
}

/// The general decoder: every request, every error.
pub(crate) fn decode_protobuf_prost(
    version: Version,
    raw: Bytes,
) -> Result<DecodedWrite<RawSeries>, WriteError> {
    let protobuf = |source| WriteError::Protobuf {
        message: version.proto_message(),
        source,
    };
    match version {
        Version::V1 => Ok(from_v1(
            wire::v1::WriteRequest::decode(raw).map_err(protobuf)?,
        )),
        Version::V2 => from_v2(wire::v2::Request::decode(raw).map_err(protobuf)?),
    }
}

fn from_v1(req: wire::v1::WriteRequest) -> DecodedWrite<RawSeries> {
    let mut out = DecodedWrite::new(req.timeseries.len());
    // Entries with a name that is not UTF-8 are dropped; help and unit are
    // read leniently, as they are only shown.
    out.metadata = req
        .metadata
        .into_iter()
        .filter_map(|m| {
            let metric = std::str::from_utf8(&m.metric_family_name).ok()?;
            (!metric.is_empty()).then(|| MetricMetadata {
                metric: metric.to_owned(),
                kind: metric_kind(m.r#type),
                help: String::from_utf8_lossy(&m.help).into_owned(),
                unit: String::from_utf8_lossy(&m.unit).into_owned(),
            })
        })
        .collect();
    for wire::v1::TimeSeries {
        labels,
        samples,
        exemplars,
        histograms,
    } in req.timeseries
    {
        out.exemplars += exemplars.len();
        match labels_from_raw(labels) {
            Ok(mut labels) => {
                let checked = check_labels(&mut labels);
                let exemplars = exemplars.into_iter().map(crate::exemplar::from_v1);
                let histograms = histograms
                    .iter()
                    .map(|h| (h.timestamp, h.to_sample()))
                    .collect();
                accept(&mut out, labels, checked, samples, histograms, exemplars);
            }
            Err((rendered, problem)) => {
                out.histograms += histograms.len();
                out.exemplars_dropped += exemplars.len();
                out.rejected.push(RejectedSeries {
                    labels: rendered,
                    samples: samples.len() + histograms.len(),
                    reason: problem,
                });
            }
        }
    }
    out
}

fn from_v2(req: wire::v2::Request) -> Result<DecodedWrite<RawSeries>, WriteError> {
    match req.symbols.first() {
        Some(first) if !first.is_empty() => {
            return Err(WriteError::InvalidSymbols(format!(
                "symbols[0] must be the empty string, got {:?}",
                String::from_utf8_lossy(first)
            )))
        }
        None if !req.timeseries.is_empty() => {
            return Err(WriteError::InvalidSymbols(
                "the table is empty but series reference it; it must start with the empty string"
                    .to_owned(),
            ))
        }
        _ => {}
    }
    // Invalid UTF-8 in a symbol rejects only the series that reference it.
    let symbols: Vec<Option<&Bytes>> = req
        .symbols
        .iter()
        .map(|s| std::str::from_utf8(s).is_ok().then_some(s))
        .collect();
    let symbols = Symbols(&symbols);

    let mut out = DecodedWrite::new(req.timeseries.len());
    // Series of one metric carry the same metadata: keep one entry.
    let mut seen = std::collections::HashSet::new();
    for wire::v2::TimeSeries {
        labels_refs,
        samples,
        histograms,
        exemplars,
        metadata,
    } in req.timeseries
    {
        out.exemplars += exemplars.len();
        let (labels, checked) = match symbols.labels(&labels_refs) {
            Ok(mut labels) => {
                let checked = check_labels(&mut labels)
                    .and_then(|()| metadata.map_or(Ok(()), |m| symbols.metadata(&m)));
                (labels, checked)
            }
            Err((partial, problem)) => (partial, Err(problem)),
        };
        if let (Ok(()), Some(m)) = (&checked, &metadata) {
            if let Some(entry) = symbols.metric_metadata(&labels, m) {
                if !seen.contains(&entry) {
                    seen.insert(entry.clone());
                    out.metadata.push(entry);
                }
            }
        }
        let exemplars = exemplars.into_iter().map(|e| symbols.exemplar(&e));
        let histograms = histograms
            .iter()
            .map(|h| (h.timestamp, h.to_sample()))
            .collect();
        accept(&mut out, labels, checked, samples, histograms, exemplars);
    }
    Ok(out)
}

/// Files one series of a request under `out.series` or `out.rejected`,
/// its histograms of schemas 9 to 52 first reduced to schema 8 as
/// Prometheus reduces them. `exemplars` are read only if the series is
/// kept.
fn accept(
    out: &mut DecodedWrite<RawSeries>,
    labels: RawLabels,
    checked: Result<(), String>,
    samples: Vec<Sample>,
    mut histograms: Vec<(i64, HistogramSample)>,
    exemplars: impl ExactSizeIterator<Item = Result<Exemplar, String>>,
) {
    // Same size and alignment: this collect reuses the decoded buffer.
    let samples = samples
        .into_iter()
        .map(|s| (s.timestamp, s.value))
        .collect();
    histograms
        .iter_mut()
        .for_each(|(_, h)| crate::histogram::reduce_resolution(h));
    out.push_series(labels, checked, samples, histograms, exemplars);
}

/// A 2.0 symbols table, each entry `None` when it is not UTF-8.
struct Symbols<'a>(&'a [Option<&'a Bytes>]);

impl Symbols<'_> {
    fn get(&self, reference: u32, what: impl Fn() -> String) -> Result<&Bytes, String> {
        match self.0.get(reference as usize) {
            Some(Some(s)) => Ok(s),
            Some(None) => Err(format!(
                "{} refers to symbol {reference}, which is not valid UTF-8",
                what()
            )),
            None => Err(format!(
                "{} refers to symbol {reference}, out of range: the symbols table has {} entries",
                what(),
                self.0.len()
            )),
        }
    }

    /// Resolves `labels_refs`; on failure returns the labels resolved so far
    /// (to name the series) and the problem.
    fn labels(&self, refs: &[u32]) -> Result<RawLabels, (RawLabels, String)> {
        let mut labels = RawLabels(Vec::with_capacity(refs.len() / 2));
        for (i, pair) in refs.chunks_exact(2).enumerate() {
            let &[name_ref, value_ref] = pair else {
                continue;
            };
            let resolved = self
                .get(name_ref, || {
                    format!("labels_refs[{}] (a label name)", 2 * i)
                })
                .and_then(|name| {
                    let value = self.get(value_ref, || {
                        format!(
                            "labels_refs[{}] (the value of label {:?})",
                            2 * i + 1,
                            String::from_utf8_lossy(name)
                        )
                    })?;
                    RawLabel::new(name.clone(), value.clone())
                        .ok_or_else(|| "a symbol is not valid UTF-8".to_owned())
                });
            match resolved {
                Ok(label) => labels.0.push(label),
                Err(problem) => return Err((labels, problem)),
            }
        }
        if refs.len() % 2 != 0 {
            return Err((
                labels,
                format!("labels_refs has an odd length ({})", refs.len()),
            ));
        }
        Ok(labels)
    }

    /// The metadata of a valid series, if it says anything.
    fn metric_metadata(
        &self,
        labels: &RawLabels,
        m: &crate::proto::v2::Metadata,
    ) -> Option<MetricMetadata> {
        let text = |r: u32| {
            self.0
                .get(r as usize)
                .copied()
                .flatten()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let (help, unit) = (text(m.help_ref), text(m.unit_ref));
        if m.r#type == 0 && help.is_empty() && unit.is_empty() {
            return None;
        }
        let name = labels.0.iter().find(|l| l.name() == "__name__")?;
        Some(MetricMetadata {
            metric: name.value().to_owned(),
            kind: metric_kind(m.r#type),
            help,
            unit,
        })
    }

    /// Resolves an exemplar's `labels_refs`, or says why it cannot.
    fn exemplar(&self, e: &wire::v2::Exemplar) -> Result<Exemplar, String> {
        let refs = &e.labels_refs;
        if refs.len() % 2 != 0 {
            return Err(format!(
                "exemplar labels_refs has an odd length ({})",
                refs.len()
            ));
        }
        let mut labels = Vec::with_capacity(refs.len() / 2);
        for (i, pair) in refs.chunks_exact(2).enumerate() {
            let &[name_ref, value_ref] = pair else {
                continue;
            };
            let name = self.get(name_ref, || {
                format!("exemplar labels_refs[{}] (a label name)", 2 * i)
            })?;
            let name = String::from_utf8_lossy(name);
            let value = self.get(value_ref, || {
                format!(
                    "exemplar labels_refs[{}] (the value of label {name:?})",
                    2 * i + 1
                )
            })?;
            // Both are UTF-8 (checked when the table was read): these
            // conversions copy without replacing anything.
            labels.push(Label::new(name, String::from_utf8_lossy(value)));
        }
        Ok(Exemplar {
            labels,
            t: e.timestamp,
            v: e.value,
        })
    }

    fn metadata(&self, m: &crate::proto::v2::Metadata) -> Result<(), String> {
        self.get(m.help_ref, || "metadata help_ref".to_owned())?;
        self.get(m.unit_ref, || "metadata unit_ref".to_owned())?;
        Ok(())
    }
}
