//! One series' samples of one bucket in the head: the older ones frozen in
//! the compact sealed format, the newest in an appendable tail chunk
//! (`strata_codec::TailChunk`: Gorilla's timestamps, values as the change
//! of their decimal mantissa).
//!
//! The tail only has to be appendable; on node_exporter data it takes two
//! to three times the bytes of the sealed format (1.67 bytes a sample on
//! captured pages, against 0.60; Gorilla's XOR took 2.01). A bucket is
//! an hour by default, so the head would otherwise grow by the tail's size
//! for the whole hour. [`HeadChunk::freeze`] (run by a background pass at
//! low priority) moves a long enough tail into the frozen run, and the head
//! grows by the sealed format's size instead.
//!
//! Each freeze re-encodes the frozen run with the tail as one run, up to
//! [`RUN_MAX_SAMPLES`](frozen::RUN_MAX_SAMPLES): one allocation and one
//! header per chunk rather than a part per freeze, each with its own entry
//! and header (about 100 bytes a part, which cancelled the gain of
//! freezing early). The first run is kept inline; only a chunk that grows
//! past a run (a reader's, or a writer's with spilling off) holds more.
//!
//! A writer's head goes one step further: once a chunk's frozen runs hold
//! enough samples, [`HeadChunk::take_spill`] takes them as one segment in
//! the sealed format (the run's own bytes when there is one), the spill
//! pass writes it to the store (a segment key, see `keys::segment_key`),
//! and [`HeadChunk::spilled`] drops what it held, keeping only the
//! segment's time range. The head then holds at most a segment's worth of
//! samples per series, whatever the bucket's width, and the seal writes
//! only what is left.
//!
//! Once it takes no more samples in order (its bucket has ended, or its
//! series has samples of a later one), a chunk's tail is frozen too
//! (`Head::freeze_ended`) and the chunk closed: what its box held moves
//! into the bytes the tail took, and the box goes. A series holds the
//! ended bucket's chunk beside the open one's until the seal writes it,
//! and at a million series the boxes were 64 MiB of that.
//!
//! The head freezes a tail in three steps ([`HeadChunk::freeze_start`],
//! [`Freezing::write`](freeze::Freezing::write),
//! [`HeadChunk::freeze_finish`]) so that the series' lock is not held
//! while runs are read, encoded and written: the freezer runs at low
//! priority, and a write waiting for a lock it holds would wait for its
//! turn on a core too.
//!
//! By seam: the chunk and what it holds before its tail, open or closed
//! (`body`), its frozen runs and how they are written (`frozen`), the
//! reads of a range (`read`), a freeze in three steps (`freeze`), a close
//! that keeps the tail's bytes and the merge after it (`close`), and a
//! spill of its runs to the store (`spill`).

mod body;
mod close;
mod freeze;
mod frozen;
mod read;
mod spill;
#[cfg(test)]
mod tests;

pub(crate) use body::HeadChunk;
pub use freeze::FREEZE_MIN_SAMPLES;
pub(crate) use spill::Spill;
