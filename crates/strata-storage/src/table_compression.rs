//! Compression of SlateDB's table blocks, done by Strata as a block
//! transformer rather than by SlateDB's own codec.
//!
//! - **Blocks zstd barely shrinks are stored as they are.** The sealed
//!   format's chunks are compact already: over 30 days of 2,000 series,
//!   zstd took 1.8 % off a compacted store's blocks, and decompressing them
//!   was a tenth of a long-range query's CPU when they were not cached.
//!   A block is kept compressed only if that saves an eighth of it
//!   (RocksDB's rule), so log records, labels and postings still are.
//! - **One decoder per thread.** SlateDB decompresses a zstd block with a
//!   decoder it creates for that block alone: creating, zeroing and freeing
//!   it was another tenth of that CPU (`docs/benchmarks.md`, "Long
//!   ranges"). Here a block decodes straight into a buffer of the size its
//!   frame header gives.
//!
//! A block written here starts with a marker saying which of the two it
//! is. Tables written before, by SlateDB's codec (zstd or lz4) or
//! uncompressed, carry their codec in their own metadata: SlateDB hands
//! their blocks to [`decode`](TableBlocks::decode) unchanged (none starts
//! with a marker) and decompresses them itself, so a store keeps every
//! table it has.

use std::cell::RefCell;

use bytes::Bytes;
use zstd::zstd_safe;

use crate::settings::Compression;

/// What starts a block this module compressed (one zstd frame follows).
/// No block of SlateDB's starts so: an uncompressed one starts with a zero
/// (its first key shares nothing with a previous one), a zstd frame with
/// `28 b5 2f fd`, and an lz4 one with its length, which would have to be
/// 22.7 MB.
const MARKER: [u8; 4] = [0xff, b'S', b'Z', 1];

/// What starts a block stored as it is, because zstd did not shrink it
/// enough (22.4 MB as an lz4 length).
const RAW_MARKER: [u8; 4] = [0xff, b'S', b'R', 1];

/// SlateDB's own zstd level for tables.
const LEVEL: i32 = 3;

/// The transformer every database of a store is opened with (writer,
/// compactor, reader): it compresses new blocks when the settings ask for
/// zstd, and decodes the blocks it compressed whatever they ask. A SlateDB
/// handle opened on a Strata store without it cannot read its tables.
pub struct TableBlocks {
    compress: bool,
}

impl TableBlocks {
    pub fn new(compression: Compression) -> Self {
        TableBlocks {
            compress: compression == Compression::Zstd,
        }
    }
}

thread_local! {
    static DECODER: RefCell<Option<zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
    /// A context made once per thread: one made per block allocated its
    /// tables (768 KiB for a 64 KiB block at level 3) and cleared them
    /// every time; a context used again starts from its tables as they are.
    static ENCODER: RefCell<Option<zstd_safe::CCtx<'static>>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's zstd context in `cell`, made by `make` the
/// first time.
fn with_context<C>(
    cell: &RefCell<Option<C>>,
    make: impl FnOnce() -> Option<C>,
    f: impl FnOnce(&mut C) -> zstd_safe::SafeResult,
) -> Result<usize, slatedb::Error> {
    let mut cell = cell.borrow_mut();
    let context = match cell.as_mut() {
        Some(context) => context,
        None => cell.insert(make().ok_or_else(|| corrupt("no zstd context"))?),
    };
    f(context).map_err(|code| corrupt(zstd_safe::get_error_name(code)))
}

fn corrupt(what: &str) -> slatedb::Error {
    slatedb::Error::data(format!("table block: {what}"))
}

/// `data` as one zstd frame after [`MARKER`] if that takes an eighth off
/// it, else as it is after [`RAW_MARKER`].
pub fn compress(data: &[u8]) -> Result<Vec<u8>, slatedb::Error> {
    let mut out = MARKER.to_vec();
    out.resize(MARKER.len() + zstd_safe::compress_bound(data.len()), 0);
    let (_, frame) = out.split_at_mut(MARKER.len());
    let written = ENCODER.with(|cell| {
        with_context(cell, zstd_safe::CCtx::try_create, |encoder| {
            encoder.compress(frame, data, LEVEL)
        })
    })?;
    if written >= data.len() - data.len() / 8 {
        out.clear();
        out.extend_from_slice(&RAW_MARKER);
        out.extend_from_slice(data);
        return Ok(out);
    }
    out.truncate(MARKER.len() + written);
    Ok(out)
}

/// The block `data` holds: after [`RAW_MARKER`], the rest of it (no copy);
/// after [`MARKER`], decompressed; else `data` itself (a block SlateDB
/// wrote and decodes itself).
pub fn decompress(data: Bytes) -> Result<Bytes, slatedb::Error> {
    if data.starts_with(&RAW_MARKER) {
        return Ok(data.slice(RAW_MARKER.len()..));
    }
    let Some(frame) = data.strip_prefix(&MARKER) else {
        return Ok(data);
    };
    let size = match zstd_safe::get_frame_content_size(frame) {
        Ok(Some(size)) => usize::try_from(size).map_err(|_| corrupt("size too large"))?,
        Ok(None) | Err(_) => return Err(corrupt("zstd frame without a size")),
    };
    let mut out = Vec::with_capacity(size);
    DECODER.with(|cell| {
        with_context(cell, zstd_safe::DCtx::try_create, |decoder| {
            decoder.decompress(&mut out, frame)
        })
    })?;
    if out.len() != size {
        return Err(corrupt("shorter than its frame header says"));
    }
    Ok(Bytes::from(out))
}

#[async_trait::async_trait]
impl slatedb::BlockTransformer for TableBlocks {
    async fn encode(&self, data: Bytes) -> Result<Bytes, slatedb::Error> {
        if !self.compress {
            return Ok(data);
        }
        compress(&data).map(Bytes::from)
    }

    async fn decode(&self, data: Bytes) -> Result<Bytes, slatedb::Error> {
        decompress(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Repeated bytes compress; random ones are stored as they are.
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 0..70_000), repeat in 1usize..4) {
            let data: Vec<u8> = data.iter().copied().cycle().take(data.len() * repeat).collect();
            let packed = compress(&data).unwrap();
            prop_assert!(packed.starts_with(&MARKER) || packed.starts_with(&RAW_MARKER));
            prop_assert_eq!(decompress(Bytes::from(packed)).unwrap(), Bytes::from(data));
        }
    }

    #[test]
    fn compresses_only_what_shrinks_by_an_eighth() {
        let text: Vec<u8> = (0..2_000)
            .flat_map(|i| format!("node_cpu_seconds_total{{cpu=\"{i}\"}} ").into_bytes())
            .collect();
        let packed = compress(&text).unwrap();
        assert!(packed.starts_with(&MARKER) && packed.len() < text.len() / 4);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..65_536)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let packed = compress(&noise).unwrap();
        assert!(packed.starts_with(&RAW_MARKER));
        assert_eq!(packed.len(), noise.len() + RAW_MARKER.len());
    }

    #[test]
    fn blocks_of_slatedb_pass_through() {
        let raw = Bytes::from_static(b"\x00\x05\x03hello");
        assert_eq!(decompress(raw.clone()).unwrap(), raw);
        let zstd_frame = Bytes::from(zstd::bulk::compress(b"a block of slatedb's own", 3).unwrap());
        assert_eq!(decompress(zstd_frame.clone()).unwrap(), zstd_frame);
        assert_eq!(decompress(Bytes::new()).unwrap(), Bytes::new());
    }

    #[test]
    fn a_damaged_block_is_an_error() {
        let mut packed = compress(&[7u8; 10_000]).unwrap();
        assert!(packed.starts_with(&MARKER));
        packed.truncate(packed.len() - 3);
        assert!(decompress(Bytes::from(packed)).is_err());
        let mut bad_size = compress(&[7u8; 10_000]).unwrap();
        bad_size.truncate(MARKER.len() + 2);
        assert!(decompress(Bytes::from(bad_size)).is_err());
    }

    /// Tables SlateDB compressed itself (zstd, lz4) or left as they were,
    /// and tables of this module in both forms, read back by one database:
    /// a store written before keeps every table it has.
    #[tokio::test]
    async fn a_store_reads_tables_of_every_codec() {
        use slatedb::config::CompressionCodec;
        use std::sync::Arc;
        let store: Arc<dyn object_store::ObjectStore> =
            Arc::new(object_store::memory::InMemory::new());
        // The first half compresses; the second (noise) is stored as it is.
        let value = |i: usize| -> Vec<u8> {
            if i < 150 {
                return format!("{i} repeats {i} repeats {i}")
                    .repeat(50)
                    .into_bytes();
            }
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ i as u64;
            (0..600)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        };
        let runs: [(Option<CompressionCodec>, Option<Compression>); 5] = [
            (Some(CompressionCodec::Zstd), None),
            (Some(CompressionCodec::Lz4), None),
            (None, None),
            (None, Some(Compression::Zstd)),
            (Some(CompressionCodec::Lz4), Some(Compression::Lz4)),
        ];
        for (run, (codec, ours)) in runs.iter().enumerate() {
            let mut builder =
                slatedb::Db::builder("db", Arc::clone(&store)).with_settings(slatedb::Settings {
                    compression_codec: *codec,
                    ..slatedb::Settings::default()
                });
            if let Some(ours) = ours {
                builder = builder.with_block_transformer(Arc::new(TableBlocks::new(*ours)));
            }
            let db = builder.build().await.unwrap();
            for i in 0..300 {
                db.put(format!("{run}/{i:04}").as_bytes(), value(i))
                    .await
                    .unwrap();
            }
            db.flush_with_options(slatedb::config::FlushOptions {
                flush_type: slatedb::config::FlushType::MemTable,
            })
            .await
            .unwrap();
            db.close().await.unwrap();
        }
        let db = slatedb::Db::builder("db", Arc::clone(&store))
            .with_settings(slatedb::Settings {
                compression_codec: Compression::Zstd.codec(),
                ..slatedb::Settings::default()
            })
            .with_block_transformer(Arc::new(TableBlocks::new(Compression::Zstd)))
            .build()
            .await
            .unwrap();
        for run in 0..runs.len() {
            for i in 0..300 {
                let got = db.get(format!("{run}/{i:04}").as_bytes()).await.unwrap();
                assert_eq!(got.as_deref(), Some(&value(i)[..]), "run {run}, key {i}");
            }
        }
        db.close().await.unwrap();
    }
}
