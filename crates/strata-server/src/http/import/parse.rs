//! The body read line by line into batches of series, bad lines counted
//! and the first ones quoted.

use std::io::{BufRead, BufReader, Read};

use axum::body::Bytes;
use strata_write::{RawLabel, RawLabels, RawSeries};
use tokio::sync::mpsc;

use super::{text, Options, Pairs, MAX_QUOTED, READ_BUFFER};

/// A batch of parsed series for one storage write.
#[derive(Debug, Default)]
pub(super) struct Batch {
    pub(super) series: Vec<RawSeries>,
    pub(super) samples: usize,
}

/// How the parser ended.
#[derive(Debug, Default, PartialEq)]
pub(super) struct ParseEnd {
    pub(super) lines: u64,
    pub(super) bad_lines: u64,
    /// The first bad lines: `line N: problem`.
    pub(super) line_errors: Vec<String>,
    /// Why reading stopped before the end of the body.
    pub(super) fatal: Option<String>,
}

impl ParseEnd {
    fn bad_line(&mut self, line: u64, problem: &str, text: &[u8]) {
        self.bad_lines += 1;
        if self.line_errors.len() < MAX_QUOTED {
            let mut msg = format!("line {line}: {problem}");
            if !text.is_empty() {
                let shown: String = String::from_utf8_lossy(text).chars().take(200).collect();
                msg.push_str(&format!(": {shown:?}"));
            }
            self.line_errors.push(msg);
        }
    }
}

/// The outcome of reading one line.
pub(super) enum LineRead {
    Line,
    /// Longer than the limit; skipped up to its newline. The length read.
    TooLong(usize),
    End,
}

/// Reads the next line into `buf` without its newline, never holding more
/// than `max + 1` bytes of it.
pub(super) fn next_line(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    let n = r
        .by_ref()
        .take(u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1))
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(LineRead::Line);
    }
    if buf.len() <= max {
        // The last line, without a newline.
        return Ok(LineRead::Line);
    }
    let mut skipped = buf.len();
    buf.clear();
    loop {
        let available = r.fill_buf()?;
        if available.is_empty() {
            break;
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(p) => {
                skipped += p;
                r.consume(p + 1);
                break;
            }
            None => {
                let len = available.len();
                skipped += len;
                r.consume(len);
            }
        }
    }
    Ok(LineRead::TooLong(skipped))
}

pub(super) fn now_ms() -> i64 {
    strata_codec::clock::Clock::now_ms(&strata_codec::clock::SystemClock)
}

/// Sorts a line's labels after applying the extra labels; refuses
/// duplicate names.
pub(super) fn build_labels(
    pairs: &mut Pairs,
    extra: &[(String, String)],
) -> Result<RawLabels, String> {
    for (name, value) in extra {
        pairs.retain(|(n, _)| n != name);
        pairs.push((name.clone(), value.clone()));
    }
    pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    if let Some((a, _)) = pairs
        .iter()
        .zip(pairs.iter().skip(1))
        .find(|(a, b)| a.0 == b.0)
    {
        return Err(format!("duplicate label name {:?}", a.0));
    }
    Ok(RawLabels(
        pairs
            .drain(..)
            .filter_map(|(n, v)| RawLabel::new(Bytes::from(n), Bytes::from(v)))
            .collect(),
    ))
}

/// Reads the body line by line and sends full batches to the writer.
/// Stops early when the writer has stopped taking them.
pub(super) fn parse_body(
    reader: impl Read,
    options: &Options,
    tx: &mpsc::Sender<Batch>,
) -> ParseEnd {
    let reader: Box<dyn Read + '_> = if options.gzip {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER, reader);
    let mut end = ParseEnd::default();
    let mut line = Vec::new();
    let mut pairs = Vec::new();
    let mut batch = Batch::default();
    // The previous line's series as written, and its labels: consecutive
    // lines of one series (a dump's order) decode it once.
    let mut last_series: Vec<u8> = Vec::new();
    let mut last_labels: Option<RawLabels> = None;
    loop {
        let read = match next_line(&mut reader, &mut line, options.max_line_bytes) {
            Ok(r) => r,
            Err(e) => {
                end.fatal = Some(format!(
                    "cannot read the body after line {}: {e}",
                    end.lines
                ));
                break;
            }
        };
        match read {
            LineRead::End => break,
            LineRead::TooLong(len) => {
                end.lines += 1;
                end.bad_line(
                    end.lines,
                    &format!(
                        "line of {len} bytes is longer than the limits allow ({} bytes)",
                        options.max_line_bytes
                    ),
                    &[],
                );
                continue;
            }
            LineRead::Line => end.lines += 1,
        }
        let sample = match text::split_line(&line) {
            Ok(Some(s)) => s,
            Ok(None) => continue,
            Err(problem) => {
                end.bad_line(end.lines, &problem, &line);
                continue;
            }
        };
        let t = sample
            .timestamp_ms
            .or(options.default_timestamp_ms)
            .unwrap_or_else(now_ms);
        let same = last_labels.is_some() && sample.series == last_series.as_slice();
        if !same {
            let labels = text::parse_series(sample.series, &mut pairs)
                .and_then(|()| build_labels(&mut pairs, &options.extra_labels));
            match labels {
                Ok(l) => {
                    last_series.clear();
                    last_series.extend_from_slice(sample.series);
                    last_labels = Some(l);
                }
                Err(problem) => {
                    last_labels = None;
                    end.bad_line(end.lines, &problem, &line);
                    continue;
                }
            }
        }
        let Some(labels) = &last_labels else {
            continue;
        };
        match batch.series.last_mut() {
            Some(s) if same => s.samples.push((t, sample.value)),
            _ => batch.series.push(RawSeries {
                labels: labels.clone(),
                samples: vec![(t, sample.value)],
                histograms: Vec::new(),
                exemplars: Vec::new(),
            }),
        }
        batch.samples += 1;
        if batch.samples >= options.batch_samples || batch.series.len() >= options.batch_series {
            // The next line of the same series opens a new entry in the
            // (empty) next batch.
            if tx.blocking_send(std::mem::take(&mut batch)).is_err() {
                return end;
            }
        }
    }
    if batch.samples > 0 {
        let _ = tx.blocking_send(batch);
    }
    end
}
