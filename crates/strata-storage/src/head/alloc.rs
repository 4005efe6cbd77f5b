//! How the head allocates: buffers of exactly their length, a scratch
//! buffer per thread, and room for one more chunk.

/// Moves `v` into an allocation of exactly its length, if it has more.
///
/// Not `Vec::shrink_to_fit` (nor `into_boxed_slice`, which shrinks): they
/// ask the allocator to shrink the block in place, and mimalloc keeps a
/// block that stays at least half used. A frozen run encoded into a growing
/// buffer and boxed stayed in the 512-byte block it grew to at 300 bytes,
/// and a series' chunk list, shrunk from two entries to one at the seal, in
/// 160 bytes; the head's accounting and the process's allocation count both
/// saw the smaller size, and the rest showed up only in RSS.
pub(crate) fn fit<T>(v: &mut Vec<T>) {
    if v.len() < v.capacity() {
        let mut exact = Vec::with_capacity(v.len());
        exact.append(v);
        *v = exact;
    }
}

/// `v` boxed in an allocation of exactly its length (see [`fit`]).
pub(crate) fn fit_box<T>(mut v: Vec<T>) -> Box<[T]> {
    fit(&mut v);
    v.into_boxed_slice()
}

/// Runs `f` with an empty byte buffer kept per thread (a new one if the
/// thread's is in use): for bytes that are copied or written elsewhere
/// before `f` returns.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|buf| match buf.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            f(&mut buf)
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// Makes room for one more chunk and no more. A series holds one or two
/// (the open bucket, and the one before for the grace); a `Vec` growing by
/// itself would make room for four at its first push, 576 bytes where 144
/// are used, the largest part of a young series' memory.
pub(crate) fn room_for_one<T>(chunks: &mut Vec<T>) {
    if chunks.len() == chunks.capacity() {
        chunks.reserve_exact(1);
    }
}
