//! Serializable storage settings. Components (object store, clock) are
//! given to [`crate::writer::Writer::open`] and [`crate::storage::Storage::open_reader`] apart from these.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Block compression of SlateDB's tables.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Lz4,
    #[default]
    Zstd,
}

impl Compression {
    /// SlateDB's own codec for new tables. Zstd is none of SlateDB's: the
    /// block transformer compresses (`table_compression`).
    pub(crate) fn codec(self) -> Option<slatedb::config::CompressionCodec> {
        match self {
            Compression::None | Compression::Zstd => None,
            Compression::Lz4 => Some(slatedb::config::CompressionCodec::Lz4),
        }
    }
}

/// Smallest [`StorageSettings::memtable_bytes`]: a table per few writes
/// would only multiply level-0 tables and compactions.
const MIN_MEMTABLE_BYTES: u64 = 1 << 20;

/// Prometheus' usual setting of `storage.exemplars.max-exemplars`.
pub const DEFAULT_MAX_EXEMPLARS: usize = 100_000;

/// How the storage engine lays out and keeps data.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StorageSettings {
    /// How often SlateDB flushes its WAL to the object store: the most an
    /// Applied write can lose in a crash.
    #[serde(with = "humantime_serde")]
    pub flush_interval: Duration,
    /// Width of a bucket: the head keeps one open chunk per series per
    /// bucket, and a sealed chunk holds one bucket of one series.
    #[serde(with = "humantime_serde")]
    pub bucket_duration: Duration,
    /// Width of a compacted block: as its buckets are sealed, compaction
    /// writes them again a quarter of the block at a time as one part per
    /// series and one set of postings, so long-range reads take a few keys
    /// per series per block instead of one per bucket. A multiple of
    /// `bucket_duration`; `0s` (or one bucket) keeps the buckets as they
    /// are.
    #[serde(with = "humantime_serde")]
    pub block_duration: Duration,
    /// How long the buckets a compacted block replaced are kept after the
    /// switch to the block: a read that began before the switch (on the
    /// writer, or on a reader node that has not yet seen it) still reads
    /// them. Longer than the longest query plus a reader's lag. SlateDB
    /// keeps the tables its compactions replaced as long (at least a
    /// minute), for the same reads.
    #[serde(with = "humantime_serde")]
    pub compaction_delete_delay: Duration,
    /// How long after a bucket's end late samples are still accepted before
    /// the bucket is sealed.
    #[serde(with = "humantime_serde")]
    pub seal_grace: Duration,
    /// How long sealed data is kept.
    #[serde(with = "humantime_serde")]
    pub retention: Duration,
    /// How far back from now out-of-order samples, and samples of buckets
    /// already sealed (late samples: a sender's backlog, backfilled or
    /// imported history), are accepted. Unset: the whole retention. `0s`
    /// keeps Prometheus' strict rules: a sample older than its series'
    /// newest is rejected as out of order, one in a sealed bucket as too
    /// old. At most the retention (older data would expire at once).
    #[serde(with = "humantime_serde")]
    pub out_of_order_window: Option<Duration>,
    /// How long a log record is kept; it must outlive the time from a write
    /// to the seal of its bucket (bucket + grace), plus any writer downtime
    /// you want to survive without losing unsealed data.
    #[serde(with = "humantime_serde")]
    pub log_retention: Duration,
    /// How often the sealer looks for buckets that are due.
    #[serde(with = "humantime_serde")]
    pub seal_check_interval: Duration,
    /// How long a seal spreads its writes over (at most half a bucket): a
    /// bucket of a million series sealed at once would compete with ingest
    /// for CPU and fill SlateDB's write buffer. Zero seals at full speed.
    #[serde(with = "humantime_serde")]
    pub seal_spread: Duration,
    /// Samples of one series the head holds in the compact format before it
    /// writes them to the store as a segment of the open bucket and frees
    /// them; the seal then writes only the rest. Keeps the head's memory
    /// flat through a bucket. Each series waits for a count of its own
    /// between this and half again (`head::staggered`). 0 keeps every
    /// sample in memory until the seal.
    pub spill_min_samples: u32,
    /// Compression of SlateDB's tables (WAL included): log records and
    /// series labels shrink several times; sealed chunks are compact
    /// already, and with zstd a block is kept compressed only if that
    /// takes an eighth off it (`table_compression`).
    pub compression: Compression,
    /// Most write requests merged into one log record.
    pub max_group_commit: usize,
    /// Capacity of the write coordinator's queue, in requests.
    pub queue_capacity: usize,
    /// Longest a write waits for the storage: for its WAL to reach the
    /// object store (Durable), or for room while SlateDB holds writes back.
    /// Past it the write fails as unavailable (HTTP 503); its samples may
    /// still become durable once the store answers again.
    #[serde(with = "humantime_serde")]
    pub write_timeout: Duration,
    /// Longest one read from SlateDB may take (a point read, or one step of
    /// a scan). SlateDB retries a failing object store without end; past
    /// this the query fails as unavailable (HTTP 503).
    #[serde(with = "humantime_serde")]
    pub read_timeout: Duration,
    /// Size of the writer's in-memory cache of SlateDB's blocks (a quarter
    /// of it for indexes and filters). It fills as the writer reads the
    /// store (new series' postings, spilled segments at the seal, queries)
    /// and then stays at this size. Reader nodes size theirs with
    /// `reader.memory_cache_bytes`.
    pub memory_cache_bytes: u64,
    /// Bytes SlateDB's memtable takes before it is written to the object
    /// store as a level-0 table (SlateDB's `l0_sst_size_bytes`). The
    /// memtable is part of the writer's memory: it fills to this, is
    /// written, and starts again.
    pub memtable_bytes: u64,
    /// Most bytes of writes SlateDB holds in memory before they are in a
    /// level-0 table (its memtables and WAL buffer, by its own estimate;
    /// SlateDB's `max_unflushed_bytes`). At this SlateDB holds every write
    /// back, ingest included, until a memtable is written. The seal,
    /// spills and compaction wait first, from `memtable_bytes` on (at most
    /// 2 s a batch).
    /// The memtables take about twice these bytes of memory. They fill
    /// when level-0 tables wait for SlateDB's compactor, as behind an
    /// ingest backlog. At least twice `memtable_bytes`.
    pub max_unflushed_bytes: u64,
    /// Most exemplars the head keeps, all series together (Prometheus'
    /// `max_exemplars`); the oldest go first. Each bucket's exemplars are
    /// also written to the store at its seal and kept for the retention.
    /// 0 stores none.
    pub max_exemplars: usize,
}

impl Default for StorageSettings {
    fn default() -> Self {
        Self {
            flush_interval: Duration::from_millis(100),
            bucket_duration: Duration::from_secs(3600),
            block_duration: Duration::from_secs(24 * 3600),
            compaction_delete_delay: Duration::from_secs(600),
            seal_grace: Duration::from_secs(300),
            retention: Duration::from_secs(15 * 24 * 3600),
            out_of_order_window: None,
            log_retention: Duration::from_secs(24 * 3600),
            seal_check_interval: Duration::from_secs(10),
            seal_spread: Duration::from_secs(600),
            spill_min_samples: 480,
            compression: Compression::Zstd,
            max_group_commit: 64,
            queue_capacity: 1024,
            write_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(10),
            memory_cache_bytes: 256 << 20,
            memtable_bytes: 16 << 20,
            max_unflushed_bytes: 256 << 20,
            max_exemplars: DEFAULT_MAX_EXEMPLARS,
        }
    }
}

impl StorageSettings {
    /// Checks the settings, naming the first bad key.
    pub fn validate(&self) -> Result<(), String> {
        let ms = |d: Duration| d.as_millis();
        if self.flush_interval.is_zero() {
            return Err("flush_interval: must be greater than 0".into());
        }
        if ms(self.bucket_duration) < 1000 {
            return Err("bucket_duration: must be at least 1s".into());
        }
        if !self.block_duration.is_zero()
            && (self.block_duration < self.bucket_duration
                || ms(self.block_duration) % ms(self.bucket_duration) != 0)
        {
            return Err("block_duration: must be 0s or a multiple of bucket_duration".into());
        }
        if self.retention < self.bucket_duration {
            return Err("retention: must be at least one bucket_duration".into());
        }
        if self.log_retention < self.bucket_duration + self.seal_grace {
            return Err("log_retention: must be at least bucket_duration + seal_grace".into());
        }
        if self.seal_check_interval.is_zero() {
            return Err("seal_check_interval: must be greater than 0".into());
        }
        if self.max_group_commit == 0 {
            return Err("max_group_commit: must be at least 1".into());
        }
        if self.queue_capacity == 0 {
            return Err("queue_capacity: must be at least 1".into());
        }
        if self.write_timeout.is_zero() {
            return Err("write_timeout: must be greater than 0".into());
        }
        if self.read_timeout.is_zero() {
            return Err("read_timeout: must be greater than 0".into());
        }
        if self.memory_cache_bytes == 0 {
            return Err("memory_cache_bytes: must be greater than 0".into());
        }
        if self.memtable_bytes < MIN_MEMTABLE_BYTES {
            return Err("memtable_bytes: must be at least 1048576 (1 MiB)".into());
        }
        if self.max_unflushed_bytes < self.memtable_bytes.saturating_mul(2) {
            return Err("max_unflushed_bytes: must be at least twice memtable_bytes".into());
        }
        Ok(())
    }

    pub(crate) fn bucket_ms(&self) -> i64 {
        i64::try_from(self.bucket_duration.as_millis()).unwrap_or(i64::MAX)
    }

    /// Buckets per compacted block; 1 when compaction is off.
    pub(crate) fn block_buckets(&self) -> i64 {
        let block = i64::try_from(self.block_duration.as_millis()).unwrap_or(i64::MAX);
        (block / self.bucket_ms()).max(1)
    }

    pub(crate) fn grace_ms(&self) -> i64 {
        i64::try_from(self.seal_grace.as_millis()).unwrap_or(i64::MAX)
    }

    /// The last bucket whose seal is due at `now_ms`: its end plus the
    /// grace has passed.
    pub(crate) fn due_through(&self, now_ms: i64) -> i64 {
        now_ms
            .saturating_sub(self.grace_ms())
            .div_euclid(self.bucket_ms())
            .saturating_sub(1)
    }

    /// The time a seal spreads its writes over: `seal_spread`, at most half
    /// a bucket so a seal ends well before the next one is due.
    pub(crate) fn effective_seal_spread(&self) -> Duration {
        self.seal_spread.min(self.bucket_duration / 2)
    }

    /// The out-of-order window in ms, at most the retention; `None` when
    /// it is 0 (strict order).
    pub(crate) fn late_window_ms(&self) -> Option<i64> {
        let window = self.out_of_order_window.unwrap_or(self.retention);
        if window.is_zero() {
            return None;
        }
        let ms = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
        Some(ms.min(self.retention_ms()))
    }

    /// The earliest out-of-order or late sample accepted at `now_ms`.
    pub(crate) fn late_from(&self, now_ms: i64) -> Option<i64> {
        self.late_window_ms().map(|w| now_ms.saturating_sub(w))
    }

    pub(crate) fn retention_ms(&self) -> i64 {
        i64::try_from(self.retention.as_millis()).unwrap_or(i64::MAX)
    }
}

/// How a reader node follows the writer and caches what it reads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ReaderSettings {
    /// How often the reader polls the object store for the writer's new
    /// WAL files and manifest, and follows the log into its head.
    #[serde(with = "humantime_serde")]
    pub poll_interval: Duration,
    /// The longest a reader waits between looks at the store while the
    /// writer writes nothing: it backs off from `poll_interval` up to this
    /// while each look finds no new object, and is back at `poll_interval`
    /// as soon as one appears. A value below `poll_interval` counts as
    /// `poll_interval`.
    #[serde(with = "humantime_serde")]
    pub idle_poll_interval: Duration,
    /// Folder of the on-disk block cache (local NVMe); none disables it.
    pub cache_dir: Option<std::path::PathBuf>,
    /// Largest size of the on-disk cache.
    pub disk_cache_bytes: usize,
    /// The piece of a table the on-disk cache fetches and keeps as one
    /// (SlateDB's `part_size_bytes`): a read of a few blocks fetches the
    /// pieces that hold them whole. A multiple of 1 KiB.
    pub disk_cache_part_bytes: usize,
    /// Size of the in-memory block cache.
    pub memory_cache_bytes: u64,
}

impl Default for ReaderSettings {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(200),
            idle_poll_interval: Duration::from_millis(500),
            cache_dir: None,
            disk_cache_bytes: 16 << 30,
            disk_cache_part_bytes: 4 << 20,
            memory_cache_bytes: 512 << 20,
        }
    }
}

impl ReaderSettings {
    /// Checks the settings, naming the first bad key.
    pub fn validate(&self) -> Result<(), String> {
        if self.poll_interval.is_zero() {
            return Err("reader.poll_interval: must be greater than 0".into());
        }

        if self.disk_cache_part_bytes == 0 || self.disk_cache_part_bytes % 1024 != 0 {
            return Err(format!(
                "reader.disk_cache_part_bytes: must be a multiple of 1024 greater than 0, not {}",
                self.disk_cache_part_bytes
            ));
        }
        if self.memory_cache_bytes == 0 {
            return Err("reader.memory_cache_bytes: must be greater than 0".into());
        }
        Ok(())
    }
}
