//! Set algebra over sorted series-id lists, shared by the head's in-memory
//! postings and the sealed buckets' `I` keys.

/// What one matcher selects: the listed ids, or every id except the listed
/// ones (for matchers that also accept an absent label).
pub enum MatcherSet {
    Include(Vec<u64>),
    Exclude(Vec<u64>),
}

/// Merges sorted id lists into one sorted list without duplicates.
pub fn union(mut lists: Vec<Vec<u64>>) -> Vec<u64> {
    match lists.len() {
        0 => Vec::new(),
        1 => lists.pop().unwrap_or_default(),
        _ => {
            let mut all: Vec<u64> = lists.into_iter().flatten().collect();
            all.sort_unstable();
            all.dedup();
            all
        }
    }
}

fn intersect(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let (mut i, mut j) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        match x.cmp(&y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(x);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

fn subtract(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for &x in a {
        while b.get(j).is_some_and(|&y| y < x) {
            j += 1;
        }
        if b.get(j) != Some(&x) {
            out.push(x);
        }
    }
    out
}

/// The ids every matcher selects. `all` is called only when no matcher
/// gives a positive list to start from.
pub fn combine(sets: Vec<MatcherSet>, all: impl FnOnce() -> Vec<u64>) -> Vec<u64> {
    let mut includes = Vec::new();
    let mut excludes = Vec::new();
    for s in sets {
        match s {
            MatcherSet::Include(v) => includes.push(v),
            MatcherSet::Exclude(v) => excludes.push(v),
        }
    }
    includes.sort_by_key(Vec::len);
    let mut iter = includes.into_iter();
    let mut acc = match iter.next() {
        Some(first) => first,
        None => all(),
    };
    for s in iter {
        if acc.is_empty() {
            break;
        }
        acc = intersect(&acc, &s);
    }
    for e in excludes {
        if acc.is_empty() {
            break;
        }
        acc = subtract(&acc, &e);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_include_exclude() {
        let got = combine(
            vec![
                MatcherSet::Include(vec![1, 2, 3, 5, 8]),
                MatcherSet::Include(vec![2, 3, 8, 9]),
                MatcherSet::Exclude(vec![3]),
            ],
            || unreachable!(),
        );
        assert_eq!(got, vec![2, 8]);
        let got = combine(vec![MatcherSet::Exclude(vec![2])], || vec![1, 2, 3]);
        assert_eq!(got, vec![1, 3]);
        assert_eq!(union(vec![vec![3, 1], vec![2, 3]]), vec![1, 2, 3]);
    }
}
