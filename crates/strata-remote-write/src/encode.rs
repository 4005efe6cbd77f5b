//! Client side: protobuf + snappy encoding, and a 2.0 request builder.

use prost::Message;
use rustc_hash::FxHashMap;
use strata_codec::histogram::HistogramSample;
use strata_codec::{Exemplar, Label};

use crate::proto::{v1, v2};

/// Encodes a 1.0 request as a remote-write body (protobuf, then snappy block
/// format), replacing the contents of `out`.
///
/// # Panics
/// If the protobuf encoding exceeds snappy's block limit (about 4 GiB).
pub fn encode_v1(req: &v1::WriteRequest, out: &mut Vec<u8>) {
    Encoder::new().encode_v1(req, out);
}

/// Encodes a 2.0 request as a remote-write body (protobuf, then snappy block
/// format), replacing the contents of `out`.
///
/// # Panics
/// If the protobuf encoding exceeds snappy's block limit (about 4 GiB).
pub fn encode_v2(req: &v2::Request, out: &mut Vec<u8>) {
    Encoder::new().encode_v2(req, out);
}

/// Encodes requests with reused buffers: keep one per sending task.
pub struct Encoder {
    protobuf: Vec<u8>,
    snappy: snap::raw::Encoder,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    pub fn new() -> Self {
        Self {
            protobuf: Vec::new(),
            snappy: snap::raw::Encoder::new(),
        }
    }

    /// As [`encode_v1`], without allocating once the buffers are warm.
    pub fn encode_v1(&mut self, req: &v1::WriteRequest, out: &mut Vec<u8>) {
        self.protobuf.clear();
        req.encode_raw(&mut self.protobuf);
        self.compress(out);
    }

    /// As [`encode_v2`], without allocating once the buffers are warm.
    pub fn encode_v2(&mut self, req: &v2::Request, out: &mut Vec<u8>) {
        self.protobuf.clear();
        req.encode_raw(&mut self.protobuf);
        self.compress(out);
    }

    fn compress(&mut self, out: &mut Vec<u8>) {
        out.clear();
        out.resize(snap::raw::max_compress_len(self.protobuf.len()), 0);
        match self.snappy.compress(&self.protobuf, out) {
            Ok(n) => out.truncate(n),
            Err(e) => panic!(
                "cannot snappy-compress a {}-byte request: {e}",
                self.protobuf.len()
            ),
        }
    }
}

/// Builds a 2.0 request from labels and float samples, interning every
/// string once in the symbols table (which starts with `""`, as the
/// specification requires).
///
/// ```
/// use strata_codec::Label;
/// use strata_remote_write::{decode, encode_v2, DecodeLimits, V2RequestBuilder, Version};
///
/// let mut builder = V2RequestBuilder::new();
/// let labels = [Label::new("__name__", "up"), Label::new("job", "node")];
/// builder.add_series(&labels, &[(1_000, 1.0)]);
/// let mut body = Vec::new();
/// encode_v2(&builder.build(), &mut body);
/// let decoded = decode(Version::V2, &body, &DecodeLimits::default()).unwrap();
/// assert_eq!(decoded.series[0].labels, labels);
/// ```
#[derive(Clone, Debug)]
pub struct V2RequestBuilder {
    symbols: Vec<String>,
    index: FxHashMap<String, u32>,
    timeseries: Vec<v2::TimeSeries>,
}

impl Default for V2RequestBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl V2RequestBuilder {
    pub fn new() -> Self {
        let mut index = FxHashMap::default();
        index.insert(String::new(), 0);
        Self {
            symbols: vec![String::new()],
            index,
            timeseries: Vec::new(),
        }
    }

    /// The reference of `s` in the symbols table, adding it if new.
    pub fn symbol(&mut self, s: &str) -> u32 {
        if let Some(&r) = self.index.get(s) {
            return r;
        }
        // A table of 4 billion symbols cannot fit in a request anyway.
        let r = u32::try_from(self.symbols.len()).unwrap_or(u32::MAX);
        self.symbols.push(s.to_owned());
        self.index.insert(s.to_owned(), r);
        r
    }

    /// Adds a series of float samples, `(timestamp ms, value)`. The labels
    /// are sent in the order given: keep them sorted by name.
    pub fn add_series(&mut self, labels: &[Label], samples: &[(i64, f64)]) -> &mut Self {
        self.add_series_with_exemplars(labels, samples, &[])
    }

    /// [`Self::add_series`] with exemplars, sent in the order given.
    pub fn add_series_with_exemplars(
        &mut self,
        labels: &[Label],
        samples: &[(i64, f64)],
        exemplars: &[Exemplar],
    ) -> &mut Self {
        self.add_series_with_histograms(labels, samples, &[], exemplars)
    }

    /// [`Self::add_series_with_exemplars`] with native histogram samples
    /// `(timestamp ms, histogram)`, sent in the order given.
    pub fn add_series_with_histograms(
        &mut self,
        labels: &[Label],
        samples: &[(i64, f64)],
        histograms: &[(i64, HistogramSample)],
        exemplars: &[Exemplar],
    ) -> &mut Self {
        let mut labels_refs = Vec::with_capacity(labels.len() * 2);
        for label in labels {
            labels_refs.push(self.symbol(&label.name));
            labels_refs.push(self.symbol(&label.value));
        }
        let samples = samples
            .iter()
            .map(|&(timestamp, value)| v2::Sample {
                value,
                timestamp,
                start_timestamp: 0,
            })
            .collect();
        let exemplars = exemplars.iter().map(|e| self.exemplar(e)).collect();
        let histograms = histograms
            .iter()
            .map(|(t, h)| v2::Histogram::from_sample(*t, h))
            .collect();
        self.timeseries.push(v2::TimeSeries {
            labels_refs,
            samples,
            histograms,
            exemplars,
            ..Default::default()
        });
        self
    }

    /// The wire form of `e`, its labels interned in the symbols table in
    /// their order, for [`Self::push_series`]. The derived proto3 encoding
    /// sends a -0.0 value as +0.0.
    pub fn exemplar(&mut self, e: &Exemplar) -> v2::Exemplar {
        let mut labels_refs = Vec::with_capacity(e.labels.len() * 2);
        for label in &e.labels {
            labels_refs.push(self.symbol(&label.name));
            labels_refs.push(self.symbol(&label.value));
        }
        v2::Exemplar {
            labels_refs,
            value: e.v,
            timestamp: e.t,
        }
    }

    /// Adds a fully built series whose references were made with
    /// [`Self::symbol`] (for histograms, exemplars or metadata).
    pub fn push_series(&mut self, series: v2::TimeSeries) -> &mut Self {
        self.timeseries.push(series);
        self
    }

    /// The number of series added so far.
    pub fn len(&self) -> usize {
        self.timeseries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timeseries.is_empty()
    }

    /// The request, consuming the builder.
    pub fn build(self) -> v2::Request {
        v2::Request {
            symbols: self.symbols,
            timeseries: self.timeseries,
        }
    }

    /// The request so far, leaving the builder empty for the next one.
    pub fn take(&mut self) -> v2::Request {
        std::mem::take(self).build()
    }
}
