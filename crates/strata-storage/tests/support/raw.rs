//! The store's keys as SlateDB holds them, for tests that look past the
//! storage layer: a reader of the database at `db`, and a writer for
//! tests that lay keys down as another build would have.

use std::sync::Arc;

use object_store::ObjectStore;

fn table_blocks() -> Arc<strata_storage::table_compression::TableBlocks> {
    Arc::new(strata_storage::table_compression::TableBlocks::new(
        Default::default(),
    ))
}

/// A reader of the database at `db` in `store`.
pub async fn reader(store: &Arc<dyn ObjectStore>) -> slatedb::DbReader {
    slatedb::DbReader::builder("db", Arc::clone(store))
        .with_block_transformer(table_blocks())
        .build()
        .await
        .unwrap()
}

/// The database at `db` in `store`, opened as its writer (the storage
/// layer's writer must be closed).
#[allow(dead_code)]
pub async fn writer(store: &Arc<dyn ObjectStore>) -> slatedb::Db {
    slatedb::Db::builder("db", Arc::clone(store))
        .with_block_transformer(table_blocks())
        .build()
        .await
        .unwrap()
}
