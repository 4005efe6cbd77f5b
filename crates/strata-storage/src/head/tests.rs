use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use strata_codec::{Label, LabelPairs};

use super::alloc::fit_box;
use super::index::find;
use super::series::staggered;
use super::*;

fn labels(v: &str) -> Vec<Label> {
    vec![Label::new("__name__", "m"), Label::new("k", v)]
}

#[test]
fn fit_moves_a_vec_into_a_new_allocation_of_its_length() {
    // Grown by pushes to more than it holds, as an encoder leaves it.
    let mut v: Vec<u8> = Vec::new();
    for i in 0..300u32 {
        v.push(i as u8);
    }
    assert!(v.capacity() > v.len());
    let (grown, want) = (v.as_ptr(), v.clone());
    fit(&mut v);
    assert_eq!(v, want);
    assert_eq!(v.capacity(), 300);
    // Not shrunk in place: an allocator may keep a block that stays
    // half used, and the fit is for the block's sake.
    assert_ne!(v.as_ptr(), grown);
    // Already exact: left where it is.
    let exact = v.as_ptr();
    fit(&mut v);
    assert_eq!(v.as_ptr(), exact);
    let b = fit_box(want.iter().chain(want.iter()).copied().collect::<Vec<u8>>());
    assert_eq!(b.len(), 600);
    assert_eq!(&b[..300], &want[..]);
}

#[test]
fn staggered_thresholds_spread_consecutive_series_over_half_again() {
    assert_eq!(staggered(0, 7), 0, "0 stays off");
    let mut bins = [0u32; 8];
    for id in 1..=1000 {
        let t = staggered(480, id);
        assert!((480..720).contains(&t), "{t}");
        bins[((t - 480) / 30) as usize] += 1;
    }
    // 1,000 consecutive ids (a target's series) fall evenly, 125 per
    // eighth of the range.
    assert!(bins.iter().all(|&n| (110..=140).contains(&n)), "{bins:?}");
    assert_eq!(staggered(480, 42), staggered(480, 42), "fixed per series");
}

#[test]
fn a_series_with_its_arc_counts_fits_the_112_byte_class() {
    assert!(std::mem::size_of::<MemSeries>() + 16 <= 112);
}

#[test]
fn keys_written_round_to_the_second() {
    let c = Arc::new(AtomicUsize::new(0));
    let s = MemSeries::new(1, SeriesLabels::new(&labels("a")[..]), true, NOT_WRITTEN, c);
    assert_eq!(s.keys_written_ms(), NOT_WRITTEN);
    s.note_keys_written(1_700_000_123_456);
    assert_eq!(s.keys_written_ms(), 1_700_000_123_000);
    s.note_keys_written(1_600_000_000_000);
    assert_eq!(s.keys_written_ms(), 1_700_000_123_000, "never goes back");
    s.note_keys_written(0);
    assert_eq!(s.keys_written_ms(), 1_700_000_123_000);
    let at_zero = MemSeries::new(
        2,
        SeriesLabels::new(&labels("b")[..]),
        true,
        0,
        Arc::new(AtomicUsize::new(0)),
    );
    assert_eq!(at_zero.keys_written_ms(), 0, "written at 0 is written");
}

#[test]
fn same_labels_same_series() {
    let head = Head::new(1, None);
    let (a, new_a) = head.get_or_create(&labels("x"));
    let (b, new_b) = head.get_or_create(&labels("x"));
    let (c, _) = head.get_or_create(&labels("y"));
    assert!(new_a && !new_b);
    assert_eq!(a.id, b.id);
    assert_ne!(a.id, c.id);
}

#[test]
fn hash_collisions_are_told_apart() {
    // Force two label sets into one hash bucket.
    let head = Head::new(1, None);
    let c = Arc::new(AtomicUsize::new(0));
    let s1 = Arc::new(MemSeries::new(
        1,
        SeriesLabels::new(&labels("a")[..]),
        true,
        0,
        Arc::clone(&c),
    ));
    let s2 = Arc::new(MemSeries::new(
        2,
        SeriesLabels::new(&labels("b")[..]),
        true,
        0,
        c,
    ));
    {
        let mut idx = head.index.write();
        idx.insert(42, s1);
        idx.insert(42, s2);
    }
    let idx = head.index.read();
    assert_eq!(find(&idx, 42, &labels("b")).map(|s| s.id), Some(2));
    assert_eq!(find(&idx, 42, &labels("a")).map(|s| s.id), Some(1));
    assert!(find(&idx, 42, &labels("c")).is_none());
}

fn append_one(s: &MemSeries, t: i64) {
    let out = s.append(
        &[(t, 1.0)],
        &AppendPolicy::strict(0, 3_600_000),
        |_, _, _| {},
    );
    assert_eq!(out.appended, 1, "{out:?}");
}

#[test]
fn a_seal_drops_idle_series_from_maps_and_postings() {
    let head = Head::new(1, None);
    let hour = 3_600_000;
    let (a, _) = head.get_or_create(&labels("a"));
    let (b, _) = head.get_or_create(&labels("b"));
    let (c, _) = head.get_or_create(&labels("c"));
    append_one(&a, 10);
    append_one(&b, 10);
    append_one(&b, hour + 10);
    append_one(&c, hour + 20);
    // A colliding series beside `a`, first under the hash.
    let hash = labels_hash(&labels("a"));
    let active = Arc::new(AtomicUsize::new(0));
    let d = Arc::new(MemSeries::new(
        99,
        SeriesLabels::new(&labels("d")[..]),
        true,
        0,
        active,
    ));
    head.index.write().insert(hash, Arc::clone(&d));
    append_one(&d, hour + 40);
    assert_eq!(head.mark_sealed(0), 1, "only a goes");
    assert_eq!(head.num_series(), 3);
    assert!(head.get(&labels("a")).is_none());
    assert_eq!(head.select_ids(&[]), vec![b.id, c.id, 99]);
    let by_k = |v: &str| {
        head.select_ids(&[
            strata_codec::Matcher::new(strata_codec::MatchOp::Equal, "k", v).unwrap(),
        ])
    };
    assert!(by_k("a").is_empty());
    assert_eq!(by_k("b"), vec![b.id]);
    {
        let idx = head.index.read();
        assert!(!idx.postings.get("k").unwrap().contains_key("a"));
        // The colliding series took a's place under the hash.
        assert_eq!(idx.by_hash.get(&hash).map(|s| s.id), Some(99));
        assert!(!idx.collisions.contains_key(&hash));
    }
    // The cache keeps what was dropped.
    assert_eq!(head.recent().id(hash), Some(a.id));
    assert_eq!(
        head.recent().labels(a.id).map(|l| l.to_labels()),
        Some(labels("a"))
    );

    // A write that resolved `a` before the seal finds it dropped, and
    // puts it back as it was.
    let out = a.append(
        &[(hour + 30, 2.0)],
        &AppendPolicy::strict(1, hour),
        |_, _, _| {},
    );
    assert!(out.series_dropped && out.appended == 0);
    let live = head.revive(&a);
    assert!(Arc::ptr_eq(&live, &a));
    append_one(&live, hour + 30);
    assert_eq!(head.get(&labels("a")).map(|s| s.id), Some(a.id));
    assert_eq!(by_k("a"), vec![a.id]);
    // Reviving what the head holds again returns the head's.
    let (e, _) = head.get_or_create(&labels("e"));
    assert_eq!(
        head.mark_sealed(1),
        5,
        "e (idle); a, b, c and d (bucket 1 sealed)"
    );
    assert_eq!(head.num_series(), 0);
    let (e2, origin) = head.get_or_create_as(&labels("e"), Some(e.id));
    assert_eq!((e2.id, origin), (e.id, Origin::Returned));
    assert!(Arc::ptr_eq(&head.revive(&e), &e2));
}

#[test]
fn an_ended_buckets_short_tail_is_frozen_and_the_open_one_is_not() {
    let head = Head::new(1, None);
    let hour = 3_600_000;
    let policy = AppendPolicy::strict(0, hour);
    let at = |from: i64, n: i64| -> Vec<(i64, f64)> {
        (0..n).map(|i| (from + i * 5_000, (i % 7) as f64)).collect()
    };
    let (s, _) = head.get_or_create(&labels("a"));
    let (short, _) = head.get_or_create(&labels("b"));
    // Bucket 0: 100 samples, frozen as usual, then 10 more in the tail;
    // bucket 1: 10 in the tail.
    assert_eq!(s.append(&at(0, 100), &policy, |_, _, _| {}).appended, 100);
    assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 1);
    assert_eq!(
        s.append(&at(500_000, 10), &policy, |_, _, _| {}).appended,
        10
    );
    assert_eq!(s.append(&at(hour, 10), &policy, |_, _, _| {}).appended, 10);
    // A series with a few samples only: frozen, its chunk would grow.
    assert_eq!(short.append(&at(0, 5), &policy, |_, _, _| {}).appended, 5);
    let bytes = |b: usize| s.state.lock().chunks[b].1.heap_bytes();
    let (ended_before, open_before) = (bytes(0), bytes(1));
    let short_before = short.state.lock().chunks[0].1.heap_bytes();

    // Below the freeze threshold, nothing freezes.
    assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 0);
    // While bucket 0 is the open one by the clock, a series with
    // samples of bucket 1 has its bucket 0 chunk frozen and closed: it
    // takes no more samples in order. One without stays open.
    assert_eq!(head.freeze_ended(0), 1, "a has moved on to bucket 1");
    assert!(bytes(0) < ended_before, "{} -> {}", ended_before, bytes(0));
    assert_eq!(bytes(0), 0, "closed: one run inline, no box, no tail");
    assert_eq!(bytes(1), open_before, "the open bucket's tail stays");
    assert_eq!(short.state.lock().chunks[0].1.heap_bytes(), short_before);
    assert_eq!(head.freeze_ended(0), 0, "nothing left to freeze");
    // Once bucket 0 is over by the clock, the short one is closed too
    // (it has no runs: its few samples stay in the tail).
    assert_eq!(head.freeze_ended(1), 0);
    assert_eq!(short.state.lock().chunks[0].1.heap_bytes(), short_before);

    // Every sample reads back.
    let want = [at(0, 100), at(500_000, 10)].concat();
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    s.state.lock().chunks[0]
        .1
        .decode_into(&mut ts, &mut vs)
        .unwrap();
    assert_eq!(ts, want.iter().map(|p| p.0).collect::<Vec<_>>());
    assert_eq!(vs, want.iter().map(|p| p.1).collect::<Vec<_>>());
}

#[test]
fn a_moved_series_ended_chunk_is_closed_as_it_is_then_merged() {
    let head = Head::new(1, None);
    let hour = 3_600_000;
    let policy = AppendPolicy::strict(0, hour);
    let at = |from: i64, n: i64| -> Vec<(i64, f64)> {
        (0..n)
            .map(|i| (from + i * 5_000, (i % 7) as f64 * 1.25))
            .collect()
    };
    let (s, _) = head.get_or_create(&labels("a"));
    let (stays, _) = head.get_or_create(&labels("b"));
    for x in [&s, &stays] {
        assert_eq!(x.append(&at(0, 100), &policy, |_, _, _| {}).appended, 100);
    }
    assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 2);
    for x in [&s, &stays] {
        assert_eq!(
            x.append(&at(500_000, 10), &policy, |_, _, _| {}).appended,
            10
        );
    }
    assert_eq!(s.append(&at(hour, 3), &policy, |_, _, _| {}).appended, 3);
    let bytes = |x: &MemSeries, b: usize| x.state.lock().chunks[b].1.heap_bytes();
    let (ended_before, stays_before) = (bytes(&s, 0), bytes(&stays, 0));
    let open_before = bytes(&s, 1);

    // Only the series with samples of bucket 1 is closed.
    assert_eq!(head.close_ended(0), 1);
    assert_eq!(bytes(&stays, 0), stays_before, "b has not moved on");
    assert_eq!(bytes(&s, 1), open_before, "the open bucket's tail stays");
    assert!(
        bytes(&s, 0) < ended_before,
        "{ended_before} -> {}",
        bytes(&s, 0)
    );
    assert_eq!(head.close_ended(0), 0, "nothing left to close");
    let read = |x: &MemSeries| {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        x.state.lock().chunks[0]
            .1
            .decode_into(&mut ts, &mut vs)
            .unwrap();
        ts.into_iter().zip(vs).collect::<Vec<_>>()
    };
    let want = [at(0, 100), at(500_000, 10)].concat();
    assert_eq!(read(&s), want);

    // The merge makes the two runs one, in the sealed format: no
    // heap beyond the entry.
    assert_eq!(head.merge_closed(), 1);
    assert_eq!(bytes(&s, 0), 0, "closed: one run inline, no box, no tail");
    assert_eq!(read(&s), want);
    assert_eq!(head.merge_closed(), 0);
    assert_eq!(head.freeze_ended(0), 0, "nothing left to freeze");
}

#[test]
fn an_append_that_opens_a_later_bucket_names_the_ended_one_for_the_writer_to_close() {
    let head = Head::new(1, None);
    let hour = 3_600_000;
    let policy = AppendPolicy::strict(0, hour);
    let at = |from: i64, n: i64| -> Vec<(i64, f64)> {
        (0..n).map(|i| (from + i * 5_000, i as f64 * 0.5)).collect()
    };
    let (s, _) = head.get_or_create(&labels("a"));
    let first = s.append(&at(0, 100), &policy, |_, _, _| {});
    assert_eq!(first.ended, None, "the first chunk ends none");
    assert_eq!(head.freeze_tails(FREEZE_MIN_SAMPLES), 1);
    assert_eq!(
        s.append(&at(500_000, 10), &policy, |_, _, _| {}).ended,
        None
    );
    let next = s.append(&at(hour, 2), &policy, |_, _, _| {});
    assert_eq!(next.ended, Some(0));
    assert_eq!(
        s.append(&at(hour + 10_000, 1), &policy, |_, _, _| {}).ended,
        None
    );

    let before = s.state.lock().chunks[0].1.heap_bytes();
    assert!(head.close_ended_chunk(&s, 0));
    assert!(s.state.lock().chunks[0].1.heap_bytes() < before);
    assert!(!head.close_ended_chunk(&s, 0), "closed already");
    assert!(!head.close_ended_chunk(&s, 7), "no such chunk");
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    s.state.lock().chunks[0]
        .1
        .decode_into(&mut ts, &mut vs)
        .unwrap();
    let want = [at(0, 100), at(500_000, 10)].concat();
    assert_eq!(ts.into_iter().zip(vs).collect::<Vec<_>>(), want);
    assert_eq!(head.merge_closed(), 1);

    // A series without frozen runs keeps its few samples in the tail.
    let (short, _) = head.get_or_create(&labels("b"));
    short.append(&at(0, 3), &policy, |_, _, _| {});
    let next = short.append(&at(hour, 1), &policy, |_, _, _| {});
    assert_eq!(next.ended, Some(0));
    assert!(!head.close_ended_chunk(&short, 0));
}

#[test]
fn get_many_agrees_with_get() {
    let head = Head::new(1, None);
    let known: Vec<_> = (0..40).map(|i| labels(&format!("k{i}"))).collect();
    for l in &known {
        head.get_or_create(l);
    }
    let asked: Vec<_> = (0..60)
        .map(|i| labels(&format!("k{}", i * 7 % 80)))
        .collect();
    let got = head.get_many(asked.iter().map(|l| &l[..]));
    assert_eq!(got.len(), asked.len());
    for (l, g) in asked.iter().zip(&got) {
        assert_eq!(g.as_ref().map(|s| s.id), head.get(l).map(|s| s.id));
    }
    assert!(got.iter().any(Option::is_none) && got.iter().any(Option::is_some));
}

#[test]
fn a_replay_skips_spilled_samples_in_order_and_keeps_the_rest() {
    let head = Head::new(1, None);
    let hour = 3_600_000;
    let (s, _) = head.get_or_create(&labels("a"));
    // Bucket 1's samples up to 1h + 300 s were spilled before a crash.
    s.restore_spilled(1, vec![(hour, hour + 300_000)], 21);
    let policy = AppendPolicy {
        late_from: Some(0),
        replay: true,
        ..AppendPolicy::strict(0, hour)
    };
    // The log, in the order it was written: bucket 0's end, bucket
    // 1's spilled samples, one of them retried (kept beside the chunk
    // when first written, as no segment could be checked), then newer.
    let mut log: Vec<(i64, f64)> = vec![(hour - 30_000, 1.0), (hour - 15_000, 2.0)];
    log.extend((0..=20).map(|i| (hour + i * 15_000, f64::from(i as u32))));
    log.push((hour + 150_000, 10.0));
    log.extend((21..=24).map(|i| (hour + i * 15_000, f64::from(i as u32))));
    let out = s.append(&log, &policy, |_, _, _| {});
    // Bucket 0's two in order into a chunk before bucket 1's, bucket
    // 1's four after the segment, and the retry beside the chunk; the
    // 21 spilled ones skipped.
    assert_eq!((out.appended, out.extra, out.rejected), (7, 1, 0));
    let st = s.state.lock();
    let chunks: Vec<(i64, u32, u32)> = st
        .chunks
        .iter()
        .map(|(b, c)| (*b, c.len(), c.spilled_len()))
        .collect();
    assert_eq!(chunks, vec![(0, 2, 0), (1, 4, 21)]);
    assert_eq!(st.last_t, hour + 24 * 15_000);
    drop(st);
    // After the replay the last spilled sample is not newer: no change.
    s.raise_last(hour + 300_000, 20.0);
    assert_eq!(s.state.lock().last_t, hour + 24 * 15_000);
    // With nothing replayed after the segment, it is the last sample.
    let (r, _) = head.get_or_create(&labels("r"));
    r.restore_spilled(1, vec![(hour, hour + 300_000)], 21);
    r.raise_last(hour + 300_000, 20.0);
    let st = r.state.lock();
    assert_eq!(
        (st.last_t, st.last_v_bits),
        (hour + 300_000, 20f64.to_bits())
    );
}

#[test]
fn get_many_looks_past_a_colliding_first_series() {
    let head = Head::new(1, None);
    let c = Arc::new(AtomicUsize::new(0));
    let hash = labels_hash(&labels("b"));
    let first = MemSeries::new(
        1,
        SeriesLabels::new(&labels("a")[..]),
        true,
        0,
        Arc::clone(&c),
    );
    let second = MemSeries::new(2, SeriesLabels::new(&labels("b")[..]), true, 0, c);
    {
        let mut idx = head.index.write();
        idx.insert(hash, Arc::new(first));
        idx.insert(hash, Arc::new(second));
    }
    let got = head.get_many([labels("b")].iter().map(|l| &l[..]));
    assert_eq!(got[0].as_ref().map(|s| s.id), Some(2));
}

/// Selections that read a few series out of a large list match them by
/// their labels; the answer must be what reading every list gives.
#[test]
fn selections_by_labels_match_selections_by_postings() {
    use strata_codec::{MatchOp, Matcher};
    let head = Head::new(1, None);
    let mut all = Vec::new();
    for i in 0..3_000u32 {
        let mut l = vec![
            Label::new("__name__", if i % 3 == 0 { "cpu" } else { "mem" }),
            Label::new("instance", format!("host-{}", i % 150)),
            Label::new("job", if i % 10 == 0 { "other" } else { "node" }),
            Label::new("n", i.to_string()),
        ];
        // Some series lack `mode`, so matchers that accept an empty value
        // are tried on absent labels too.
        if i % 4 != 0 {
            l.push(Label::new(
                "mode",
                ["idle", "user", "system"][i as usize % 3],
            ));
        }
        l.sort();
        let (s, _) = head.get_or_create(&l);
        all.push((s.id, l));
    }
    let m = |op, name: &str, value: &str| Matcher::new(op, name, value).unwrap();
    let cases: Vec<Vec<Matcher>> = vec![
        vec![
            m(MatchOp::Equal, "instance", "host-7"),
            m(MatchOp::Equal, "job", "node"),
        ],
        vec![
            m(MatchOp::Equal, "instance", "host-7"),
            m(MatchOp::Equal, "job", "node"),
            m(MatchOp::NotEqual, "mode", "idle"),
        ],
        vec![
            m(MatchOp::Equal, "job", "node"),
            m(MatchOp::Equal, "mode", "idle"),
        ],
        vec![
            m(MatchOp::Equal, "instance", "host-12"),
            m(MatchOp::RegexMatch, "mode", "idle|user"),
            m(MatchOp::RegexNoMatch, "__name__", "mem"),
        ],
        vec![
            m(MatchOp::Equal, "instance", "host-3"),
            m(MatchOp::Equal, "mode", ""),
        ],
        vec![
            m(MatchOp::Equal, "instance", "host-3"),
            m(MatchOp::RegexMatch, "mode", ".*"),
        ],
        vec![
            m(MatchOp::Equal, "instance", "host-3"),
            m(MatchOp::Equal, "job", "none"),
        ],
        vec![
            m(MatchOp::Equal, "instance", "host-3"),
            m(MatchOp::Equal, "absent", "x"),
        ],
        vec![m(MatchOp::NotEqual, "job", "node")],
        vec![
            m(MatchOp::Equal, "job", "other"),
            m(MatchOp::NotEqual, "mode", "user"),
        ],
    ];
    for matchers in cases {
        let want: Vec<u64> = all
            .iter()
            .filter(|(_, l)| matchers.iter().all(|m| m.matches_labels(l)))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(head.select_ids(&matchers), want, "{matchers:?}");
    }
}
