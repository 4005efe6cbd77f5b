//! The SlateDB handle a [`crate::Storage`] reads through: the writer's `Db`,
//! or a read-only `DbReader` on the same path (reader nodes).

use bytes::Bytes;
use slatedb::{ByteRangeBounds, Db, DbIterator, DbReader};

use crate::error::StorageError;

pub(crate) enum Backend {
    Writer(Db),
    Reader(Box<DbReader>),
}

impl Backend {
    pub(crate) async fn get(&self, key: &[u8]) -> Result<Option<Bytes>, StorageError> {
        Ok(match self {
            Self::Writer(db) => db.get(key).await?,
            Self::Reader(r) => r.get(key).await?,
        })
    }

    pub(crate) async fn scan<T: ByteRangeBounds + Send>(
        &self,
        range: T,
    ) -> Result<DbIterator, StorageError> {
        Ok(match self {
            Self::Writer(db) => db.scan(range).await?,
            Self::Reader(r) => r.scan(range).await?,
        })
    }

    /// The writable database, if this is the writer.
    pub(crate) fn writer(&self) -> Option<&Db> {
        match self {
            Self::Writer(db) => Some(db),
            Self::Reader(_) => None,
        }
    }

    pub(crate) async fn close(&self) -> Result<(), StorageError> {
        match self {
            Self::Writer(db) => db.close().await?,
            Self::Reader(r) => r.close().await?,
        }
        Ok(())
    }
}
