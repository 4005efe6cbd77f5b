//! How many threads the machine runs at once, read once per process: the
//! bound every parallel decode, aggregation and replay splits its work by.

use std::sync::OnceLock;

/// The machine's available parallelism (1 when it cannot be read).
pub fn available() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
