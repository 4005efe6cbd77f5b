//! The bad-input list at the HTTP level: limits, special values, retries,
//! tenants, credentials and TLS. Each case checks the status, that the
//! message names the problem, and that data accepted before stays
//! readable.
//!
//! The tests are grouped by what they check: request, label and query
//! limits (`limits`), special values, retries and staleness (`values`),
//! tenants (`tenants`), credentials and TLS (`auth`). Here: what they
//! send and how they check an answer.
// Test helpers may unwrap and index: a panic is a failed test.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod auth;
#[path = "../common/mod.rs"]
mod common;
mod limits;
mod tenants;
mod values;

use common::inproc::post;

pub(crate) const GOOD: &[(&str, &str)] = &[("__name__", "good_total"), ("job", "test")];

pub(crate) fn expect(name: &str, got: (u16, String), want: u16, needle: &str) {
    let (status, msg) = got;
    assert_eq!(status, want, "{name}: {msg}");
    assert!(
        msg.to_lowercase().contains(&needle.to_lowercase()),
        "{name}: message {msg:?} lacks {needle:?}"
    );
}

pub(crate) async fn send(url: &str, b: Vec<u8>, headers: &[(&str, &str)]) -> (u16, String) {
    let (s, m, _) = post(url, b, headers).await;
    (s, m)
}
