//! Labels and label matchers: the vocabulary every other crate speaks.

use regex::{Regex, RegexBuilder};

/// The label that names a metric.
pub const METRIC_NAME: &str = "__name__";

/// The label that tells tenants apart. The server adds it to every series
/// of a named tenant and selects on it for every query of that tenant; the
/// default tenant's series do not have it. Clients may not send it.
pub const TENANT_LABEL: &str = "__tenant__";

/// One label pair of a series. A series' labels are kept sorted by name and
/// have unique names, as the remote-write specification requires.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    pub name: String,
    pub value: String,
}

impl Label {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// A sorted label set seen as `(name, value)` pairs, owned or borrowed, so
/// that a series can be looked up without building owned labels first.
pub trait LabelPairs {
    /// The pairs, sorted by name.
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)>;
    /// The number of pairs.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The value of label `name`, `""` when absent.
    fn value_of(&self, name: &str) -> &str {
        self.pairs()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, v)| v)
    }
    /// Owned labels, built only when a series is new.
    fn to_labels(&self) -> Vec<Label> {
        self.pairs().map(|(n, v)| Label::new(n, v)).collect()
    }
}

impl LabelPairs for [Label] {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().map(|l| (l.name.as_str(), l.value.as_str()))
    }
    fn len(&self) -> usize {
        <[Label]>::len(self)
    }
    fn to_labels(&self) -> Vec<Label> {
        self.to_vec()
    }
}

impl LabelPairs for Vec<Label> {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().map(|l| (l.name.as_str(), l.value.as_str()))
    }
    fn len(&self) -> usize {
        <[Label]>::len(self)
    }
    fn to_labels(&self) -> Vec<Label> {
        self.clone()
    }
}

impl LabelPairs for std::sync::Arc<[Label]> {
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter().map(|l| (l.name.as_str(), l.value.as_str()))
    }
    fn len(&self) -> usize {
        <[Label]>::len(self)
    }
    fn to_labels(&self) -> Vec<Label> {
        self.to_vec()
    }
}

/// Whether owned labels equal a label set given as pairs.
pub fn labels_eq(labels: &[Label], other: &(impl LabelPairs + ?Sized)) -> bool {
    labels.len() == other.len()
        && labels
            .iter()
            .zip(other.pairs())
            .all(|(l, (n, v))| l.name == n && l.value == v)
}

/// The value of label `name` in a sorted label set, or "" when absent (as
/// Prometheus treats a missing label).
pub fn get<'a>(labels: &'a [Label], name: &str) -> &'a str {
    labels
        .iter()
        .find(|l| l.name == name)
        .map_or("", |l| l.value.as_str())
}

/// Bytes that order as the label set orders: each name and value with
/// every 0 byte written as 0, 1 and ended by 0, 0, so that one `memcmp`
/// compares two sets where comparing them label by label takes one call a
/// string. For sorting many sets (`sort_by_cached_key`).
pub fn sort_key(labels: &[Label]) -> Vec<u8> {
    let len: usize = labels
        .iter()
        .map(|l| l.name.len() + l.value.len() + 4)
        .sum();
    let mut key = Vec::with_capacity(len);
    for s in labels.iter().flat_map(|l| [&l.name, &l.value]) {
        for part in s.as_bytes().split(|&b| b == 0) {
            key.extend_from_slice(part);
            key.extend_from_slice(&[0, 1]);
        }
        // The last part's 0, 1 becomes the end: 0, 0.
        key.pop();
        key.push(0);
    }
    key
}

/// The four Prometheus matcher operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchOp {
    Equal,
    NotEqual,
    RegexMatch,
    RegexNoMatch,
}

/// A label matcher, with its regular expression compiled once and anchored
/// at both ends as Prometheus anchors it.
#[derive(Clone, Debug)]
pub struct Matcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
    regex: Option<Regex>,
}

/// Most heap a matcher's compiled regular expression may take (the regex
/// crate's `size_limit`). It is the crate's own default, stated here so that
/// the bound is a promise of this crate: a 64 KiB alternation of host names
/// fits, while a pattern that blows up when compiled (`(a{100}){100}{100}`,
/// `\w{1000}`) fails to build in milliseconds instead of taking memory.
pub const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// Most memory the lazy DFA of one matcher's regular expression may cache
/// (the regex crate's `dfa_size_limit`, again its default). Past it matching
/// falls back to slower engines, still in linear time.
pub const REGEX_DFA_SIZE_LIMIT: usize = 2 << 20;

/// Most bytes of a pattern an error message quotes.
const QUOTED_PATTERN_BYTES: usize = 128;

/// A matcher whose regular expression does not compile, or compiles to more
/// than [`REGEX_SIZE_LIMIT`].
#[derive(Debug, thiserror::Error)]
#[error(
    "invalid regular expression {} for label {name:?}: {reason}",
    quote_pattern(value)
)]
pub struct MatcherError {
    pub name: String,
    pub value: String,
    pub reason: String,
}

/// The pattern quoted, cut after [`QUOTED_PATTERN_BYTES`] so that an error
/// about a huge pattern stays small.
fn quote_pattern(value: &str) -> String {
    if value.len() <= QUOTED_PATTERN_BYTES {
        return format!("{value:?}");
    }
    let mut end = QUOTED_PATTERN_BYTES;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    let head = value.get(..end).unwrap_or_default();
    format!("{head:?}... ({} bytes)", value.len())
}

/// Compiles a matcher's pattern, anchored at both ends, within the size
/// limits.
fn compile(value: &str) -> Result<Regex, String> {
    RegexBuilder::new(&format!("^(?s:{value})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => format!(
                "the compiled expression would exceed the limit of {limit} bytes; simplify the pattern (fewer or smaller repetitions, fewer alternatives)"
            ),
            // The parser's message quotes the whole pattern; a long one is
            // cut down to the line that says what is wrong.
            regex::Error::Syntax(msg) if value.len() > QUOTED_PATTERN_BYTES => msg
                .lines()
                .rev()
                .find_map(|l| l.strip_prefix("error: "))
                .map_or_else(|| "regex parse error".to_owned(), |e| format!("regex parse error: {e}")),
            other => other.to_string(),
        })
}

impl Matcher {
    pub fn new(
        op: MatchOp,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, MatcherError> {
        let name = name.into();
        let value = value.into();
        let regex = match op {
            MatchOp::RegexMatch | MatchOp::RegexNoMatch => {
                Some(compile(&value).map_err(|reason| MatcherError {
                    name: name.clone(),
                    value: value.clone(),
                    reason,
                })?)
            }
            MatchOp::Equal | MatchOp::NotEqual => None,
        };
        Ok(Self {
            name,
            op,
            value,
            regex,
        })
    }

    /// Whether a label value (`""` for an absent label) satisfies the matcher.
    pub fn matches(&self, value: &str) -> bool {
        match (self.op, &self.regex) {
            (MatchOp::Equal, _) => value == self.value,
            (MatchOp::NotEqual, _) => value != self.value,
            (MatchOp::RegexMatch, Some(re)) => re.is_match(value),
            (MatchOp::RegexNoMatch, Some(re)) => !re.is_match(value),
            // `new` compiles a regex for both regex operators.
            (MatchOp::RegexMatch | MatchOp::RegexNoMatch, None) => false,
        }
    }

    /// Whether the matcher accepts the empty value, i.e. also selects series
    /// that lack the label entirely.
    pub fn matches_empty(&self) -> bool {
        self.matches("")
    }

    /// Whether a sorted label set satisfies the matcher.
    pub fn matches_labels(&self, labels: &[Label]) -> bool {
        self.matches(get(labels, &self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sort key orders as the labels do, with strings that are
    /// prefixes of each other, empty ones and 0 bytes among them.
    #[test]
    fn sort_key_orders_as_labels() {
        let mut rng = crate::rand::SplitMix64::new(7);
        let alphabet = ["", "a", "b", "\0", "\u{1}", "ab", "a\0", "a\0b", "\u{ff}"];
        let pick = |rng: &mut crate::rand::SplitMix64| {
            let n = rng.below(3) as usize;
            (0..n)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect::<String>()
        };
        let sets: Vec<Vec<Label>> = (0..400)
            .map(|_| {
                let n = rng.below(4) as usize;
                (0..n)
                    .map(|_| Label::new(pick(&mut rng), pick(&mut rng)))
                    .collect()
            })
            .collect();
        for a in &sets {
            for b in &sets {
                assert_eq!(sort_key(a).cmp(&sort_key(b)), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn regex_is_anchored() {
        let m = Matcher::new(MatchOp::RegexMatch, "job", "no.e").unwrap();
        assert!(m.matches("node"));
        assert!(!m.matches("xnode"));
        assert!(!m.matches("nodex"));
        let m = Matcher::new(MatchOp::RegexNoMatch, "job", "a|b").unwrap();
        assert!(m.matches(""));
        assert!(!m.matches("a"));
    }

    #[test]
    fn absent_label_is_empty() {
        let labels = vec![Label::new("__name__", "up")];
        let m = Matcher::new(MatchOp::Equal, "job", "").unwrap();
        assert!(m.matches_labels(&labels));
    }

    #[test]
    fn bad_regex_names_label() {
        let err = Matcher::new(MatchOp::RegexMatch, "job", "(").unwrap_err();
        assert!(err.to_string().contains("job"));
    }

    #[test]
    fn pattern_that_compiles_too_big_is_an_error() {
        for pattern in ["((a{100}){100}){100}", "\\w{1000}", "(?:(?:.{50}){50}){50}"] {
            let err = Matcher::new(MatchOp::RegexMatch, "job", pattern).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(&REGEX_SIZE_LIMIT.to_string()), "{msg}");
            assert!(msg.contains("job"), "{msg}");
        }
    }

    #[test]
    fn long_alternation_compiles() {
        let hosts: Vec<String> = (0..2000).map(|i| format!("host-{i:05}:9100")).collect();
        let m = Matcher::new(MatchOp::RegexMatch, "instance", hosts.join("|")).unwrap();
        assert!(m.matches("host-01999:9100"));
        assert!(!m.matches("host-02000:9100"));
    }

    #[test]
    fn error_quotes_a_long_pattern_cut() {
        let pattern = format!("({}", "é".repeat(10_000));
        let err = Matcher::new(MatchOp::RegexMatch, "job", pattern).unwrap_err();
        let msg = err.to_string();
        assert!(msg.len() < 512, "{msg}");
        assert!(msg.contains("(20001 bytes)"), "{msg}");
    }
}
