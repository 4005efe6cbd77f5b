//! Remote write 1.0 decoding of arbitrary bytes: both as a whole body
//! (snappy framing, then protobuf) and as the protobuf inside a body. It must
//! never panic, and what it accepts must keep the promises of a valid series.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_remote_write::{decode, decode_protobuf, DecodeLimits, DecodedWrite, Version};

const LIMITS: DecodeLimits = DecodeLimits {
    max_body_bytes: 1 << 20,
    max_decoded_bytes: 4 << 20,
};

fn check(decoded: &DecodedWrite) {
    for series in &decoded.series {
        assert!(!series.samples.is_empty());
        assert!(series.labels.windows(2).all(|w| w[0].name < w[1].name));
        assert!(series.labels.iter().any(|l| l.name == "__name__"));
        assert!(series
            .labels
            .iter()
            .all(|l| !l.name.is_empty() && !l.value.is_empty()));
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(decoded) = decode(Version::V1, data, &LIMITS) {
        check(&decoded);
    }
    if let Ok(decoded) = decode_protobuf(Version::V1, data) {
        check(&decoded);
    }
});
