//! The ruler: rules evaluated apart from the writers, on the bucket a
//! reader node reads, their output remote-written to a distributor or
//! writer; several rulers share the groups under leases in the bucket.
//! Also the store of the groups the ruler configuration API manages,
//! which a single node evaluates too.

pub mod fan_out;
pub mod lease;
pub mod overlay;
pub mod sink;
pub mod store;
