//! The SlateDB handle a [`crate::storage::Storage`] reads through: the writer's `Db`,
//! or a read-only `DbReader` on the same path (reader nodes).
//!
//! Every read is bounded by `read_timeout`: SlateDB retries a failing object
//! store without end, and a query should fail (503) rather than wait for
//! the store to heal.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use slatedb::config::{ReadOptions, ScanOptions};
use slatedb::{ByteRangeBounds, Db, DbIterator, DbReader, KeyValue};

use crate::error::StorageError;

pub(crate) enum Handle {
    Writer(Db),
    Reader(Box<DbReader>),
}

pub(crate) struct Backend {
    handle: Handle,
    read_timeout: Duration,
}

/// A scan whose every step is bounded by the read timeout.
pub(crate) struct Scan {
    it: DbIterator,
    read_timeout: Duration,
}

async fn bounded<T>(
    limit: Duration,
    read: impl Future<Output = Result<T, slatedb::Error>>,
) -> Result<T, StorageError> {
    match tokio::time::timeout(limit, read).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(StorageError::Unavailable(format!(
            "the object store did not answer a read within {limit:?}"
        ))),
    }
}

impl Backend {
    pub(crate) fn new(handle: Handle, read_timeout: Duration) -> Self {
        Self {
            handle,
            read_timeout,
        }
    }

    /// A point read whose block is cached.
    pub(crate) async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, StorageError> {
        self.get_as(key, ScanKind::Short).await
    }

    /// A point read whose block is cached as a scan of `kind` caches it.
    pub(crate) async fn get_as(
        &self,
        key: &[u8],
        kind: ScanKind,
    ) -> Result<Option<Bytes>, StorageError> {
        let options = ReadOptions {
            cache_blocks: kind.caches(),
            ..ReadOptions::default()
        };
        match &self.handle {
            Handle::Writer(db) => {
                bounded(self.read_timeout, db.get_with_options(key, &options)).await
            }
            Handle::Reader(r) => {
                bounded(self.read_timeout, r.get_with_options(key, &options)).await
            }
        }
    }

    /// A [`ScanKind::Short`] scan.
    pub(crate) async fn scan<T: ByteRangeBounds + Send>(
        &self,
        range: T,
    ) -> Result<Scan, StorageError> {
        self.scan_as(range, ScanKind::Short).await
    }

    pub(crate) async fn scan_as<T: ByteRangeBounds + Send>(
        &self,
        range: T,
        kind: ScanKind,
    ) -> Result<Scan, StorageError> {
        let options = kind.options();
        let it = match &self.handle {
            Handle::Writer(db) => {
                bounded(self.read_timeout, db.scan_with_options(range, &options)).await?
            }
            Handle::Reader(r) => {
                bounded(self.read_timeout, r.scan_with_options(range, &options)).await?
            }
        };
        Ok(Scan {
            it,
            read_timeout: self.read_timeout,
        })
    }

    /// The writable database, if this is the writer.
    pub(crate) fn writer(&self) -> Option<&Db> {
        match &self.handle {
            Handle::Writer(db) => Some(db),
            Handle::Reader(_) => None,
        }
    }

    pub(crate) async fn close(&self) -> Result<(), StorageError> {
        match &self.handle {
            Handle::Writer(db) => db.close().await?,
            Handle::Reader(r) => r.close().await?,
        }
        Ok(())
    }
}

/// How a scan reads SlateDB's blocks. SlateDB's default scan reads one
/// block per request and caches nothing, so a query repeated read every
/// block from the object store (or the local disk) again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanKind {
    /// A few keys (postings of one label, one series' chunk keys): blocks
    /// cached, one at a time.
    Short,
    /// Many consecutive keys a query reads (a span's chunks of many
    /// series): blocks cached, fetched ahead, several at once.
    Long,
    /// Everything of a kind, once (recovery, compaction): fetched ahead,
    /// not cached, so it does not push out what queries read.
    Bulk,
}

impl ScanKind {
    /// Whether the blocks it reads go into the block cache.
    pub(crate) fn caches(self) -> bool {
        self != ScanKind::Bulk
    }

    fn options(self) -> ScanOptions {
        let (cache_blocks, read_ahead_bytes, max_fetch_tasks) = match self {
            ScanKind::Short => (true, 1, 1),
            ScanKind::Long => (true, 256 << 10, 4),
            ScanKind::Bulk => (false, 1 << 20, 4),
        };
        ScanOptions {
            cache_blocks,
            read_ahead_bytes,
            max_fetch_tasks,
            ..ScanOptions::default()
        }
    }
}

impl Scan {
    pub(crate) async fn next(&mut self) -> Result<Option<KeyValue>, StorageError> {
        bounded(self.read_timeout, self.it.next()).await
    }

    pub(crate) async fn seek(&mut self, key: impl AsRef<[u8]>) -> Result<(), StorageError> {
        bounded(self.read_timeout, self.it.seek(key)).await
    }
}
