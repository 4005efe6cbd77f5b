//! Threads of low priority for background work, and what they do as they
//! go idle: the workers a seal encodes on, the runtime SlateDB's
//! compactions run on, and the allocator's hook.

/// What a background thread calls when it has finished a piece of work
/// and is about to wait: the process's allocator gives back that thread's
/// free room (see [`set_idle_hook`]).
static IDLE_HOOK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Sets what background threads call as they go idle: a seal's worker
/// after each job, the late pass and the head freezer after each pass, the
/// compaction of sealed buckets into blocks after each batch of series,
/// the compaction runtime's worker each time it parks (many times a second
/// through a compaction: the hook limits its own cost). The allocator
/// keeps free room per thread and looks at it again only when that thread
/// allocates: a thread that freed a seal's or a compaction's buffers and
/// then waits holds their pages until its next piece of work.
pub fn set_idle_hook(hook: fn()) {
    let _ = IDLE_HOOK.set(hook);
}

/// Calls the idle hook, if one is set.
pub(crate) fn idle() {
    if let Some(hook) = IDLE_HOOK.get() {
        hook();
    }
}

/// The runtime SlateDB's compactions run on: one thread at the sealer's
/// lower priority, shared by every database the process opens. On the
/// request runtime a compaction's merge held a worker for as long as each
/// step ran, and requests queued behind it (the coordinator's included)
/// waited; at a lower priority it takes the CPU ingest leaves.
pub(crate) fn compaction_runtime() -> Option<tokio::runtime::Handle> {
    static RUNTIME: std::sync::OnceLock<Option<tokio::runtime::Runtime>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("strata-compactor")
                .on_thread_start(lower_priority)
                .on_thread_park(idle)
                .enable_all()
                .build()
                .map_err(|e| {
                    tracing::warn!(error = %e, "no runtime of its own for compaction; it shares the request runtime");
                })
                .ok()
        })
        .as_ref()
        .map(|r| r.handle().clone())
}

/// How long an idle worker of [`run_on_worker`] waits for work before it
/// exits.
const WORKER_IDLE: std::time::Duration = std::time::Duration::from_secs(900);

type Job = Box<dyn FnOnce() + Send>;

/// Idle workers of [`run_on_worker`], each behind a channel of no capacity:
/// a send succeeds only if the worker takes the job.
static IDLE_WORKERS: parking_lot::Mutex<Vec<std::sync::mpsc::SyncSender<Job>>> =
    parking_lot::Mutex::new(Vec::new());

/// Runs `f` on a background thread of low priority; the receiver gets its
/// result (or its panic). The threads stay for a while after their work
/// ([`WORKER_IDLE`]) and take the next: the allocator keeps free room per
/// thread, and the pages of a thread that exits while blocks it allocated
/// are still in use (a seal's batches, freed later by the writes) are left
/// abandoned, their free room unused until some other thread takes them
/// over. A new thread per seal left that behind every bucket.
pub(crate) fn run_on_worker<T, F>(
    f: F,
) -> std::io::Result<tokio::sync::oneshot::Receiver<std::thread::Result<T>>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut job: Job = Box::new(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    loop {
        let Some(worker) = IDLE_WORKERS.lock().pop() else {
            break;
        };
        // A worker that has timed out has dropped its end: the job comes
        // back.
        match worker.send(job) {
            Ok(()) => return Ok(rx),
            Err(std::sync::mpsc::SendError(back)) => job = back,
        }
    }
    std::thread::Builder::new()
        .name("strata-worker".into())
        .spawn(move || {
            lower_priority();
            let (take, next) = std::sync::mpsc::sync_channel::<Job>(0);
            let mut job = job;
            loop {
                job();
                idle();
                IDLE_WORKERS.lock().push(take.clone());
                match next.recv_timeout(WORKER_IDLE) {
                    Ok(j) => job = j,
                    Err(_) => return,
                }
            }
        })?;
    Ok(rx)
}

/// Nice value of background threads: ingest and queries go first when CPU
/// is short.
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority (Linux: a thread's nice
/// value is its own). Best effort: sealing works at any priority.
#[allow(unsafe_code)]
pub(crate) fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take no pointers and only affect the
    // calling thread's scheduling.
    unsafe {
        let tid = libc::gettid();
        if libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE) != 0 {
            tracing::debug!("could not lower a background thread's priority");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_worker_takes_the_next_job_and_survives_a_panic() {
        let first = run_on_worker(|| std::thread::current().id())
            .unwrap()
            .await
            .unwrap()
            .unwrap();
        let panicked = run_on_worker(|| -> u32 { panic!("a job that fails") })
            .unwrap()
            .await
            .unwrap();
        assert!(panicked.is_err(), "the panic is the job's result");
        // Tests run side by side and share the workers: some worker that
        // ran an earlier job runs a later one.
        let mut threads = vec![first];
        for _ in 0..20 {
            let id = run_on_worker(|| std::thread::current().id())
                .unwrap()
                .await
                .unwrap()
                .unwrap();
            if threads.contains(&id) {
                return;
            }
            threads.push(id);
        }
        panic!("every job ran on a new thread: {threads:?}");
    }
}
