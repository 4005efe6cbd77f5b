//! The two forms of a native histogram sample.

/// The schema of custom bucket bounds ("native histograms with custom
/// buckets", NHCB): bucket `i` ends at `custom_values[i]`, the last at +Inf.
pub const CUSTOM_BUCKETS_SCHEMA: i32 = -53;

/// The coarsest exponential schema: bucket bounds grow by `2^16` per bucket.
pub const MIN_EXP_SCHEMA: i32 = -4;

/// The finest exponential schema: bucket bounds grow by `2^(2^-8)`.
pub const MAX_EXP_SCHEMA: i32 = 8;

/// Bits of Prometheus' stale marker, a NaN that no arithmetic produces. A
/// histogram whose `sum` has exactly these bits marks its series stale.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// A run of consecutive buckets: `offset` is the index of its first bucket
/// relative to the end of the previous span (for the first span, relative to
/// index 0), `length` the number of buckets in it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub offset: i32,
    pub length: u32,
}

impl Span {
    pub const fn new(offset: i32, length: u32) -> Self {
        Self { offset, length }
    }
}

/// What the producer of a sample knows about a counter reset before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CounterResetHint {
    /// Not known; detect by comparing with the previous sample.
    #[default]
    Unknown,
    /// The counters reset right before this sample.
    Reset,
    /// The counters did not reset.
    NotReset,
    /// A gauge histogram: counts go up and down, resets do not apply.
    Gauge,
}

/// A native histogram sample with integer counts, as remote write carries
/// it. Bucket counts are deltas: the first bucket of each side holds its
/// count, every later one the difference to the bucket before it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// -4..=8 for exponential buckets, [`CUSTOM_BUCKETS_SCHEMA`] for custom.
    pub schema: i32,
    /// Observations with an absolute value up to this land in the zero bucket.
    pub zero_threshold: f64,
    pub zero_count: u64,
    /// All observations, NaN ones included.
    pub count: u64,
    pub sum: f64,
    pub positive_spans: Vec<Span>,
    pub positive_buckets: Vec<i64>,
    pub negative_spans: Vec<Span>,
    pub negative_buckets: Vec<i64>,
    /// Upper bounds of the custom buckets, only with schema -53.
    pub custom_values: Vec<f64>,
    pub counter_reset_hint: CounterResetHint,
}

/// A native histogram sample with absolute `f64` counts: what rate(),
/// sum() and friends compute with, and what some producers send.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FloatHistogram {
    pub schema: i32,
    pub zero_threshold: f64,
    pub zero_count: f64,
    pub count: f64,
    pub sum: f64,
    pub positive_spans: Vec<Span>,
    pub positive_buckets: Vec<f64>,
    pub negative_spans: Vec<Span>,
    pub negative_buckets: Vec<f64>,
    pub custom_values: Vec<f64>,
    pub counter_reset_hint: CounterResetHint,
}

impl Histogram {
    /// A stale marker: no buckets, and the stale NaN as its sum. Chunks and
    /// log records store a stale sample as this, whatever else it held.
    pub fn stale_marker() -> Self {
        Self {
            sum: f64::from_bits(STALE_NAN_BITS),
            ..Self::default()
        }
    }

    /// Whether the sum is Prometheus' stale marker, bit for bit.
    pub fn is_stale(&self) -> bool {
        self.sum.to_bits() == STALE_NAN_BITS
    }

    /// Whether the schema is [`CUSTOM_BUCKETS_SCHEMA`].
    pub fn uses_custom_buckets(&self) -> bool {
        self.schema == CUSTOM_BUCKETS_SCHEMA
    }

    /// Equality with every `f64` compared bit for bit (so a NaN sum equals
    /// the same NaN): for spotting a re-sent duplicate and for tests.
    pub fn bit_eq(&self, other: &Self) -> bool {
        self.schema == other.schema
            && self.zero_threshold.to_bits() == other.zero_threshold.to_bits()
            && self.zero_count == other.zero_count
            && self.count == other.count
            && self.sum.to_bits() == other.sum.to_bits()
            && self.positive_spans == other.positive_spans
            && self.positive_buckets == other.positive_buckets
            && self.negative_spans == other.negative_spans
            && self.negative_buckets == other.negative_buckets
            && bits_eq(&self.custom_values, &other.custom_values)
            && self.counter_reset_hint == other.counter_reset_hint
    }

    /// The float form: bucket deltas summed into absolute counts. Exact for
    /// counts up to 2^53.
    pub fn to_float(&self) -> FloatHistogram {
        FloatHistogram {
            schema: self.schema,
            zero_threshold: self.zero_threshold,
            zero_count: self.zero_count as f64,
            count: self.count as f64,
            sum: self.sum,
            positive_spans: self.positive_spans.clone(),
            positive_buckets: absolute(&self.positive_buckets),
            negative_spans: self.negative_spans.clone(),
            negative_buckets: absolute(&self.negative_buckets),
            custom_values: self.custom_values.clone(),
            counter_reset_hint: self.counter_reset_hint,
        }
    }
}

impl From<&Histogram> for FloatHistogram {
    fn from(h: &Histogram) -> Self {
        h.to_float()
    }
}

impl FloatHistogram {
    /// A stale marker: no buckets, and the stale NaN as its sum.
    pub fn stale_marker() -> Self {
        Self {
            sum: f64::from_bits(STALE_NAN_BITS),
            ..Self::default()
        }
    }

    /// Whether the sum is Prometheus' stale marker, bit for bit.
    pub fn is_stale(&self) -> bool {
        self.sum.to_bits() == STALE_NAN_BITS
    }

    /// Whether the schema is [`CUSTOM_BUCKETS_SCHEMA`].
    pub fn uses_custom_buckets(&self) -> bool {
        self.schema == CUSTOM_BUCKETS_SCHEMA
    }

    /// Equality with every `f64` compared bit for bit.
    pub fn bit_eq(&self, other: &Self) -> bool {
        self.schema == other.schema
            && self.zero_threshold.to_bits() == other.zero_threshold.to_bits()
            && self.zero_count.to_bits() == other.zero_count.to_bits()
            && self.count.to_bits() == other.count.to_bits()
            && self.sum.to_bits() == other.sum.to_bits()
            && self.positive_spans == other.positive_spans
            && bits_eq(&self.positive_buckets, &other.positive_buckets)
            && self.negative_spans == other.negative_spans
            && bits_eq(&self.negative_buckets, &other.negative_buckets)
            && bits_eq(&self.custom_values, &other.custom_values)
            && self.counter_reset_hint == other.counter_reset_hint
    }
}

/// Absolute counts from deltas; the running sum wraps rather than panics on
/// nonsense input (which [`Histogram::validate`] rejects).
fn absolute(deltas: &[i64]) -> Vec<f64> {
    let mut acc = 0i64;
    deltas
        .iter()
        .map(|&d| {
            acc = acc.wrapping_add(d);
            acc as f64
        })
        .collect()
}

fn bits_eq(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// One native histogram sample as a sender gives it: integer counts (the
/// usual form) or float counts.
#[derive(Clone, Debug, PartialEq)]
pub enum HistogramSample {
    Int(Histogram),
    Float(FloatHistogram),
}

impl HistogramSample {
    /// The float form, what queries compute with.
    pub fn to_float(&self) -> FloatHistogram {
        match self {
            Self::Int(h) => h.to_float(),
            Self::Float(h) => h.clone(),
        }
    }

    /// Whether it is Prometheus' stale marker.
    pub fn is_stale(&self) -> bool {
        match self {
            Self::Int(h) => h.is_stale(),
            Self::Float(h) => h.is_stale(),
        }
    }

    /// Equality of the same form with every `f64` compared bit for bit: a
    /// re-sent duplicate.
    pub fn bit_eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => a.bit_eq(b),
            (Self::Float(a), Self::Float(b)) => a.bit_eq(b),
            _ => false,
        }
    }

    /// Checks it as Prometheus does before it is stored.
    pub fn validate(&self) -> Result<(), super::HistogramError> {
        match self {
            Self::Int(h) => h.validate(),
            Self::Float(h) => h.validate(),
        }
    }
}
