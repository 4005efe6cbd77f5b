//! Exemplars as Prometheus' receiver makes them.

use strata_codec::{Exemplar, Label};

use super::{millis, Translator};
use crate::attributes::value_string;
use crate::proto::exemplar;

impl Translator<'_> {
    /// A point's exemplars as Prometheus' receiver makes them: `trace_id`
    /// and `span_id` in hex when set, then the filtered attributes unless
    /// they would take the labels over 128 characters, sorted by name. One
    /// without a value, or failing [`Exemplar::validate`] (a duplicate
    /// name), is dropped and counted, never an error.
    #[allow(clippy::cast_precision_loss)]
    pub(super) fn exemplars(&mut self, list: &[crate::proto::Exemplar]) -> Vec<Exemplar> {
        self.out.exemplars += list.len();
        let mut out = Vec::with_capacity(list.len());
        for e in list {
            let v = match e.value {
                Some(exemplar::Value::AsDouble(f)) => f,
                Some(exemplar::Value::AsInt(i)) => i as f64,
                None => {
                    self.drop_exemplar("an exemplar has no value".into());
                    continue;
                }
            };
            let mut labels = Vec::new();
            let mut chars = 0;
            for (name, id) in [("trace_id", &e.trace_id), ("span_id", &e.span_id)] {
                if id.iter().any(|&b| b != 0) {
                    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                    chars += name.len() + hex.len();
                    labels.push(Label::new(name, hex));
                }
            }
            let attrs: Vec<Label> = e
                .filtered_attributes
                .iter()
                .map(|kv| Label::new(kv.key.as_str(), value_string(kv.value.as_ref())))
                .collect();
            chars += attrs
                .iter()
                .map(|l| l.name.chars().count() + l.value.chars().count())
                .sum::<usize>();
            if chars <= strata_codec::exemplar::EXEMPLAR_MAX_LABEL_CHARS {
                labels.extend(attrs);
            }
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            let ex = Exemplar {
                labels,
                t: millis(e.time_unix_nano),
                v,
            };
            match ex.validate() {
                Ok(()) => out.push(ex),
                Err(problem) => self.drop_exemplar(format!("exemplar dropped: {problem}")),
            }
        }
        out
    }

    fn drop_exemplar(&mut self, problem: String) {
        self.out.exemplars_dropped += 1;
        if self.out.exemplar_problem.is_none() {
            self.out.exemplar_problem = Some(problem);
        }
    }
}
