//! The SlateDB handle a [`crate::Storage`] reads through: the writer's `Db`,
//! or a read-only `DbReader` on the same path (reader nodes).
//!
//! Every read is bounded by `read_timeout`: SlateDB retries a failing object
//! store without end, and a query should fail (503) rather than wait for
//! the store to heal.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
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

    pub(crate) async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, StorageError> {
        match &self.handle {
            Handle::Writer(db) => bounded(self.read_timeout, db.get(key)).await,
            Handle::Reader(r) => bounded(self.read_timeout, r.get(key)).await,
        }
    }

    pub(crate) async fn scan<T: ByteRangeBounds + Send>(
        &self,
        range: T,
    ) -> Result<Scan, StorageError> {
        let it = match &self.handle {
            Handle::Writer(db) => bounded(self.read_timeout, db.scan(range)).await?,
            Handle::Reader(r) => bounded(self.read_timeout, r.scan(range)).await?,
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

impl Scan {
    pub(crate) async fn next(&mut self) -> Result<Option<KeyValue>, StorageError> {
        bounded(self.read_timeout, self.it.next()).await
    }

    pub(crate) async fn seek(&mut self, key: impl AsRef<[u8]>) -> Result<(), StorageError> {
        bounded(self.read_timeout, self.it.seek(key)).await
    }
}
