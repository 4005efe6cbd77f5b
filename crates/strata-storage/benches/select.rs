//! A rule's selections on the whole engine: the head of 1,000 node_exporter
//! hosts (`STRATA_BENCH_HOSTS`) (80 series each, node_exporter's label names and values), five
//! minutes of 10 s samples, and the selectors node-mixin's rules run every
//! evaluation: every host's idle CPUs over `[5m]`, and every host's
//! filesystems, as `Storage::select` answers them to the query engine.
//!
//! `cargo bench -p strata-storage --bench select` (release build).
// Bench code may unwrap and index: a panic is a failed run.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use object_store::local::LocalFileSystem;
use object_store::ObjectStore;
use strata_codec::{Label, MatchOp, Matcher};
use strata_storage::{Clock, Durability, IngestSeries, ManualClock, SystemClock, Writer};

/// The `strata` binary's allocator, so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Hosts, 1,000 unless `STRATA_BENCH_HOSTS` says.
fn hosts() -> usize {
    std::env::var("STRATA_BENCH_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}
const CPUS: usize = 8;
const MODES: [&str; 8] = [
    "idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user",
];
const FILESYSTEMS: [(&str, &str, &str); 4] = [
    ("/dev/nvme0n1p1", "ext4", "/"),
    ("/dev/nvme0n1p2", "ext4", "/var/lib/docker"),
    ("tmpfs", "tmpfs", "/run"),
    ("/dev/nvme1n1", "xfs", "/data"),
];
const STEP_MS: i64 = 10_000;
const SAMPLES: i64 = 30;

fn host(h: usize) -> Label {
    Label::new("instance", format!("host-{h:04}.example.internal:9100"))
}

/// One host's series: its CPUs by mode and its filesystems.
fn host_series(h: usize, t: i64) -> Vec<IngestSeries> {
    let sample = |v: f64| vec![(t, v)];
    let mut out = Vec::new();
    for cpu in 0..CPUS {
        for mode in MODES {
            out.push(IngestSeries {
                labels: vec![
                    Label::new("__name__", "node_cpu_seconds_total"),
                    Label::new("cpu", cpu.to_string()),
                    host(h),
                    Label::new("job", "node"),
                    Label::new("mode", mode),
                ],
                samples: sample((t / 1000) as f64 * 0.5),
                exemplars: Vec::new(),
                histograms: Vec::new(),
            });
        }
    }
    for name in ["node_filesystem_avail_bytes", "node_filesystem_size_bytes"] {
        for (device, fstype, mountpoint) in FILESYSTEMS {
            out.push(IngestSeries {
                labels: vec![
                    Label::new("__name__", name),
                    Label::new("device", device),
                    Label::new("fstype", fstype),
                    host(h),
                    Label::new("job", "node"),
                    Label::new("mountpoint", mountpoint),
                ],
                samples: sample(1e11 - (t / 1000) as f64),
                exemplars: Vec::new(),
                histograms: Vec::new(),
            });
        }
    }
    out
}

fn matcher(op: MatchOp, name: &str, value: &str) -> Matcher {
    Matcher::new(op, name, value).unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let hosts = hosts();
    let now = SystemClock.now_ms();
    let first = now - now % STEP_MS - SAMPLES * STEP_MS;
    let clock = Arc::new(ManualClock::new(first));
    let db = rt.block_on(async {
        let store: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let db = Writer::open(store, "db", Default::default(), clock.clone())
            .await
            .unwrap();
        for k in 0..SAMPLES {
            let t = first + k * STEP_MS;
            clock.set(t);
            for some in (0..hosts).collect::<Vec<_>>().chunks(25) {
                let request = some.iter().flat_map(|&h| host_series(h, t)).collect();
                db.write(request, Durability::Applied).await.unwrap();
            }
        }
        db
    });
    let (mint, maxt) = (first + (SAMPLES - 30) * STEP_MS, first + SAMPLES * STEP_MS);

    let mut g = c.benchmark_group("select");
    g.sample_size(20);
    let cases = [
        (
            "idle_cpus_5m",
            vec![
                matcher(MatchOp::Equal, "__name__", "node_cpu_seconds_total"),
                matcher(MatchOp::Equal, "job", "node"),
                matcher(MatchOp::Equal, "mode", "idle"),
            ],
            hosts * CPUS,
        ),
        (
            "filesystems_5m",
            vec![
                matcher(MatchOp::Equal, "__name__", "node_filesystem_avail_bytes"),
                matcher(MatchOp::Equal, "job", "node"),
                matcher(MatchOp::NotEqual, "fstype", ""),
                matcher(MatchOp::NotEqual, "mountpoint", ""),
            ],
            hosts * FILESYSTEMS.len(),
        ),
    ];
    for (name, matchers, want) in cases {
        g.throughput(Throughput::Elements(want as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let got = rt
                    .block_on(db.storage().select(&matchers, mint, maxt))
                    .unwrap();
                assert_eq!(got.len(), want);
                black_box(got)
            });
        });
    }
    g.finish();
    rt.block_on(db.close()).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
