//! `delete_series`: a deletion is stored under a `D` key and every read
//! leaves its samples out, on the writer and on reader nodes; the head,
//! sealed buckets and blocks alike. The bytes stay until retention takes
//! them: a deletion hides, as Prometheus' tombstones do until
//! `clean_tombstones` rewrites its blocks.

use strata_codec::varint::{put_uvarint, Decbuf};
use strata_codec::{MatchOp, Matcher};

use crate::error::StorageError;
use crate::keys;
use crate::shared::Shared;
use crate::state::tombstones::Tombstone;

const VERSION: u8 = 1;

/// Stores `tombstone` and leaves its samples out of every read on this
/// writer from now on: durable before it returns.
pub(crate) async fn store(shared: &Shared, tombstone: Tombstone) -> Result<(), StorageError> {
    if tombstone.matchers.is_empty() {
        return Err(StorageError::Invalid(
            "a deletion needs at least one matcher".into(),
        ));
    }
    let db = shared.backend.writer().ok_or(StorageError::ReadOnly)?;
    let seq = shared
        .writing()
        .ok_or(StorageError::ReadOnly)?
        .late
        .next_seq();
    let mut key = vec![keys::TOMBSTONE];
    key.extend_from_slice(&seq.to_be_bytes());
    db.put_with_options(
        &key,
        encode(&tombstone),
        &shared.series_ttl(),
        &slatedb::config::WriteOptions::default(),
    )
    .await
    .map_err(|e| shared.note_fenced(e.into()))?;
    shared.tombstones.push(tombstone);
    Ok(())
}

/// How often a reader node reads the deletions again.
pub const TOMBSTONE_POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads every stored deletion into `shared`.
pub(crate) async fn load(shared: &Shared) -> Result<(), StorageError> {
    let mut it = shared
        .backend
        .scan(vec![keys::TOMBSTONE]..vec![keys::TOMBSTONE + 1])
        .await?;
    let mut list = Vec::new();
    while let Some(kv) = it.next().await? {
        list.push(decode(&kv.value)?);
    }
    shared.tombstones.set(list);
    Ok(())
}

fn encode(t: &Tombstone) -> Vec<u8> {
    let mut out = vec![VERSION];
    out.extend_from_slice(&t.mint.to_be_bytes());
    out.extend_from_slice(&t.maxt.to_be_bytes());
    put_uvarint(&mut out, t.matchers.len() as u64);
    for m in &t.matchers {
        out.push(match m.op {
            MatchOp::Equal => 0,
            MatchOp::NotEqual => 1,
            MatchOp::RegexMatch => 2,
            MatchOp::RegexNoMatch => 3,
        });
        for s in [&m.name, &m.value] {
            put_uvarint(&mut out, s.len() as u64);
            out.extend_from_slice(s.as_bytes());
        }
    }
    out
}

fn decode(bytes: &[u8]) -> Result<Tombstone, StorageError> {
    let bad = |what: &str| StorageError::Corrupt(format!("malformed deletion value: {what}"));
    let mut d = Decbuf::new(bytes);
    if d.byte() != VERSION {
        return Err(bad("unknown version"));
    }
    let mint = d.be_u64() as i64;
    let maxt = d.be_u64() as i64;
    let n = d.uvarint();
    let mut matchers = Vec::new();
    for _ in 0..n {
        if d.err().is_some() {
            break;
        }
        let op = match d.byte() {
            0 => MatchOp::Equal,
            1 => MatchOp::NotEqual,
            2 => MatchOp::RegexMatch,
            3 => MatchOp::RegexNoMatch,
            _ => return Err(bad("unknown matcher")),
        };
        let name = d.string();
        let value = d.string();
        matchers.push(Matcher::new(op, name, value).map_err(|e| bad(&e.to_string()))?);
    }
    if d.err().is_some() || d.remaining() > 0 {
        return Err(bad("truncated"));
    }
    Ok(Tombstone {
        matchers,
        mint,
        maxt,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use strata_codec::{Label, Series};

    use super::*;
    use crate::state::tombstones::apply;

    fn m(op: MatchOp, name: &str, value: &str) -> Matcher {
        Matcher::new(op, name, value).unwrap()
    }

    #[test]
    fn a_deletion_reads_back_as_written() {
        let t = Tombstone {
            matchers: vec![
                m(MatchOp::Equal, "__name__", "up"),
                m(MatchOp::RegexNoMatch, "job", "node|db.*"),
            ],
            mint: -5,
            maxt: i64::MAX,
        };
        let back = decode(&encode(&t)).unwrap();
        assert_eq!((back.mint, back.maxt), (-5, i64::MAX));
        let parts = |l: &[Matcher]| -> Vec<(String, MatchOp, String)> {
            l.iter()
                .map(|m| (m.name.clone(), m.op, m.value.clone()))
                .collect()
        };
        assert_eq!(parts(&back.matchers), parts(&t.matchers));
        assert!(decode(&encode(&t)[..10]).is_err());
    }

    #[test]
    fn a_read_leaves_out_what_a_deletion_names_in_its_range() {
        let labels = |job: &str| -> std::sync::Arc<[Label]> {
            vec![Label::new("__name__", "up"), Label::new("job", job)].into()
        };
        let series = |job: &str| Series {
            labels: labels(job),
            timestamps: vec![1, 2, 3, 4],
            values: vec![1.0, 2.0, 3.0, 4.0],
            histograms: Vec::new(),
        };
        let list = [Tombstone {
            matchers: vec![m(MatchOp::Equal, "job", "a")],
            mint: 2,
            maxt: 3,
        }];
        let cut = apply(&list, series("a")).unwrap();
        assert_eq!((cut.timestamps, cut.values), (vec![1, 4], vec![1.0, 4.0]));
        let kept = apply(&list, series("b")).unwrap();
        assert_eq!(kept.timestamps, vec![1, 2, 3, 4]);
        let all = [Tombstone {
            matchers: vec![m(MatchOp::Equal, "__name__", "up")],
            mint: i64::MIN,
            maxt: i64::MAX,
        }];
        assert!(apply(&all, series("a")).is_none());
    }
}
