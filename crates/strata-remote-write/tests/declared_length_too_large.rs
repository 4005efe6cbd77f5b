//! A 10-byte body whose snappy header declares 1 GiB must be refused before
//! anything that large is allocated.
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use strata_remote_write::{decode, DecodeLimits, Version};

struct LargestAllocation;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only recording sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: LargestAllocation = LargestAllocation;

#[test]
fn declared_decoded_length_over_the_limit_is_413_without_allocating() {
    // Varint 1 << 30, then a few literal bytes.
    let body = [0x80, 0x80, 0x80, 0x80, 0x04, 0x00, b'x', 0, 0, 0];
    let limits = DecodeLimits {
        max_body_bytes: 1 << 20,
        max_decoded_bytes: 64 << 20,
    };
    LARGEST.store(0, Ordering::Relaxed);
    let err = decode(Version::V1, &body, &limits).unwrap_err();
    let largest = LARGEST.load(Ordering::Relaxed);
    assert_eq!(err.status(), 413);
    let msg = err.to_string();
    assert!(
        msg.contains("1073741824") && msg.contains("67108864"),
        "{msg}"
    );
    assert!(largest < 1 << 20, "allocated {largest} bytes");
}

#[test]
fn declared_length_of_4_gib_and_more_is_413_too() {
    let limits = DecodeLimits {
        max_body_bytes: 1 << 20,
        max_decoded_bytes: 64 << 20,
    };
    // 4 GiB (past what the snappy crate accepts as a length), and the
    // largest 10-byte varint.
    for body in [
        vec![0x80, 0x80, 0x80, 0x80, 0x10, 0, 0, 0],
        vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    ] {
        LARGEST.store(0, Ordering::Relaxed);
        let err = decode(Version::V1, &body, &limits).unwrap_err();
        assert_eq!(err.status(), 413, "{err}");
        assert!(LARGEST.load(Ordering::Relaxed) < 1 << 20);
    }
}
