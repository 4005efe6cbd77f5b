//! The state an open database holds, as plain data: the pieces of
//! [`Shared`](crate::shared::Shared) that the work above changes
//! (compaction, the late pass, the merge that gives space back, metadata)
//! and reads, with what only a writer or only a reader keeps (`role`). Nothing here takes the shared state or does I/O.

pub(crate) mod compacted;
pub(crate) mod late;
pub(crate) mod metadata;
pub(crate) mod reclaim;
pub(crate) mod role;
pub(crate) mod tombstones;
