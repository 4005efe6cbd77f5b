//! Frozen runs kept out of the heap: each bucket's runs go to a file of
//! their own, and a chunk holds where its run is (see [`RunAt`]).
//!
//! A run is written once, when a freeze makes it, and read when the series
//! is read, frozen again or sealed. In the heap it was one allocation per
//! chunk, of a size that changes at each freeze (the run re-encoded with
//! the tail merged in): at 1 M series about 100 MB of runs, and the
//! allocator's pages they left part-used. In a file it is the page cache's:
//! the kernel keeps it while memory is free and reads it back when not.
//!
//! The files are scratch, not storage: every sample is in the log, and a
//! restart rebuilds the head from it. A file is created unlinked (`TMPDIR`,
//! see `tempfile::tempfile`) and goes away with its last run: the runs of
//! a bucket hold it, and the seal drops them. A run that a freeze replaces
//! stays in the file, unread, until then.
//!
//! Where no file can be made, the runs of a bucket go to pages in memory
//! instead, still one block per megabyte rather than one per chunk.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;

/// Bits of a [`RunAt`] for the run's sample count.
const SAMPLE_BITS: u32 = 12;
/// Bits of a [`RunAt`] for the run's byte length.
const LEN_BITS: u32 = 16;
/// The bit of a [`RunAt`] that marks a run in the tail's format.
const TAIL_BIT: u64 = 1 << 63;
/// The largest offset a [`RunAt`] holds: 32 GiB a bucket.
const MAX_OFFSET: u64 = (1 << (63 - SAMPLE_BITS - LEN_BITS)) - 1;
/// The longest run, in bytes.
pub(crate) const MAX_RUN_BYTES: usize = (1 << LEN_BITS) - 1;
/// The most samples in a run.
pub(crate) const MAX_RUN_SAMPLES: u32 = (1 << SAMPLE_BITS) - 1;
/// A page of a bucket's runs kept in memory.
const PAGE: usize = 1 << 20;

/// Where a run is in its file, its length, its sample count and its
/// format, in one word: the chunk's frozen run takes no more room than the
/// boxed bytes it replaced.
///
/// A run is in the sealed format, or, written as a closed chunk's tail was
/// (see `HeadChunk::close_start`), in the tail's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunAt(u64);

impl RunAt {
    fn new(offset: u64, len: usize, samples: u32, tail: bool) -> Option<Self> {
        let len = u64::try_from(len)
            .ok()
            .filter(|&l| l <= MAX_RUN_BYTES as u64)?;
        (offset <= MAX_OFFSET && samples <= MAX_RUN_SAMPLES).then(|| {
            let format = if tail { TAIL_BIT } else { 0 };
            Self(
                format
                    | offset << (SAMPLE_BITS + LEN_BITS)
                    | len << SAMPLE_BITS
                    | u64::from(samples),
            )
        })
    }

    fn offset(self) -> u64 {
        (self.0 & !TAIL_BIT) >> (SAMPLE_BITS + LEN_BITS)
    }

    /// Whether the run is in the tail's format, not the sealed one.
    pub(crate) fn is_tail(self) -> bool {
        self.0 & TAIL_BIT != 0
    }

    fn len(self) -> usize {
        ((self.0 >> SAMPLE_BITS) & ((1 << LEN_BITS) - 1)) as usize
    }

    /// Samples in the run.
    pub(crate) fn samples(self) -> u32 {
        (self.0 & ((1 << SAMPLE_BITS) - 1)) as u32
    }
}

/// The runs of one bucket.
pub(crate) struct RunFile {
    backing: Backing,
    /// Bytes handed out so far: the next run's offset.
    end: AtomicU64,
    /// Bytes of the runs written.
    written: AtomicU64,
    /// Bytes of live runs in every file, to count this one's in.
    total: Arc<AtomicU64>,
}

enum Backing {
    #[cfg(unix)]
    File(std::fs::File),
    Memory(Mutex<Vec<Box<[u8]>>>),
}

impl RunFile {
    fn memory(total: Arc<AtomicU64>) -> Self {
        Self {
            backing: Backing::Memory(Mutex::new(Vec::new())),
            end: AtomicU64::new(0),
            written: AtomicU64::new(0),
            total,
        }
    }

    fn file(total: Arc<AtomicU64>) -> std::io::Result<Self> {
        Ok(Self {
            backing: file_backing()?,
            end: AtomicU64::new(0),
            written: AtomicU64::new(0),
            total,
        })
    }

    /// Writes `bytes`, a run of `samples` samples in the sealed format;
    /// `None` if it is too long for a [`RunAt`] or cannot be written (the
    /// caller keeps the samples where they were).
    pub(crate) fn write(&self, bytes: &[u8], samples: u32) -> Option<RunAt> {
        self.write_as(bytes, samples, false)
    }

    /// [`Self::write`] for a run in the tail's format.
    pub(crate) fn write_tail(&self, bytes: &[u8], samples: u32) -> Option<RunAt> {
        self.write_as(bytes, samples, true)
    }

    fn write_as(&self, bytes: &[u8], samples: u32, tail: bool) -> Option<RunAt> {
        // The length and the count must fit before any room is taken.
        RunAt::new(0, bytes.len(), samples, tail)?;
        let len = u64::try_from(bytes.len()).ok()?;
        let offset = match &self.backing {
            #[cfg(unix)]
            Backing::File(f) => {
                use std::os::unix::fs::FileExt;
                let offset = self.end.fetch_add(len, Ordering::Relaxed);
                if offset > MAX_OFFSET {
                    return None;
                }
                if let Err(e) = f.write_all_at(bytes, offset) {
                    warn_once(&e);
                    return None;
                }
                offset
            }
            Backing::Memory(pages) => {
                let mut pages = pages.lock();
                let end = self.end.load(Ordering::Relaxed);
                let page_end = u64::try_from(pages.len() * PAGE).ok()?;
                // A run never straddles two pages.
                let offset = if end + len > page_end || end == page_end {
                    let mut page = vec![0u8; PAGE].into_boxed_slice();
                    page.get_mut(..bytes.len())?.copy_from_slice(bytes);
                    pages.push(page);
                    page_end
                } else {
                    let page = pages.last_mut()?;
                    let at = usize::try_from(end).ok()? % PAGE;
                    page.get_mut(at..at + bytes.len())?.copy_from_slice(bytes);
                    end
                };
                self.end.store(offset + len, Ordering::Relaxed);
                offset
            }
        };
        let at = RunAt::new(offset, bytes.len(), samples, tail)?;
        self.written.fetch_add(len, Ordering::Relaxed);
        self.total.fetch_add(len, Ordering::Relaxed);
        Some(at)
    }

    /// Reads the run at `at` into `buf` (cleared first).
    pub(crate) fn read_into(&self, at: RunAt, buf: &mut Vec<u8>) -> std::io::Result<()> {
        buf.clear();
        buf.resize(at.len(), 0);
        match &self.backing {
            #[cfg(unix)]
            Backing::File(f) => {
                use std::os::unix::fs::FileExt;
                f.read_exact_at(buf, at.offset())
            }
            Backing::Memory(pages) => {
                let pages = pages.lock();
                let offset = usize::try_from(at.offset()).map_err(std::io::Error::other)?;
                let run = pages
                    .get(offset / PAGE)
                    .and_then(|p| p.get(offset % PAGE..offset % PAGE + at.len()))
                    .ok_or_else(|| std::io::Error::other("frozen run past its page"))?;
                buf.copy_from_slice(run);
                Ok(())
            }
        }
    }

    /// Reads the run at `at` and hands its bytes to `f`, through a buffer
    /// kept per thread.
    pub(crate) fn with_run<R>(&self, at: RunAt, f: impl FnOnce(&[u8]) -> R) -> std::io::Result<R> {
        super::alloc::with_scratch(|buf| {
            self.read_into(at, buf)?;
            Ok(f(buf))
        })
    }
}

impl Drop for RunFile {
    fn drop(&mut self) {
        self.total
            .fetch_sub(self.written.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

#[cfg(unix)]
fn file_backing() -> std::io::Result<Backing> {
    Ok(Backing::File(tempfile::tempfile()?))
}

#[cfg(not(unix))]
fn file_backing() -> std::io::Result<Backing> {
    Err(std::io::Error::other("frozen runs in files need unix"))
}

fn warn_once(e: &std::io::Error) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            error = %e,
            "cannot write the head's frozen runs to a file in the temporary folder (TMPDIR); \
             keeping them in memory"
        );
    }
}

/// A head's run files, one per bucket with frozen runs.
#[derive(Default)]
pub(crate) struct RunFiles {
    files: Mutex<FxHashMap<i64, Weak<RunFile>>>,
    /// Bytes written to the files still held.
    total: Arc<AtomicU64>,
    /// Runs kept in memory (no file could be made, or asked for).
    in_memory: AtomicBool,
}

impl RunFiles {
    /// Runs kept in memory pages, not files.
    #[cfg(test)]
    pub(crate) fn in_memory() -> Self {
        let files = Self::default();
        files.in_memory.store(true, Ordering::Relaxed);
        files
    }

    /// The file of `bucket`'s runs, made if there is none.
    pub(crate) fn file(&self, bucket: i64) -> Arc<RunFile> {
        let mut files = self.files.lock();
        if let Some(f) = files.get(&bucket).and_then(Weak::upgrade) {
            return f;
        }
        files.retain(|_, f| f.strong_count() > 0);
        let file = if self.in_memory.load(Ordering::Relaxed) {
            RunFile::memory(Arc::clone(&self.total))
        } else {
            RunFile::file(Arc::clone(&self.total)).unwrap_or_else(|e| {
                warn_once(&e);
                self.in_memory.store(true, Ordering::Relaxed);
                RunFile::memory(Arc::clone(&self.total))
            })
        };
        let file = Arc::new(file);
        files.insert(bucket, Arc::downgrade(&file));
        file
    }

    /// Bytes in the files still held (runs a freeze replaced included).
    pub(crate) fn bytes(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

/// The files of the buckets one pass over the series freezes into, each
/// looked up once.
pub(crate) struct BucketFiles<'a> {
    runs: &'a RunFiles,
    held: Vec<(i64, Arc<RunFile>)>,
}

impl<'a> BucketFiles<'a> {
    pub(crate) fn new(runs: &'a RunFiles) -> Self {
        Self {
            runs,
            held: Vec::new(),
        }
    }

    /// The file of `bucket`'s runs.
    pub(crate) fn get(&mut self, bucket: i64) -> Arc<RunFile> {
        if let Some((_, f)) = self.held.iter().find(|(b, _)| *b == bucket) {
            return Arc::clone(f);
        }
        let f = self.runs.file(bucket);
        self.held.push((bucket, Arc::clone(&f)));
        f
    }
}

/// A run file of its own, for tests: the chunks that hold its runs keep
/// it.
#[cfg(test)]
pub(crate) fn test_file() -> Arc<RunFile> {
    RunFiles::default().file(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn runs_read_back_from_files_and_pages() {
        for files in [RunFiles::default(), RunFiles::in_memory()] {
            let f = files.file(7);
            let runs: Vec<Vec<u8>> = (0..3000u32)
                .map(|i| (0..(i % 700) as u8).map(|b| b ^ (i as u8)).collect())
                .collect();
            let ats: Vec<RunAt> = runs
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    if i % 3 == 0 {
                        f.write_tail(r, i as u32 % 1024).unwrap()
                    } else {
                        f.write(r, i as u32 % 1024).unwrap()
                    }
                })
                .collect();
            for (i, (r, at)) in runs.iter().zip(&ats).enumerate() {
                assert_eq!(at.samples(), i as u32 % 1024);
                assert_eq!(at.is_tail(), i % 3 == 0);
                assert_eq!(f.with_run(*at, <[u8]>::to_vec).unwrap(), *r);
            }
            assert!(Arc::ptr_eq(&f, &files.file(7)), "one file a bucket");
            assert!(!Arc::ptr_eq(&f, &files.file(8)));
            let written: u64 = runs.iter().map(|r| r.len() as u64).sum();
            assert_eq!(files.bytes(), written);
            drop(f);
            assert_eq!(files.bytes(), 0, "the file goes with its last run");
        }
    }

    #[test]
    fn a_run_too_long_is_refused() {
        let files = RunFiles::in_memory();
        let f = files.file(0);
        assert!(f.write(&vec![1; MAX_RUN_BYTES + 1], 1).is_none());
        assert!(f.write(&[1, 2, 3], MAX_RUN_SAMPLES + 1).is_none());
        assert!(f.write(&vec![1; MAX_RUN_BYTES], MAX_RUN_SAMPLES).is_some());
    }
}
