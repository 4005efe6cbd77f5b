//! Reading one 64 KiB table block back, the unit a long-range query that
//! misses the block cache pays for: SlateDB's zstd (a decoder made per
//! block) against `table_compression` (a decoder kept per thread, and a
//! block zstd barely shrinks stored as it is).
//!
//! Two blocks: sealed chunks of random-walk gauges (what compacted blocks
//! hold: compact already) and labels as log records spell them (what
//! shrinks).
//!
//! `cargo bench -p strata-storage --bench table_blocks`
// Bench code may unwrap and index: a panic is a failed run.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use strata_storage::table_compression::{compress, decompress};

const BLOCK: usize = 64 << 10;

use strata_codec::rand::SplitMix64;

/// Sealed chunks of a day of random-walk gauges a minute apart, one after
/// the other up to a block.
fn chunks_block() -> Vec<u8> {
    let mut rng = SplitMix64::new(7);
    let mut out = Vec::with_capacity(BLOCK + (16 << 10));
    let mut chunk = Vec::new();
    while out.len() < BLOCK {
        let ts: Vec<i64> = (0..1440).map(|i| 1_700_000_000_000 + i * 60_000).collect();
        let mut v = 0.0;
        let vs: Vec<f64> = ts
            .iter()
            .map(|_| {
                v += rng.unit() - 0.5;
                v
            })
            .collect();
        chunk.clear();
        strata_codec::encode_sealed(&ts, &vs, &mut chunk);
        out.extend_from_slice(&chunk);
    }
    out.truncate(BLOCK);
    out
}

/// Label sets as a log record's new series spell them, up to a block.
fn labels_block() -> Vec<u8> {
    let mut rng = SplitMix64::new(11);
    let mut out = Vec::with_capacity(BLOCK + 256);
    while out.len() < BLOCK {
        let n = rng.next_u64();
        out.extend_from_slice(
            format!(
                "__name__\0node_cpu_seconds_total\0cpu\0{}\0instance\0host-{:04}:9100\0job\0node\0mode\0{}\0",
                n % 64,
                (n >> 8) % 5000,
                ["idle", "user", "system", "iowait"][(n >> 24) as usize % 4]
            )
            .as_bytes(),
        );
    }
    out.truncate(BLOCK);
    out
}

fn blocks(c: &mut Criterion) {
    let mut g = c.benchmark_group("table_block_read");
    g.throughput(Throughput::Bytes(BLOCK as u64));
    for (name, block) in [("chunks", chunks_block()), ("labels", labels_block())] {
        // SlateDB's codec: every block a zstd frame, decoded by a decoder
        // made for it.
        let slatedb = zstd::bulk::compress(&block, 3).unwrap();
        g.bench_with_input(
            BenchmarkId::new("slatedb_zstd", name),
            &slatedb,
            |b, frame| b.iter(|| zstd::stream::decode_all(&frame[..]).unwrap()),
        );
        let ours = Bytes::from(compress(&block).unwrap());
        assert_eq!(decompress(ours.clone()).unwrap(), block);
        eprintln!(
            "{name}: {} bytes; slatedb zstd {} bytes, table_compression {} bytes",
            block.len(),
            slatedb.len(),
            ours.len()
        );
        g.bench_with_input(
            BenchmarkId::new("table_compression", name),
            &ours,
            |b, data| b.iter(|| decompress(data.clone()).unwrap()),
        );
    }
    g.finish();
    // Writing: every block of a level-0 table and of a compaction's output
    // is compressed once.
    let mut g = c.benchmark_group("table_block_write");
    g.throughput(Throughput::Bytes(BLOCK as u64));
    for (name, block) in [("chunks", chunks_block()), ("labels", labels_block())] {
        g.bench_with_input(
            BenchmarkId::new("table_compression", name),
            &block,
            |b, data| b.iter(|| compress(data).unwrap()),
        );
    }
    g.finish();
}

criterion_group!(benches, blocks);
criterion_main!(benches);
