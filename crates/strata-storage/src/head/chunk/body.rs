//! A head chunk and what it holds before its tail: open (it takes
//! samples, what is older boxed once it has any) or closed (its tail
//! frozen, what the box held kept inline).

use smallvec::SmallVec;
use strata_codec::TailChunk;

use super::frozen::FrozenRun;

pub(crate) struct HeadChunk(pub(super) Body);

pub(super) enum Body {
    /// A chunk that takes samples.
    Open {
        /// The newest samples, after every frozen one.
        tail: TailChunk,
        /// Frozen runs and spilled segments, once the chunk has any: most
        /// open chunks are younger than a freeze, and kept inline these made
        /// every series' chunk entry 144 bytes instead of 96.
        older: Option<Box<Older>>,
    },
    /// An ended bucket's chunk with its tail frozen (see
    /// `Head::freeze_ended`): what the box held, kept in the bytes
    /// the tail took. An ended bucket's chunks wait for their seal beside
    /// the open bucket's; without the box, each waits in its 80-byte entry
    /// alone (64 bytes less a series at the seal). A sample appended to it
    /// opens it again.
    Closed(Older),
}

impl Default for HeadChunk {
    fn default() -> Self {
        Self(Body::Open {
            tail: TailChunk::new(),
            older: None,
        })
    }
}

/// What a chunk holds before its tail.
pub(super) struct Older {
    /// Time ranges of the segments written to the store, oldest first, all
    /// before every sample still held.
    /// A boxed slice, not a `Vec`: a spill, which adds one, comes every
    /// few hundred samples, and 8 bytes less keep this box in the
    /// allocator's 64-byte class.
    pub(super) spilled: Box<[(i64, i64)]>,
    /// Samples in the spilled segments.
    pub(super) spilled_len: u32,
    /// Samples in the frozen runs.
    pub(super) frozen_len: u32,
    /// Older samples, oldest run first, each after the one before; the
    /// first inline.
    pub(super) frozen: SmallVec<[FrozenRun; 1]>,
}

impl Default for Older {
    fn default() -> Self {
        Self {
            spilled: Box::default(),
            spilled_len: 0,
            frozen_len: 0,
            frozen: SmallVec::new(),
        }
    }
}

/// What a chunk without a box holds before its tail: nothing.
static NO_OLDER: std::sync::LazyLock<Older> = std::sync::LazyLock::new(Older::default);

/// A closed chunk's tail: empty.
static NO_TAIL: std::sync::LazyLock<TailChunk> = std::sync::LazyLock::new(TailChunk::new);

impl HeadChunk {
    pub(super) fn older(&self) -> &Older {
        match &self.0 {
            Body::Open { older, .. } => older.as_deref().unwrap_or(&NO_OLDER),
            Body::Closed(older) => older,
        }
    }

    pub(super) fn older_mut(&mut self) -> &mut Older {
        match &mut self.0 {
            Body::Open { older, .. } => older.get_or_insert_with(Box::default),
            Body::Closed(older) => older,
        }
    }

    pub(super) fn tail(&self) -> &TailChunk {
        match &self.0 {
            Body::Open { tail, .. } => tail,
            Body::Closed(_) => &NO_TAIL,
        }
    }

    /// The tail, the chunk opened again if it was closed.
    pub(super) fn tail_mut(&mut self) -> &mut TailChunk {
        if let Body::Closed(older) = &mut self.0 {
            let older = Box::new(std::mem::take(older));
            self.0 = Body::Open {
                tail: TailChunk::new(),
                older: Some(older),
            };
        }
        match &mut self.0 {
            Body::Open { tail, .. } => tail,
            Body::Closed(_) => unreachable!("opened above"),
        }
    }

    /// Whether the chunk is closed (see [`Body::Closed`]).
    #[cfg(test)]
    pub(super) fn is_closed(&self) -> bool {
        matches!(self.0, Body::Closed(_))
    }

    /// Closes the chunk if its tail is empty and it holds something older:
    /// its box goes, what it held kept inline.
    pub(crate) fn close(&mut self) {
        if let Body::Open { tail, older } = &mut self.0 {
            if tail.is_empty() {
                if let Some(older) = older.take() {
                    self.0 = Body::Closed(*older);
                }
            }
        }
    }

    /// Appends a sample later than every sample held.
    pub(crate) fn append(&mut self, t: i64, v: f64) {
        self.tail_mut().append(t, v);
    }

    /// Samples held in memory (not those of spilled segments).
    pub(crate) fn len(&self) -> u32 {
        self.older().frozen_len + self.tail().len()
    }

    /// The first sample's time, spilled segments included.
    pub(crate) fn first_t(&self) -> Option<i64> {
        let older = self.older();
        if let Some(&(first, _)) = older.spilled.first() {
            return Some(first);
        }
        match older.frozen.first() {
            Some(p) => Some(p.first_t),
            None => self.tail().first_t(),
        }
    }

    /// The last sample's time, spilled segments included.
    pub(crate) fn last_t(&self) -> Option<i64> {
        self.tail()
            .last_t()
            .or_else(|| self.older().frozen.last().map(|p| p.last_t))
            .or_else(|| self.older().spilled.last().map(|&(_, last)| last))
    }

    /// Heap bytes held, for head-memory accounting.
    pub(crate) fn heap_bytes(&self) -> usize {
        let outside = |o: &Older| {
            o.spilled.len() * std::mem::size_of::<(i64, i64)>()
                + if o.frozen.spilled() {
                    o.frozen.capacity() * std::mem::size_of::<FrozenRun>()
                } else {
                    0
                }
        };
        match &self.0 {
            Body::Open { tail, older } => {
                older
                    .as_deref()
                    .map_or(0, |o| std::mem::size_of::<Older>() + outside(o))
                    + tail.heap_bytes()
            }
            Body::Closed(older) => outside(older),
        }
    }
}
