//! What the head holds in memory, by part, for `/metrics`.

use std::sync::Arc;

use super::chunk::HeadChunk;
use super::delta::Head;
use super::ids::IdList;
use super::series::MemSeries;

impl Head {
    /// Bytes of the frozen runs' files (see `runs.rs`): in the page cache
    /// or on disk, not in the heap.
    pub fn run_file_bytes(&self) -> u64 {
        self.runs.bytes()
    }

    /// Bytes held by the head, an estimate for `/metrics`: the sum of
    /// [`Self::memory`].
    pub fn memory_bytes(&self) -> usize {
        self.memory().total()
    }

    /// Bytes held by the head, by part (estimates: allocator rounding and
    /// hash-table control bytes are approximated).
    pub fn memory(&self) -> HeadMemory {
        let idx = self.index.read();
        let mut m = HeadMemory::default();
        for s in idx.by_id.values() {
            // The series and its `Arc` counts.
            m.series += std::mem::size_of::<MemSeries>() + 16;
            m.labels += s.labels.heap_bytes();
            let st = s.state.lock();
            m.chunks += st.chunks.capacity() * std::mem::size_of::<(i64, HeadChunk)>();
            m.chunks += st.chunks.iter().map(|(_, c)| c.heap_bytes()).sum::<usize>();
            m.extras += st.extras.heap_bytes();
        }
        // Hash tables: a key, a value and a control byte per slot; the
        // B-tree about a key and a value per entry, nodes two-thirds full.
        let slot = |k: usize, v: usize| k + v + 1;
        let ptr = std::mem::size_of::<Arc<MemSeries>>();
        m.index += idx.by_hash.capacity() * slot(8, ptr);
        m.index += idx.collisions.capacity() * slot(8, 24);
        m.index += idx.by_id.heap_bytes();
        m.index += idx.postings.capacity() * slot(16, 32);
        for (name, values) in &idx.postings {
            m.index += name.len() + values.capacity() * slot(16, std::mem::size_of::<IdList>());
            for (value, ids) in values {
                m.index += value.len() + ids.heap_bytes();
            }
        }
        // The process's table of label values (see `labels.rs`).
        m.labels += super::labels::value_table_bytes();
        m.index += self
            .released
            .read()
            .iter()
            .map(|r| r.heap_bytes())
            .sum::<usize>();
        m
    }
}

/// The head's bytes by part (see [`Head::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeadMemory {
    /// The series' own structs.
    pub series: usize,
    /// Their packed labels.
    pub labels: usize,
    /// Open chunks: frozen runs, tails, spilled ranges.
    pub chunks: usize,
    /// Out-of-order and late samples.
    pub extras: usize,
    /// Maps by hash and id, and the postings.
    pub index: usize,
}

impl HeadMemory {
    pub fn total(&self) -> usize {
        self.series + self.labels + self.chunks + self.extras + self.index
    }
}
