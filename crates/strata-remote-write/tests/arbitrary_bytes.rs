#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use strata_remote_write::{decode, decode_protobuf, DecodeLimits, Version};

const LIMITS: DecodeLimits = DecodeLimits {
    max_body_bytes: 1 << 16,
    max_decoded_bytes: 1 << 20,
};

proptest! {
    #[test]
    fn decode_of_arbitrary_bytes_never_panics(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        for version in [Version::V1, Version::V2] {
            let _ = decode(version, &body, &LIMITS);
            let _ = decode_protobuf(version, &body);
        }
    }

    #[test]
    fn decode_of_valid_snappy_around_arbitrary_protobuf_never_panics(
        raw in proptest::collection::vec(any::<u8>(), 0..512)
    ) {
        let body = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        for version in [Version::V1, Version::V2] {
            if let Ok(d) = decode(version, &body, &LIMITS) {
                // Whatever parsed must satisfy the promises made for valid series.
                for s in &d.series {
                    prop_assert!(!s.samples.is_empty());
                    prop_assert!(s.labels.windows(2).all(|w| w[0].name < w[1].name));
                    prop_assert!(s.labels.iter().any(|l| l.name == "__name__"));
                }
            }
        }
    }
}
