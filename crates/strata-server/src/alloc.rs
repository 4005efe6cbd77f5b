//! The process's allocator: mimalloc, with a count of the bytes allocated
//! and not yet freed.
//!
//! The count is of the blocks mimalloc hands out, whole: a block is the
//! request rounded up to a size class, and a shrink that leaves a block at
//! least half used keeps it in place (`Vec::shrink_to_fit`,
//! `into_boxed_slice`). Counted as asked, a boxed 300-byte frozen run that
//! stayed in the 512-byte block it grew to showed as 300 bytes, and the
//! rest as the allocator's free room.
//!
//! Only the head, the caches and the memtables have gauges of their own,
//! and RSS is more than their sum. The count tells the rest apart: live
//! allocations nothing else counts (requests in flight, SlateDB's and the
//! runtime's own), against the allocator's free room between them and
//! what is not heap at all (code, stacks). `/metrics` exports it as
//! `strata_heap_allocated_bytes`.
//!
//! Each thread adds to a counter of its own and moves it to the shared one
//! once it passes [`FLUSH_BYTES`] either way (and when the thread exits),
//! so an allocation costs a thread-local add, not a shared atomic.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// mimalloc, counting what it hands out.
pub struct CountingMiMalloc;

/// Bytes allocated and not yet freed, but for what threads hold unflushed.
static FLUSHED: AtomicI64 = AtomicI64::new(0);
/// Whether the process allocates through [`CountingMiMalloc`]: the count
/// means nothing otherwise (a test binary, a library user).
static IN_USE: AtomicBool = AtomicBool::new(false);

/// A thread's unflushed bytes: at most this much, either way.
const FLUSH_BYTES: i64 = 64 * 1024;

struct Local(Cell<i64>);

impl Drop for Local {
    fn drop(&mut self) {
        FLUSHED.fetch_add(self.0.get(), Ordering::Relaxed);
    }
}

thread_local! {
    static LOCAL: Local = const { Local(Cell::new(0)) };
}

#[inline]
fn note(delta: i64) {
    let kept = LOCAL.try_with(|l| {
        let v = l.0.get() + delta;
        if v.abs() >= FLUSH_BYTES {
            FLUSHED.fetch_add(v, Ordering::Relaxed);
            l.0.set(0);
        } else {
            l.0.set(v);
        }
    });
    // A thread past its thread-locals' teardown counts straight away.
    if kept.is_err() {
        FLUSHED.fetch_add(delta, Ordering::Relaxed);
    }
}

/// Bytes of the block at `p`, which mimalloc allocated.
#[inline]
#[allow(unsafe_code)]
fn block(p: *const u8) -> i64 {
    // SAFETY: `p` is a live allocation of mimalloc's.
    let n = unsafe { mimalloc::MiMalloc.usable_size(p) };
    i64::try_from(n).unwrap_or(i64::MAX)
}

// SAFETY: every call is passed on to mimalloc unchanged; the count only
// reads the layouts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingMiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is mimalloc's.
        let p = unsafe { mimalloc::MiMalloc.alloc(layout) };
        if !p.is_null() {
            note(block(p));
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let p = unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            note(block(p));
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-block(ptr));
        // SAFETY: as above.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) };
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let before = block(ptr);
        // SAFETY: as above.
        let p = unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            note(block(p) - before);
        }
        p
    }
}

/// Marks the count as the process's: called by the binary that installs
/// [`CountingMiMalloc`] as its global allocator.
pub fn counting() {
    IN_USE.store(true, Ordering::Relaxed);
}

/// Bytes allocated and not yet freed (give or take [`FLUSH_BYTES`] a
/// thread), or `None` when the process does not allocate through
/// [`CountingMiMalloc`].
pub fn allocated_bytes() -> Option<i64> {
    IN_USE
        .load(Ordering::Relaxed)
        .then(|| FLUSHED.load(Ordering::Relaxed))
}

/// Bytes mimalloc has committed from the OS: the blocks it handed out and
/// its free room between them; `None` as for [`allocated_bytes`].
#[allow(unsafe_code)]
pub fn committed_bytes() -> Option<u64> {
    if !IN_USE.load(Ordering::Relaxed) {
        return None;
    }
    let mut commit = 0usize;
    let null = std::ptr::null_mut();
    // SAFETY: mimalloc writes each non-null pointer's target, a usize.
    unsafe {
        libmimalloc_sys::mi_process_info(null, null, null, null, null, &mut commit, null, null);
    }
    u64::try_from(commit).ok()
}

/// Bytes of the C library's heap (what C code linked in, zstd's contexts
/// among it, allocates with `malloc`): its arenas and its mapped blocks.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn libc_heap_bytes() -> Option<u64> {
    // SAFETY: mallinfo2 takes no arguments and returns a plain struct.
    let info = unsafe { libc::mallinfo2() };
    u64::try_from(info.arena.saturating_add(info.hblkhd)).ok()
}

/// As above, where the C library has no `mallinfo2`.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn libc_heap_bytes() -> Option<u64> {
    None
}

/// mimalloc's `mi_option_purge_delay`: option 15 of its version 3, which
/// the binding does not name.
const PURGE_DELAY_OPTION: libmimalloc_sys::mi_option_t = 15;

/// How long mimalloc keeps memory freed back to its arenas before it
/// returns it to the operating system, in milliseconds: its default is
/// 1,000. What a seal and the compactions free is otherwise still resident
/// a second later, while the next of their steps allocates anew.
const PURGE_DELAY_MS: i64 = 100;

/// Sets mimalloc's purge delay to [`PURGE_DELAY_MS`] unless the
/// environment sets it (`MIMALLOC_PURGE_DELAY`, which mimalloc reads).
#[allow(unsafe_code)]
pub fn purge_sooner() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: options are plain integers mimalloc reads atomically.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY_OPTION, PURGE_DELAY_MS as std::ffi::c_long)
    }
}

/// mimalloc's purge delay now, in milliseconds.
#[cfg(test)]
#[allow(unsafe_code)]
// A C `long` is 32 bits on some targets.
#[allow(clippy::useless_conversion)]
fn purge_delay_ms() -> i64 {
    // SAFETY: as above.
    i64::from(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY_OPTION) })
}

/// Gives back the calling thread's free room in mimalloc now.
#[allow(unsafe_code)]
pub fn collect_thread() {
    // SAFETY: mi_collect only walks the calling thread's own heap.
    unsafe { libmimalloc_sys::mi_collect(false) }
}

/// [`collect_thread`], at most once a second on this thread: for a thread
/// going idle (a runtime's worker parking, a background thread between
/// passes), which may happen many times a second. A collection walks the
/// thread's pages: at 1 M series the process's CPU was the same with it
/// (`docs/benchmarks.md`).
pub fn collect_thread_now_and_then() {
    thread_local! {
        static LAST: Cell<Option<std::time::Instant>> = const { Cell::new(None) };
    }
    let now = std::time::Instant::now();
    let due = LAST.with(|last| {
        let due = last
            .get()
            .is_none_or(|t| now.duration_since(t) >= std::time::Duration::from_secs(1));
        if due {
            last.set(Some(now));
        }
        due
    });
    if due {
        collect_thread();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count, this thread's unflushed part included.
    fn count() -> i64 {
        LOCAL.with(|l| l.0.get()) + FLUSHED.load(Ordering::Relaxed)
    }

    #[test]
    fn the_purge_delay_is_shortened_unless_the_environment_sets_it() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // Option 15 is the purge delay: mimalloc 3's default is 1,000 ms.
        assert_eq!(purge_delay_ms(), 1000);
        purge_sooner();
        assert_eq!(purge_delay_ms(), PURGE_DELAY_MS);
    }

    #[test]
    #[allow(unsafe_code)]
    fn counts_what_is_allocated_until_it_is_freed() {
        // The test binary's own allocator is another: only this test
        // allocates through the counting one.
        let layout = Layout::from_size_align(1 << 20, 8).unwrap();
        let before = count();
        // SAFETY: a non-zero size; freed below with its layout.
        let p = unsafe { CountingMiMalloc.alloc(layout) };
        assert!(!p.is_null());
        // A size class an eighth apart at most.
        let in_class = |n: i64, asked: i64| n >= asked && n <= asked + asked / 8;
        assert!(in_class(count() - before, 1 << 20), "{}", count() - before);
        // SAFETY: allocated above with this layout.
        let p = unsafe { CountingMiMalloc.realloc(p, layout, 3 << 20) };
        assert!(!p.is_null());
        assert!(in_class(count() - before, 3 << 20), "{}", count() - before);
        // SAFETY: reallocated above to this size.
        unsafe { CountingMiMalloc.dealloc(p, Layout::from_size_align(3 << 20, 8).unwrap()) };
        assert_eq!(count(), before);
        // Small ones stay in the thread's part until it passes the flush
        // size, and count as their size class: 100 bytes take a 112-byte
        // block.
        let small = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: as above.
        let q = unsafe { CountingMiMalloc.alloc(small) };
        assert_eq!(count() - before, 112);
        // A shrink mimalloc does in place (the block stays at least half
        // used) frees nothing, and the count says so.
        // SAFETY: allocated above with this layout.
        let q = unsafe { CountingMiMalloc.realloc(q, small, 60) };
        assert!(!q.is_null());
        assert_eq!(count() - before, 112);
        // SAFETY: reallocated above to this size.
        unsafe { CountingMiMalloc.dealloc(q, Layout::from_size_align(60, 8).unwrap()) };
        assert_eq!(count(), before);
        assert_eq!(allocated_bytes(), None, "not this binary's allocator");
    }
}
