use strata_codec::sealed::decode_sealed_range_into;

use super::body::{Body, HeadChunk, Older};
use super::frozen::RUN_MAX_SAMPLES;
use super::FREEZE_MIN_SAMPLES;
use crate::head::runs::{test_file, RunFiles};

#[test]
fn an_open_chunk_entry_stays_small() {
    // A series' chunk list holds `(bucket, HeadChunk)`: 80 bytes, the
    // allocator's class below 96 (144 with the older parts inline, 96
    // with the tail's count and first timestamp kept beside its bytes).
    assert!(std::mem::size_of::<(i64, HeadChunk)>() <= 80);
    assert!(
        std::mem::size_of::<Older>() <= 64,
        "the box in the 64-byte class"
    );
    let mut c = HeadChunk::default();
    c.append(1, 1.0);
    assert!(
        matches!(c.0, Body::Open { older: None, .. }),
        "a young chunk has nothing boxed"
    );
}

fn samples(n: i64) -> Vec<(i64, f64)> {
    (0..n)
        .map(|i| (1_000 + i * 15_000 + i % 3, (i as f64 * 0.37).sin() * 100.0))
        .collect()
}

fn all(c: &HeadChunk, mint: i64, maxt: i64) -> Vec<(i64, u64)> {
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    c.decode_range_into(mint, maxt, &mut ts, &mut vs).unwrap();
    ts.into_iter().zip(vs.iter().map(|v| v.to_bits())).collect()
}

#[test]
fn frozen_parts_read_like_the_tail() {
    let data = samples(1000);
    let mut plain = HeadChunk::default();
    let mut frozen = HeadChunk::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let f = test_file();
    for (i, &(t, v)) in data.iter().enumerate() {
        plain.append(t, v);
        frozen.append(t, v);
        if i % 97 == 0 {
            frozen.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs);
        }
    }
    // Ten freezes, one run: each merged into the one before.
    assert_eq!(frozen.older().frozen.len(), 1);
    assert!(!frozen.older().frozen.spilled(), "the one run is inline");
    assert_eq!(frozen.len(), 1000);
    assert_eq!(frozen.first_t(), plain.first_t());
    assert_eq!(frozen.last_t(), plain.last_t());
    assert!(frozen.heap_bytes() < plain.heap_bytes());
    for (mint, maxt) in [
        (i64::MIN, i64::MAX),
        (0, 0),
        (1_000, 1_000),
        (2_000_000, 9_000_000),
        (14_985_000, 15_000_000),
    ] {
        assert_eq!(
            all(&frozen, mint, maxt),
            all(&plain, mint, maxt),
            "{mint}..{maxt}"
        );
    }
    // Everything frozen, tail empty: still readable, still appendable.
    assert!(frozen.freeze(1, &f, &mut ts, &mut vs));
    assert_eq!(frozen.last_t(), plain.last_t());
    frozen.append(20_000_000, 1.0);
    plain.append(20_000_000, 1.0);
    assert_eq!(
        all(&frozen, i64::MIN, i64::MAX),
        all(&plain, i64::MIN, i64::MAX)
    );
}

#[test]
fn a_tail_closed_as_it_is_reads_the_same_and_merges_into_one_run() {
    let data = samples(300);
    let mut plain = HeadChunk::default();
    let mut c = HeadChunk::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let f = test_file();
    for (i, &(t, v)) in data.iter().enumerate() {
        plain.append(t, v);
        c.append(t, v);
        if i == 199 {
            assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        }
    }
    // No frozen run yet: nothing to close the cheap way.
    let mut young = HeadChunk::default();
    young.append(1, 1.0);
    assert!(young.close_start(&mut Vec::new()).is_none());

    let mut bytes = Vec::new();
    let closing = c.close_start(&mut bytes).unwrap();
    let runs = closing.write(&f, &bytes).unwrap();
    assert!(c.close_finish(closing, runs));
    assert!(c.is_closed());
    assert!(c.has_tail_run());
    assert_eq!(c.older().frozen.len(), 2);
    assert_eq!(c.len(), 300);
    assert_eq!(c.first_t(), plain.first_t());
    assert_eq!(c.last_t(), plain.last_t());
    for (mint, maxt) in [
        (i64::MIN, i64::MAX),
        (data[150].0, data[250].0),
        (data[250].0, i64::MAX),
        (data[299].0, data[299].0),
    ] {
        assert_eq!(
            all(&c, mint, maxt),
            all(&plain, mint, maxt),
            "{mint}..{maxt}"
        );
    }
    let mut out = vec![0; 300];
    let mut out_v = vec![0.0; 300];
    assert_eq!(
        c.decode_range_to_slices(i64::MIN, i64::MAX, &mut out, &mut out_v)
            .unwrap(),
        300
    );
    assert_eq!(
        out.iter()
            .zip(&out_v)
            .map(|(t, v)| (*t, v.to_bits()))
            .collect::<Vec<_>>(),
        all(&plain, i64::MIN, i64::MAX)
    );
    // A spill of runs in both formats is one segment in the sealed one.
    let spill = c.take_spill(1, &mut ts, &mut vs).unwrap();
    let (mut seg_ts, mut seg_vs) = (Vec::new(), Vec::new());
    decode_sealed_range_into(&spill.bytes, i64::MIN, i64::MAX, &mut seg_ts, &mut seg_vs).unwrap();
    assert_eq!(seg_ts.len(), 300);

    // A merge that finds the chunk changed leaves it as it is.
    let stale = c.merge_start().unwrap();
    let stale_runs = stale.write(&f, &mut ts, &mut vs).unwrap();
    let merging = c.merge_start().unwrap();
    let runs = merging.write(&f, &mut ts, &mut vs).unwrap();
    assert!(c.merge_finish(merging, runs));
    assert!(!c.has_tail_run());
    assert_eq!(c.older().frozen.len(), 1);
    assert!(!c.older().frozen.spilled(), "the one run inline again");
    assert!(!c.merge_finish(stale, stale_runs));
    assert_eq!(all(&c, i64::MIN, i64::MAX), all(&plain, i64::MIN, i64::MAX));
    assert!(c.merge_start().is_none());

    // A straggler opens the chunk again, after both runs.
    c.append(data[299].0 + 1, 5.0);
    plain.append(data[299].0 + 1, 5.0);
    assert_eq!(all(&c, i64::MIN, i64::MAX), all(&plain, i64::MIN, i64::MAX));
}

#[test]
fn a_closing_that_finds_the_chunk_changed_leaves_it() {
    let data = samples(100);
    let mut c = HeadChunk::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let f = test_file();
    for &(t, v) in &data[..99] {
        c.append(t, v);
    }
    assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
    c.append(data[99].0, data[99].1);
    let mut bytes = Vec::new();
    let closing = c.close_start(&mut bytes).unwrap();
    let runs = closing.write(&f, &bytes).unwrap();
    c.append(data[99].0 + 1, 1.0);
    assert!(!c.close_finish(closing, runs));
    assert!(!c.is_closed());
    assert_eq!(c.len(), 101);
    assert!(!c.has_tail_run());
}

#[test]
fn spilled_parts_leave_their_range_and_the_rest() {
    let data = samples(1000);
    let mut c = HeadChunk::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let f = test_file();
    for &(t, v) in &data[..600] {
        c.append(t, v);
        c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs);
    }
    assert!(c.take_spill(601, &mut ts, &mut vs).is_none());
    assert!(
        c.take_spill(0, &mut ts, &mut vs).is_none(),
        "0 never spills"
    );
    let spill = c.take_spill(480, &mut ts, &mut vs).unwrap();
    assert_eq!((spill.first_t, spill.samples), (data[0].0, 600));
    // Appends and freezes go on while the segment is being written: the
    // freeze merges newer samples into the run the segment was taken
    // from, and `spilled` keeps them.
    for &(t, v) in &data[600..] {
        c.append(t, v);
    }
    assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
    assert_eq!(c.older().frozen.len(), 1);
    c.spilled(&spill);
    assert_eq!(c.spilled_segments(), &[(data[0].0, data[599].0)]);
    assert_eq!(c.spilled_len(), 600);
    assert_eq!(c.len(), 400);
    assert_eq!(c.first_t(), Some(data[0].0));
    assert_eq!(c.last_t(), Some(data[999].0));
    // The segment and what the chunk still holds make up every sample.
    let (mut seg_ts, mut seg_vs) = (Vec::new(), Vec::new());
    decode_sealed_range_into(&spill.bytes, i64::MIN, i64::MAX, &mut seg_ts, &mut seg_vs).unwrap();
    let mut got: Vec<(i64, u64)> = seg_ts
        .into_iter()
        .zip(seg_vs.iter().map(|v| v.to_bits()))
        .collect();
    got.extend(all(&c, i64::MIN, i64::MAX));
    let want: Vec<(i64, u64)> = data.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    assert_eq!(got, want);
}

#[test]
fn a_run_stops_merging_at_its_cap() {
    let data = samples(i64::from(RUN_MAX_SAMPLES) + 300);
    let mut c = HeadChunk::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let f = test_file();
    for (i, &(t, v)) in data.iter().enumerate() {
        c.append(t, v);
        if i % 100 == 99 {
            assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
        }
    }
    let runs: Vec<u32> = c.older().frozen.iter().map(|p| p.len()).collect();
    assert_eq!(runs, [1000, 300], "the eleventh freeze starts a run");
    assert_eq!(c.len(), RUN_MAX_SAMPLES + 300);
    let want: Vec<(i64, u64)> = data.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    assert_eq!(all(&c, i64::MIN, i64::MAX), want);
    // A spill of two runs is one segment of both.
    let spill = c.take_spill(1, &mut ts, &mut vs).unwrap();
    let (mut seg_ts, mut seg_vs) = (Vec::new(), Vec::new());
    decode_sealed_range_into(&spill.bytes, i64::MIN, i64::MAX, &mut seg_ts, &mut seg_vs).unwrap();
    assert_eq!(seg_ts.len(), data.len() - 24);
    c.spilled(&spill);
    assert_eq!((c.len(), c.spilled_len()), (24, RUN_MAX_SAMPLES + 276));
}

#[test]
fn frozen_runs_live_in_the_buckets_file_until_the_chunk_goes() {
    let files = RunFiles::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let data = samples(300);
    let mut c = HeadChunk::default();
    for &(t, v) in &data {
        c.append(t, v);
    }
    let tail_only = c.heap_bytes();
    assert!(c.freeze(1, &files.file(3), &mut ts, &mut vs));
    let in_file = files.bytes();
    assert!(in_file > 0, "the run is written to the file");
    assert!(
        c.heap_bytes() < tail_only / 2,
        "the heap keeps where the run is, not its bytes: {} of {tail_only}",
        c.heap_bytes()
    );
    // A second freeze merges into the run: a new run in the file, the
    // one it replaces left there.
    c.append(99_000_000, 1.0);
    assert!(c.freeze(1, &files.file(3), &mut ts, &mut vs));
    assert!(files.bytes() > in_file);
    let mut want: Vec<(i64, u64)> = data.iter().map(|&(t, v)| (t, v.to_bits())).collect();
    want.push((99_000_000, 1.0f64.to_bits()));
    assert_eq!(all(&c, i64::MIN, i64::MAX), want);
    drop(c);
    assert_eq!(files.bytes(), 0, "the file went with the chunk's runs");
}

#[test]
fn an_ended_chunk_closes_without_its_box() {
    let data = samples(300);
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let f = test_file();
    let mut c = HeadChunk::default();
    for &(t, v) in &data[..200] {
        c.append(t, v);
    }
    assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
    for &(t, v) in &data[200..] {
        c.append(t, v);
    }
    let open = all(&c, i64::MIN, i64::MAX);
    let open_heap = c.heap_bytes();
    assert!(c.freeze_ended(&f, &mut ts, &mut vs));
    assert!(c.is_closed(), "tail frozen: closed");
    assert!(
        c.heap_bytes() + std::mem::size_of::<Older>() <= open_heap,
        "the box went: {} of {open_heap}",
        c.heap_bytes()
    );
    assert_eq!(all(&c, i64::MIN, i64::MAX), open);
    assert_eq!(all(&c, data[10].0, data[250].0), open[10..=250].to_vec());
    assert_eq!(
        (c.len(), c.first_t(), c.last_t()),
        (300, Some(data[0].0), Some(data[299].0))
    );
    // A spill and its drop work on the closed chunk in place.
    let spill = c.take_spill(1, &mut ts, &mut vs).unwrap();
    c.spilled(&spill);
    assert!(c.is_closed());
    assert_eq!((c.len(), c.spilled_len()), (0, 300));
    assert_eq!(c.spilled_segments(), &[(data[0].0, data[299].0)]);
    // A sample appended opens it again, and every sample still reads.
    let mut d = HeadChunk::default();
    for &(t, v) in &data {
        d.append(t, v);
    }
    d.freeze(1, &f, &mut ts, &mut vs);
    d.close();
    assert!(d.is_closed());
    d.append(99_000_000, 2.5);
    assert!(!d.is_closed());
    let mut want = open.clone();
    want.push((99_000_000, 2.5f64.to_bits()));
    assert_eq!(all(&d, i64::MIN, i64::MAX), want);
    assert_eq!(d.len(), 301);
    // A young chunk (nothing frozen) stays open: it has no box to drop.
    let mut y = HeadChunk::default();
    y.append(1, 1.0);
    y.close();
    assert!(!y.is_closed());
}

#[test]
fn short_tails_stay() {
    let mut c = HeadChunk::default();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let f = test_file();
    assert!(!c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
    for (t, v) in samples(i64::from(FREEZE_MIN_SAMPLES) - 1) {
        c.append(t, v);
    }
    assert!(!c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
    assert_eq!(c.len(), FREEZE_MIN_SAMPLES - 1);
}

#[test]
fn a_freeze_outside_the_lock_gives_way_to_a_sample_appended_meanwhile() {
    let f = test_file();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let (mut tail_ts, mut tail_vs) = (Vec::new(), Vec::new());
    let mut c = HeadChunk::default();
    for i in 0..100 {
        c.append(i * 5_000, (i % 9) as f64);
    }
    assert!(c.freeze(FREEZE_MIN_SAMPLES, &f, &mut ts, &mut vs));
    for i in 100..130 {
        c.append(i * 5_000, (i % 9) as f64);
    }
    let want = |c: &HeadChunk| {
        let (mut t, mut v) = (Vec::new(), Vec::new());
        c.decode_into(&mut t, &mut v).unwrap();
        (t, v)
    };

    // A sample comes between the start and the finish: the runs
    // written are left unread, the chunk as it is.
    let freezing = c.freeze_start(1, &mut tail_ts, &mut tail_vs).unwrap();
    assert_eq!(tail_ts.len(), 30);
    let runs = freezing
        .write(&f, &tail_ts, &tail_vs, &mut ts, &mut vs)
        .unwrap();
    c.append(130 * 5_000, 1.0);
    let before = want(&c);
    assert!(!c.freeze_finish(freezing, runs));
    assert_eq!(want(&c), before);
    assert_eq!(c.tail().len(), 31);

    // Nothing between: the tail merges into the run.
    let freezing = c.freeze_start(1, &mut tail_ts, &mut tail_vs).unwrap();
    let runs = freezing
        .write(&f, &tail_ts, &tail_vs, &mut ts, &mut vs)
        .unwrap();
    assert!(c.freeze_finish(freezing, runs));
    assert_eq!(c.tail().len(), 0);
    assert_eq!(c.len(), 131);
    assert_eq!(c.older().frozen.len(), 1, "merged into the one run");
    assert_eq!(want(&c), before);
}
