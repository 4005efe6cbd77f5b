//! What `/api/v1/status/tsdb` reports: how many series there are and
//! which metric names, label names and label pairs account for them, so a
//! user can find what is blowing up their series count.

use std::collections::HashMap;

use strata_codec::labels::METRIC_NAME;
use strata_codec::LabelPairs;

/// Counts label sets as they are added.
#[derive(Debug, Default)]
pub struct CardinalityCounter {
    series: usize,
    by_metric: HashMap<String, usize>,
    /// Series per label pair.
    by_pair: HashMap<(String, String), usize>,
}

/// The answer: totals and the top entries of each list, largest first
/// (ties by name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TsdbStatus {
    pub num_series: usize,
    /// Distinct label pairs.
    pub num_label_pairs: usize,
    pub series_count_by_metric_name: Vec<(String, usize)>,
    /// Distinct values per label name.
    pub label_value_count_by_label_name: Vec<(String, usize)>,
    /// Bytes of a label name's distinct values.
    pub memory_in_bytes_by_label_name: Vec<(String, usize)>,
    /// Series per `name=value` pair.
    pub series_count_by_label_value_pair: Vec<(String, usize)>,
}

impl CardinalityCounter {
    pub fn add(&mut self, labels: &(impl LabelPairs + ?Sized)) {
        self.add_pairs(labels.pairs());
    }

    /// Adds one series given as its label pairs.
    pub fn add_pairs<'a>(&mut self, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) {
        self.series += 1;
        for (name, value) in pairs {
            if name == METRIC_NAME {
                *self.by_metric.entry(value.to_owned()).or_default() += 1;
            }
            match self.by_pair.get_mut(&(name.to_owned(), value.to_owned())) {
                Some(n) => *n += 1,
                None => {
                    self.by_pair.insert((name.to_owned(), value.to_owned()), 1);
                }
            }
        }
    }

    /// The totals and the top `limit` of each list.
    pub fn status(&self, limit: usize) -> TsdbStatus {
        let mut values_by_name: HashMap<&str, (usize, usize)> = HashMap::new();
        for (name, value) in self.by_pair.keys() {
            let e = values_by_name.entry(name).or_default();
            e.0 += 1;
            e.1 += value.len();
        }
        let top = |mut v: Vec<(String, usize)>| {
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(limit);
            v
        };
        TsdbStatus {
            num_series: self.series,
            num_label_pairs: self.by_pair.len(),
            series_count_by_metric_name: top(self
                .by_metric
                .iter()
                .map(|(k, &v)| (k.clone(), v))
                .collect()),
            label_value_count_by_label_name: top(values_by_name
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.0))
                .collect()),
            memory_in_bytes_by_label_name: top(values_by_name
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.1))
                .collect()),
            series_count_by_label_value_pair: top(self
                .by_pair
                .iter()
                .map(|((n, v), &c)| (format!("{n}={v}"), c))
                .collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_codec::Label;

    #[test]
    fn counts_names_pairs_and_values() {
        let mut c = CardinalityCounter::default();
        for (name, job, i) in [("up", "a", "1"), ("up", "b", "1"), ("rpc", "a", "22")] {
            c.add(&vec![
                Label::new("__name__", name),
                Label::new("instance", i),
                Label::new("job", job),
            ]);
        }
        let s = c.status(2);
        assert_eq!(s.num_series, 3);
        // __name__ (2 values), instance (2), job (2).
        assert_eq!(s.num_label_pairs, 6);
        assert_eq!(
            s.series_count_by_metric_name,
            vec![("up".to_owned(), 2), ("rpc".to_owned(), 1)]
        );
        assert_eq!(
            s.series_count_by_label_value_pair,
            vec![("__name__=up".to_owned(), 2), ("instance=1".to_owned(), 2)]
        );
        assert_eq!(
            s.label_value_count_by_label_name,
            vec![("__name__".to_owned(), 2), ("instance".to_owned(), 2)]
        );
        // "up" + "rpc" = 5 bytes; "1" + "22" = 3; "a" + "b" = 2.
        assert_eq!(
            s.memory_in_bytes_by_label_name,
            vec![("__name__".to_owned(), 5), ("instance".to_owned(), 3)]
        );
    }
}
