//! `kill -9` of the `strata` binary at random moments while clients write
//! over HTTP, round after round on one data folder, with every durability
//! promise checked after each restart:
//!
//! - a write acknowledged with `X-Strata-Durability: durable` survives;
//! - a write acknowledged at the default (Applied) level is lost only if it
//!   was acknowledged within the last flush interval before the kill (plus
//!   [`MAX_LOSS_SPAN`]'s margin), and what survives of a round is a prefix
//!   of what each client sent;
//! - nothing is present that was never sent, torn, duplicated or changed;
//! - what an earlier check found is still there;
//! - the restarted server takes writes again and the series continue; a
//!   request that failed at the kill is sent again unchanged and answers
//!   2xx, also when the kill had kept it (its samples are then duplicates).
//!
//! `STRATA_CRASH_ROUNDS` sets the number of kills (3); `STRATA_CRASH_SEED`
//! repeats a run's kill moments.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::disallowed_methods
)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use strata_codec::rand::SplitMix64;

use common::{free_port, http_request, inproc, now_ms, query_matrix, StrataProcess};

const METRIC: &str = "crash_rounds";
const FLUSH_INTERVAL: &str = "100ms";
/// Longest time before the kill at which a lost Applied write may have been
/// acknowledged: the flush interval, a flush under way and scheduling slack
/// on a loaded machine.
const MAX_LOSS_SPAN: Duration = Duration::from_millis(500);
/// The clients: name and whether they ask for Durable. Each owns its series.
const WRITERS: [(&str, bool); 4] = [("d0", true), ("d1", true), ("a0", false), ("a1", false)];
const SERIES_PER_WRITER: u32 = 25;
/// Samples per series in one request, at consecutive milliseconds.
const SAMPLES_PER_SERIES: i64 = 8;
const SAMPLES_PER_BATCH: usize = SERIES_PER_WRITER as usize * SAMPLES_PER_SERIES as usize;
/// Pause between an Applied client's requests (a Durable one waits for the
/// flush anyway): keeps what every check reads back to about a million
/// samples after 20 rounds.
const APPLIED_PAUSE: Duration = Duration::from_millis(5);
/// When the kill comes, in milliseconds after the clients start.
const KILL_AFTER_MS: std::ops::Range<u64> = 300..2500;
/// Requests each client sends after the last round, before a graceful stop.
const FINAL_REQUESTS: usize = 3;

/// The value of series `i` at a writer's sample number `seq`: a binary
/// fraction, so it prints and parses back exactly, and names its series.
fn value(seq: u64, i: u32) -> f64 {
    seq as f64 + f64::from(i) / 64.0
}

/// What a check last found of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Unchecked,
    Present,
    /// Acknowledged at Applied and not found after a kill.
    Lost,
}

/// One request body: on each of its writer's series, `SAMPLES_PER_SERIES`
/// samples at consecutive milliseconds from `first_ts`, sample `j` with
/// sample number `first_seq + j`.
struct Batch {
    first_ts: i64,
    first_seq: u64,
    /// Round of the last send, and how many sends.
    sent_round: u32,
    sends: u32,
    /// Moment of its 2xx answer.
    acked_at: Option<Instant>,
    fate: Fate,
}

/// A remote-write client owning its series, with everything it sent.
struct Writer {
    name: &'static str,
    durable: bool,
    batches: Vec<Batch>,
    /// The batch whose request failed: sent again first, unchanged.
    unacked: Option<usize>,
    next_seq: u64,
    next_ts: i64,
}

/// Why a client stopped: the moment its request failed and the error.
type Failure = (Instant, String);

impl Writer {
    fn new(name: &'static str, durable: bool) -> Self {
        Self {
            name,
            durable,
            batches: Vec::new(),
            unacked: None,
            next_seq: 0,
            next_ts: 0,
        }
    }

    /// The labels of series `i`, sorted by name.
    fn labels(&self, i: u32) -> Vec<(String, String)> {
        vec![
            ("__name__".into(), METRIC.into()),
            ("i".into(), format!("{i:02}")),
            ("writer".into(), self.name.into()),
        ]
    }

    fn body(&self, b: &Batch) -> Vec<u8> {
        let series = (0..SERIES_PER_WRITER)
            .map(|i| {
                let samples: Vec<(i64, f64)> = (0..SAMPLES_PER_SERIES)
                    .map(|j| (b.first_ts + j, value(b.first_seq + j as u64, i)))
                    .collect();
                let labels = self.labels(i);
                let pairs: Vec<(&str, &str)> = labels
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.as_str()))
                    .collect();
                inproc::ts(&pairs, &samples)
            })
            .collect();
        inproc::body(series)
    }

    /// Sends the failed batch again, or a new one near the real time (the
    /// store expires data by the real clock) after everything sent so far.
    fn send(&mut self, port: u16, round: u32) -> Result<(), Failure> {
        let idx = match self.unacked.take() {
            Some(idx) => idx,
            None => {
                let first_ts = self.next_ts.max(now_ms());
                self.batches.push(Batch {
                    first_ts,
                    first_seq: self.next_seq,
                    sent_round: round,
                    sends: 0,
                    acked_at: None,
                    fate: Fate::Unchecked,
                });
                self.next_ts = first_ts + SAMPLES_PER_SERIES;
                self.next_seq += SAMPLES_PER_SERIES as u64;
                self.batches.len() - 1
            }
        };
        self.batches[idx].sent_round = round;
        self.batches[idx].sends += 1;
        let body = self.body(&self.batches[idx]);
        let mut headers = vec![
            ("Content-Type", "application/x-protobuf"),
            ("Content-Encoding", "snappy"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ];
        if self.durable {
            headers.push(("X-Strata-Durability", "durable"));
        }
        match http_request(port, "POST", "/api/v1/write", &headers, &body) {
            Ok(r) if (200..300).contains(&r.status) => {
                self.batches[idx].acked_at = Some(Instant::now());
                Ok(())
            }
            Ok(r) => panic!(
                "{}: batch at {} answered {}: {}",
                self.name,
                self.batches[idx].first_ts,
                r.status,
                r.text()
            ),
            Err(e) => {
                self.unacked = Some(idx);
                Err((Instant::now(), e.to_string()))
            }
        }
    }

    /// Sends until a request fails or `limit` requests are acknowledged.
    fn run(&mut self, port: u16, round: u32, limit: Option<usize>) -> Option<Failure> {
        for _ in 0..limit.unwrap_or(usize::MAX) {
            if let Err(failure) = self.send(port, round) {
                return Some(failure);
            }
            if !self.durable {
                std::thread::sleep(APPLIED_PAUSE);
            }
        }
        None
    }
}

/// What one check counted, in samples unless named otherwise.
#[derive(Debug, Default)]
struct Figures {
    durable_acked: usize,
    durable_lost: usize,
    applied_acked: usize,
    applied_lost: usize,
    applied_lost_batches: usize,
    /// From the earliest lost Applied acknowledgement to the kill.
    loss_span: Option<Duration>,
    in_flight: usize,
    in_flight_kept: usize,
    /// Requests sent again after a kill (each answered 2xx).
    resent: usize,
    /// Samples the query read back.
    read: usize,
}

impl Figures {
    fn add(&mut self, o: &Figures) {
        self.durable_acked += o.durable_acked;
        self.durable_lost += o.durable_lost;
        self.applied_acked += o.applied_acked;
        self.applied_lost += o.applied_lost;
        self.applied_lost_batches += o.applied_lost_batches;
        self.loss_span = self.loss_span.max(o.loss_span);
        self.in_flight += o.in_flight;
        self.in_flight_kept += o.in_flight_kept;
        self.resent += o.resent;
        self.read = o.read;
    }
}

/// Reads back every sample and holds it against what was sent and
/// acknowledged; records each batch's fate. `kill_at` is `None` after a
/// graceful stop, where nothing acknowledged may be missing.
fn check(port: u16, writers: &mut [Writer], round: u32, kill_at: Option<Instant>) -> Figures {
    let from = writers
        .iter()
        .filter_map(|w| w.batches.first())
        .map(|b| b.first_ts)
        .min()
        .expect("something was sent");
    let until = writers.iter().map(|w| w.next_ts).max().unwrap_or(from);
    let found = query_matrix(port, &format!("{METRIC}[{}ms]", until - from + 1000), until);
    let mut problems = Vec::new();
    let mut figures = Figures {
        read: found.values().map(Vec::len).sum(),
        ..Figures::default()
    };

    let mut per_writer: Vec<BTreeMap<u32, &Vec<(i64, String)>>> =
        writers.iter().map(|_| BTreeMap::new()).collect();
    for (labels, samples) in &found {
        let owner = labels
            .get("writer")
            .and_then(|n| writers.iter().position(|w| w.name == n.as_str()));
        let i = labels.get("i").and_then(|i| i.parse::<u32>().ok());
        let (Some(w), Some(i)) = (owner, i) else {
            problems.push(format!("series never sent: {labels:?}"));
            continue;
        };
        let want = writers[w].labels(i);
        if i >= SERIES_PER_WRITER || labels.clone().into_iter().ne(want) {
            problems.push(format!("series never sent: {labels:?}"));
            continue;
        }
        per_writer[w].insert(i, samples);
    }

    for (w, found) in writers.iter_mut().zip(per_writer) {
        let count = count_per_batch(w, &found, &mut problems);
        judge(w, &count, round, kill_at, &mut figures, &mut problems);
    }
    assert!(
        problems.is_empty(),
        "round {round}: {} problems, the first ones:\n{}",
        problems.len(),
        problems
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    figures
}

/// How many samples of each of `w`'s batches were found, checking that
/// each was sent, with its value, once.
fn count_per_batch(
    w: &Writer,
    found: &BTreeMap<u32, &Vec<(i64, String)>>,
    problems: &mut Vec<String>,
) -> Vec<usize> {
    let by_ts: BTreeMap<i64, usize> = w
        .batches
        .iter()
        .enumerate()
        .map(|(idx, b)| (b.first_ts, idx))
        .collect();
    let mut count = vec![0usize; w.batches.len()];
    for (&i, &samples) in found {
        if let Some(p) = samples.windows(2).find(|p| p[0].0 >= p[1].0) {
            problems.push(format!(
                "{} series {i}: timestamps {} then {}: duplicated or out of order",
                w.name, p[0].0, p[1].0
            ));
        }
        for (t, v) in samples {
            let batch = by_ts
                .range(..=*t)
                .next_back()
                .map(|(&first, &idx)| (idx, t - first))
                .filter(|&(_, j)| j < SAMPLES_PER_SERIES);
            let Some((idx, j)) = batch else {
                problems.push(format!("{} series {i}: sample at {t} never sent", w.name));
                continue;
            };
            let want = value(w.batches[idx].first_seq + j as u64, i);
            if v.parse::<f64>().map(f64::to_bits) != Ok(want.to_bits()) {
                problems.push(format!(
                    "{} series {i} at {t}: value {v}, sent {want}",
                    w.name
                ));
            }
            count[idx] += 1;
        }
    }
    count
}

/// Decides each batch's fate from what was found of it (`count`), against
/// what its writer was told; `kill_at` as for [`check`].
fn judge(
    w: &mut Writer,
    count: &[usize],
    round: u32,
    kill_at: Option<Instant>,
    figures: &mut Figures,
    problems: &mut Vec<String>,
) {
    // Survivors of this round must be a prefix of what was sent in it.
    let mut gap: Option<i64> = None;
    for (b, &n) in w.batches.iter_mut().zip(count) {
        let at = b.first_ts;
        if n != 0 && n != SAMPLES_PER_BATCH {
            problems.push(format!(
                "{} batch at {at}: {n} of {SAMPLES_PER_BATCH} samples: torn",
                w.name
            ));
        }
        let this_round = b.sent_round == round;
        if this_round {
            match (b.acked_at, w.durable) {
                (None, _) => figures.in_flight += 1,
                (Some(_), true) => figures.durable_acked += SAMPLES_PER_BATCH,
                (Some(_), false) => figures.applied_acked += SAMPLES_PER_BATCH,
            }
            if b.sends > 1 {
                figures.resent += 1;
            }
        }
        if n > 0 {
            match b.fate {
                Fate::Lost => problems.push(format!(
                    "{} batch at {at}: lost after an earlier kill, present now",
                    w.name
                )),
                _ if this_round => {
                    if let Some(g) = gap {
                        problems.push(format!(
                            "{} batch at {at} kept though the batch at {g} before it \
                                 is lost: survivors are not a prefix",
                            w.name
                        ));
                    }
                    if b.acked_at.is_none() {
                        figures.in_flight_kept += 1;
                    }
                }
                _ => {}
            }
            b.fate = Fate::Present;
            continue;
        }
        match (b.fate, b.acked_at) {
            (Fate::Present, _) => problems.push(format!(
                "{} batch at {at}: found by an earlier check, gone now",
                w.name
            )),
            (Fate::Lost, _) => {}
            (Fate::Unchecked, None) => {
                gap.get_or_insert(at);
            }
            (Fate::Unchecked, Some(acked)) => {
                gap.get_or_insert(at);
                b.fate = Fate::Lost;
                if w.durable {
                    figures.durable_lost += SAMPLES_PER_BATCH;
                    problems.push(format!(
                        "{} batch at {at}: acknowledged as Durable, lost",
                        w.name
                    ));
                    continue;
                }
                figures.applied_lost += SAMPLES_PER_BATCH;
                figures.applied_lost_batches += 1;
                let Some(kill_at) = kill_at else {
                    problems.push(format!(
                        "{} batch at {at}: acknowledged, lost without a crash",
                        w.name
                    ));
                    continue;
                };
                let span = kill_at.saturating_duration_since(acked);
                figures.loss_span = figures.loss_span.max(Some(span));
                if span > MAX_LOSS_SPAN {
                    problems.push(format!(
                        "{} batch at {at}: acknowledged at Applied {span:?} before the \
                             kill, lost (allowed: {MAX_LOSS_SPAN:?})",
                        w.name
                    ));
                }
            }
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a number: {e}"))
    })
}

fn ms(d: Option<Duration>) -> String {
    d.map_or("-".to_owned(), |d| format!("{} ms", d.as_millis()))
}

#[test]
fn kill9_rounds_keep_the_durability_promises() {
    let rounds = env_u64("STRATA_CRASH_ROUNDS").unwrap_or(3) as u32;
    let seed = env_u64("STRATA_CRASH_SEED").unwrap_or_else(|| now_ms() as u64);
    eprintln!("crash_rounds: {rounds} rounds, seed {seed} (STRATA_CRASH_SEED={seed} repeats the kill moments)");
    let mut rng = SplitMix64::new(seed);
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let env = [("STRATA_STORAGE_FLUSH_INTERVAL", FLUSH_INTERVAL)];
    let port = free_port();
    let mut server = StrataProcess::start_on(port, &data, &env);
    let mut writers: Vec<Writer> = WRITERS.iter().map(|&(n, d)| Writer::new(n, d)).collect();
    let mut total = Figures::default();
    let mut slowest_restart = Duration::ZERO;

    for round in 0..rounds {
        let delay = Duration::from_millis(rng.in_range(KILL_AFTER_MS));
        let (kill_at, failures) = std::thread::scope(|s| {
            let running: Vec<_> = writers
                .iter_mut()
                .map(|w| s.spawn(move || w.run(port, round, None)))
                .collect();
            std::thread::sleep(delay);
            let kill_at = Instant::now();
            server.kill9();
            let failures: Vec<Option<Failure>> = running
                .into_iter()
                .map(|h| h.join().expect("writer thread"))
                .collect();
            (kill_at, failures)
        });
        for (w, failure) in writers.iter().zip(failures) {
            let (at, e) = failure.expect("a client stops only when a request fails");
            assert!(
                at >= kill_at,
                "round {round}: {}: a request failed {:?} before the kill: {e}",
                w.name,
                kill_at - at
            );
        }
        let restart = Instant::now();
        // The killed server stays until the check is done: a failure prints
        // both logs.
        let killed = std::mem::replace(&mut server, StrataProcess::start_on(port, &data, &env));
        let restart = restart.elapsed();
        slowest_restart = slowest_restart.max(restart);
        let f = check(port, &mut writers, round, Some(kill_at));
        drop(killed);
        eprintln!(
            "round {round}: kill after {} ms; Durable {} acked, {} lost; Applied {} acked, \
             {} lost ({} requests), earliest lost ack {} before the kill; {} requests in \
             flight, {} of them kept; {} sent again, all answered 2xx; restart {} ms; \
             {} samples read back",
            delay.as_millis(),
            f.durable_acked,
            f.durable_lost,
            f.applied_acked,
            f.applied_lost,
            f.applied_lost_batches,
            ms(f.loss_span),
            f.in_flight,
            f.in_flight_kept,
            f.resent,
            restart.as_millis(),
            f.read,
        );
        total.add(&f);
    }

    // The series continue after the last restart, and a graceful stop
    // keeps every acknowledged write, Applied ones included.
    std::thread::scope(|s| {
        for w in writers.iter_mut() {
            s.spawn(move || {
                if let Some((_, e)) = w.run(port, rounds, Some(FINAL_REQUESTS)) {
                    panic!("{}: a request failed after the last restart: {e}", w.name);
                }
            });
        }
    });
    let status = server.stop();
    assert!(status.success(), "graceful stop exited with {status}");
    let server = StrataProcess::start_on(port, &data, &env);
    let f = check(port, &mut writers, rounds, None);
    assert_eq!(f.applied_lost + f.durable_lost, 0);
    drop(server);

    eprintln!(
        "crash_rounds: {rounds} rounds (seed {seed}): Durable {} samples acked, {} lost; \
         Applied {} acked, {} lost in {} requests, longest span from a lost ack to the kill {}; \
         {} requests in flight at a kill, {} of them kept; {} sent again after a restart, \
         all answered 2xx; slowest restart {} ms; \
         {} samples at the end, all as sent",
        total.durable_acked,
        total.durable_lost,
        total.applied_acked,
        total.applied_lost,
        total.applied_lost_batches,
        ms(total.loss_span),
        total.in_flight,
        total.in_flight_kept,
        total.resent + f.resent,
        slowest_restart.as_millis(),
        f.read,
    );
}
