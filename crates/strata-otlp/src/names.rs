//! Metric, label and unit names from OTLP's, as Prometheus 3 builds them
//! (its `otlptranslator` module): escaping of characters Prometheus'
//! classic names do not allow, and unit and type suffixes.

use std::fmt;

/// How OTLP names become Prometheus names: `otlp.translation_strategy`,
/// with Prometheus 3's values and default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TranslationStrategy {
    /// Characters outside `[a-zA-Z0-9_:]` (labels: `[a-zA-Z0-9_]`) become
    /// `_`; unit and type suffixes are added (`_seconds`, `_total`).
    #[default]
    UnderscoreEscapingWithSuffixes,
    /// Escaped, without suffixes.
    UnderscoreEscapingWithoutSuffixes,
    /// Names kept as sent (UTF-8), with suffixes.
    NoUtf8EscapingWithSuffixes,
    /// Names kept as sent, nothing added.
    NoTranslation,
}

impl TranslationStrategy {
    pub const ALL: [Self; 4] = [
        Self::UnderscoreEscapingWithSuffixes,
        Self::UnderscoreEscapingWithoutSuffixes,
        Self::NoUtf8EscapingWithSuffixes,
        Self::NoTranslation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::UnderscoreEscapingWithSuffixes => "UnderscoreEscapingWithSuffixes",
            Self::UnderscoreEscapingWithoutSuffixes => "UnderscoreEscapingWithoutSuffixes",
            Self::NoUtf8EscapingWithSuffixes => "NoUTF8EscapingWithSuffixes",
            Self::NoTranslation => "NoTranslation",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn escapes(self) -> bool {
        matches!(
            self,
            Self::UnderscoreEscapingWithSuffixes | Self::UnderscoreEscapingWithoutSuffixes
        )
    }

    pub fn adds_suffixes(self) -> bool {
        matches!(
            self,
            Self::UnderscoreEscapingWithSuffixes | Self::NoUtf8EscapingWithSuffixes
        )
    }
}

impl fmt::Display for TranslationStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind of metric a name is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetricType {
    Gauge,
    MonotonicCounter,
    NonMonotonicCounter,
    Histogram,
    ExponentialHistogram,
    Summary,
}

fn unit_word(unit: &str) -> &str {
    match unit {
        "d" => "days",
        "h" => "hours",
        "min" => "minutes",
        "s" => "seconds",
        "ms" => "milliseconds",
        "us" => "microseconds",
        "ns" => "nanoseconds",
        "By" => "bytes",
        "KiBy" => "kibibytes",
        "MiBy" => "mebibytes",
        "GiBy" => "gibibytes",
        "TiBy" => "tibibytes",
        "KBy" => "kilobytes",
        "MBy" => "megabytes",
        "GBy" => "gigabytes",
        "TBy" => "terabytes",
        "m" => "meters",
        "V" => "volts",
        "A" => "amperes",
        "J" => "joules",
        "W" => "watts",
        "g" => "grams",
        "Cel" => "celsius",
        "Hz" => "hertz",
        "1" => "",
        "%" => "percent",
        other => other,
    }
}

fn per_unit_word(unit: &str) -> &str {
    match unit {
        "s" => "second",
        "m" => "minute",
        "h" => "hour",
        "d" => "day",
        "w" => "week",
        "mo" => "month",
        "y" => "year",
        other => other,
    }
}

/// The main and per-unit suffixes of a UCUM unit: `"By/s"` gives
/// `("bytes", "per_second")`; annotations in braces give nothing.
fn unit_suffixes(unit: &str) -> (String, String) {
    let mut parts = unit.splitn(2, '/');
    let main = parts.next().unwrap_or("").trim();
    let main = if !main.is_empty() && !main.contains(['{', '}']) {
        unit_word(main).to_owned()
    } else {
        String::new()
    };
    let per = match parts.next() {
        Some(p) if !p.is_empty() => {
            let p = p.trim();
            if !p.is_empty() && !p.contains(['{', '}']) {
                let w = per_unit_word(p);
                if w.is_empty() {
                    String::new()
                } else {
                    format!("per_{w}")
                }
            } else {
                String::new()
            }
        }
        _ => String::new(),
    };
    (main, per)
}

fn is_metric_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == ':'
}

fn is_label_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn collapse_underscores(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev = false;
    for c in s.chars() {
        if c == '_' {
            if !prev {
                out.push('_');
            }
            prev = true;
        } else {
            out.push(c);
            prev = false;
        }
    }
    out
}

fn clean_unit(unit: &str) -> String {
    let mapped: String = unit
        .chars()
        .map(|c| if is_metric_char(c) { c } else { '_' })
        .collect();
    collapse_underscores(&mapped)
        .trim_start_matches('_')
        .to_owned()
}

fn starts_with_digit(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// The Prometheus metric name of an OTLP metric, or why it has none.
pub fn metric_name(
    name: &str,
    unit: &str,
    kind: MetricType,
    strategy: TranslationStrategy,
) -> Result<String, String> {
    if !strategy.escapes() {
        return Ok(utf8_metric_name(name, unit, kind, strategy.adds_suffixes()));
    }
    let built = if strategy.adds_suffixes() {
        normalized_name(name, unit, kind)
    } else {
        let joined = name
            .split(|c: char| !is_metric_char(c) && c != '_')
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("_");
        if starts_with_digit(&joined) {
            format!("_{joined}")
        } else {
            joined
        }
    };
    if built.is_empty() {
        return Err(format!(
            "normalization for metric {name:?} resulted in empty name"
        ));
    }
    if built != name && built.chars().all(|c| c == '_') {
        return Err(format!(
            "normalization for metric {name:?} resulted in invalid name {built:?}"
        ));
    }
    Ok(built)
}

fn normalized_name(name: &str, unit: &str, kind: MetricType) -> String {
    let mut tokens: Vec<String> = name
        .split(|c: char| !is_metric_char(c))
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    let (main, per) = unit_suffixes(unit);
    let mut main = clean_unit(&main);
    let per = clean_unit(&per);
    if tokens.contains(&main) {
        main.clear();
    }
    let per = if per == "per_" {
        String::new()
    } else {
        let p = per.trim_end_matches('_').to_owned();
        if tokens.contains(&p) {
            String::new()
        } else {
            p
        }
    };
    if !per.is_empty() {
        main = main.trim_end_matches('_').to_owned();
    }
    if !main.is_empty() {
        tokens.push(main);
    }
    if !per.is_empty() {
        tokens.push(per);
    }
    if kind == MetricType::MonotonicCounter {
        tokens.retain(|t| t != "total");
        tokens.push("total".into());
    }
    if unit == "1" && kind == MetricType::Gauge {
        tokens.retain(|t| t != "ratio");
        tokens.push("ratio".into());
    }
    let joined = tokens.join("_");
    if starts_with_digit(&joined) {
        format!("_{joined}")
    } else {
        joined
    }
}

fn trim_suffix<'a>(name: &'a str, suffix: &str) -> &'a str {
    if name.ends_with(suffix) && name.len() > suffix.len() + 1 {
        &name[..name.len() - suffix.len() - 1]
    } else {
        name
    }
}

fn utf8_metric_name(name: &str, unit: &str, kind: MetricType, suffixes: bool) -> String {
    if !suffixes {
        return name.to_owned();
    }
    let mut out = name.to_owned();
    let ratio = unit == "1" && kind == MetricType::Gauge;
    if ratio {
        out = trim_suffix(&out, "ratio").to_owned();
    }
    let total = kind == MetricType::MonotonicCounter;
    if total {
        out = trim_suffix(&out, "total").to_owned();
    }
    let (main, per) = unit_suffixes(unit);
    if !per.is_empty() {
        out = trim_suffix(&out, &per).to_owned();
    }
    if !main.is_empty() && !out.ends_with(&main) {
        out = format!("{out}_{main}");
    }
    if !per.is_empty() {
        out = format!("{out}_{per}");
    }
    if total {
        out.push_str("_total");
    }
    if ratio {
        out.push_str("_ratio");
    }
    out
}

/// The unit as metadata carries it: `"By/s"` gives `bytes_per_second`.
pub fn unit_name(unit: &str) -> String {
    let (main, per) = unit_suffixes(unit);
    let (main, per) = (clean_unit(&main), clean_unit(&per));
    let u = match (main.is_empty(), per.is_empty()) {
        (false, false) => format!("{main}_{per}"),
        (false, true) => main,
        _ => per,
    };
    let u = u.strip_prefix('_').unwrap_or(&u);
    u.strip_suffix('_').unwrap_or(u).to_owned()
}

/// How attribute names become label names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelNamer {
    pub utf8: bool,
    /// `key` before a name that starts with one `_`.
    pub underscore_sanitization: bool,
    /// Runs of `_` kept rather than collapsed.
    pub preserve_multiple_underscores: bool,
}

impl LabelNamer {
    /// The label name of an attribute, or why it has none.
    pub fn build(&self, name: &str) -> Result<String, String> {
        if name.is_empty() {
            return Err("label name is empty".into());
        }
        if self.utf8 {
            if name.chars().all(|c| c == '_') {
                return Err(format!("label name {name:?} contains only underscores"));
            }
            return Ok(name.to_owned());
        }
        let mut out = self.sanitize(name);
        if starts_with_digit(&out) {
            out = format!("key_{out}");
        } else if self.underscore_sanitization && out.starts_with('_') && !out.starts_with("__") {
            out = format!("key{out}");
        }
        if out.chars().all(|c| c == '_') {
            return Err(format!(
                "normalization for label name {name:?} resulted in invalid name {out:?}"
            ));
        }
        Ok(out)
    }

    fn sanitize(&self, name: &str) -> String {
        if self.preserve_multiple_underscores {
            return name
                .chars()
                .map(|c| if is_label_char(c) { c } else { '_' })
                .collect();
        }
        let reserved = name.len() >= 4 && name.starts_with("__") && name.ends_with("__");
        let inner = if reserved {
            &name[2..name.len() - 2]
        } else {
            name
        };
        let mut out = String::with_capacity(name.len());
        if reserved {
            out.push_str("__");
        }
        let mut prev = false;
        for c in inner.chars() {
            if is_label_char(c) {
                out.push(c);
                prev = false;
            } else if !prev {
                out.push('_');
                prev = true;
            }
        }
        if reserved {
            out.push_str("__");
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use MetricType::*;
    use TranslationStrategy::*;

    fn name(n: &str, unit: &str, kind: MetricType) -> String {
        metric_name(n, unit, kind, UnderscoreEscapingWithSuffixes).unwrap()
    }

    #[test]
    fn suffixes_as_prometheus_adds_them() {
        assert_eq!(
            name("http.server.duration", "s", Histogram),
            "http_server_duration_seconds"
        );
        assert_eq!(name("requests", "1", MonotonicCounter), "requests_total");
        assert_eq!(
            name("requests_total", "", MonotonicCounter),
            "requests_total"
        );
        assert_eq!(name("cpu.utilization", "1", Gauge), "cpu_utilization_ratio");
        assert_eq!(name("net.io", "By/s", Gauge), "net_io_bytes_per_second");
        assert_eq!(name("queue", "{items}", NonMonotonicCounter), "queue");
        assert_eq!(name("disk_bytes", "By", Gauge), "disk_bytes");
        assert_eq!(name("2xx.count", "", Gauge), "_2xx_count");
        assert_eq!(name("temp", "Cel", Gauge), "temp_celsius");
        assert_eq!(name("weird--name", "", Gauge), "weird_name");
        assert_eq!(name("mem", "%", Gauge), "mem_percent");
        assert_eq!(
            name("bytes.read", "By", MonotonicCounter),
            "bytes_read_total"
        );
    }

    #[test]
    fn other_strategies() {
        let n = |s| metric_name("http.server.duration", "ms", Histogram, s).unwrap();
        assert_eq!(n(UnderscoreEscapingWithoutSuffixes), "http_server_duration");
        assert_eq!(
            n(NoUtf8EscapingWithSuffixes),
            "http.server.duration_milliseconds"
        );
        assert_eq!(n(NoTranslation), "http.server.duration");
        assert_eq!(
            metric_name("jobs", "1", MonotonicCounter, NoUtf8EscapingWithSuffixes).unwrap(),
            "jobs_total"
        );
        assert!(metric_name("...", "", Gauge, UnderscoreEscapingWithSuffixes).is_err());
    }

    #[test]
    fn units_for_metadata() {
        assert_eq!(unit_name("By/s"), "bytes_per_second");
        assert_eq!(unit_name("ms"), "milliseconds");
        assert_eq!(unit_name("1"), "");
        assert_eq!(unit_name("{request}"), "");
        assert_eq!(unit_name("/s"), "per_second");
    }

    #[test]
    fn label_names_as_prometheus_3_defaults_make_them() {
        let n = LabelNamer {
            utf8: false,
            underscore_sanitization: true,
            preserve_multiple_underscores: true,
        };
        assert_eq!(n.build("http.method").unwrap(), "http_method");
        assert_eq!(n.build("0abc").unwrap(), "key_0abc");
        assert_eq!(n.build("_private").unwrap(), "key_private");
        assert_eq!(n.build("__reserved__").unwrap(), "__reserved__");
        assert_eq!(n.build("a..b").unwrap(), "a__b");
        assert!(n.build("").is_err());
        assert!(n.build("...").is_err());
        let collapsing = LabelNamer {
            preserve_multiple_underscores: false,
            ..n
        };
        assert_eq!(collapsing.build("a..b").unwrap(), "a_b");
        let utf8 = LabelNamer { utf8: true, ..n };
        assert_eq!(utf8.build("http.method").unwrap(), "http.method");
    }
}
