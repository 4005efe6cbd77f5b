//! The request heads of an HTTP/1 byte stream, found by following each
//! request's framing (`Content-Length`, chunked), so that a head hyper
//! would refuse can be rewritten before it sees it:
//!
//! - a request target over [`MAX_URI`] bytes (the most an `http::Uri`
//!   holds; Prometheus, in Go, takes a megabyte) becomes its path, with
//!   the URL query moved into the [`QUERY_HEADER`] header;
//! - a head over [`MAX_HEAD`] bytes (Go's `DefaultMaxHeaderBytes`) is read
//!   to its end, dropped and replaced by one carrying [`REFUSED_HEADER`],
//!   so that the answer can name the problem (hyper's has no body).
//!
//! Clients cannot send these headers: they are taken out of every head.
//! What the scanner does not follow (HTTP/2, upgrades, framing hyper
//! would refuse) passes unchanged from then on, for hyper to judge.

/// The longest request target hyper accepts.
pub const MAX_URI: usize = u16::MAX as usize - 1;
/// The longest request head (request line and headers) accepted.
pub const MAX_HEAD: usize = 1 << 20;
/// Carries the URL query of a target longer than [`MAX_URI`].
pub const QUERY_HEADER: &str = "strata-internal-query";
/// Carries why a head was refused: [`Refusal::name`].
pub const REFUSED_HEADER: &str = "strata-internal-refused";
const INTERNAL_PREFIX: &[u8] = b"strata-internal-";
/// How much of a refused head is dropped before answering anyway, for a
/// client that never ends its head.
const MAX_DISCARD: usize = 16 * MAX_HEAD;

/// Follows one connection's requests.
#[derive(Debug, Default)]
pub struct Scanner {
    state: State,
    /// The head being read.
    head: Vec<u8>,
    head_end: HeadEnd,
}

#[derive(Debug, Default)]
enum State {
    #[default]
    Head,
    Body(u64),
    Chunked(Chunk),
    /// Dropping the rest of a head too large to keep.
    Refusing {
        dropped: usize,
        why: Refusal,
    },
    /// Everything passes unchanged.
    Opaque,
    /// After a refusal: everything is dropped.
    Closed,
}

impl Scanner {
    /// Appends to `out` what hyper should read for `input`, the next bytes
    /// of the connection.
    pub fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            let n = if self.in_head() {
                self.take_head(input, out)
            } else {
                let n = self.pass(input);
                out.extend_from_slice(input.get(..n).unwrap_or_default());
                n
            };
            input = input.get(n..).unwrap_or_default();
        }
    }

    /// Whether the next byte belongs to a head (held until it is whole).
    pub fn in_head(&self) -> bool {
        match self.state {
            State::Head | State::Refusing { .. } | State::Closed => true,
            State::Body(_) | State::Chunked(_) | State::Opaque => false,
        }
    }

    /// The head read so far, unchanged, when the connection ends in it.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.head)
    }

    /// How many leading bytes of `input` pass unchanged: body bytes, or
    /// everything when opaque. Stops where a head starts.
    pub fn pass(&mut self, input: &[u8]) -> usize {
        let mut at = 0;
        while at < input.len() {
            let rest = input.get(at..).unwrap_or_default();
            match &mut self.state {
                State::Opaque => return input.len(),
                State::Head | State::Refusing { .. } | State::Closed => return at,
                State::Body(left) => {
                    let n = (*left).min(rest.len() as u64);
                    *left -= n;
                    at += n as usize;
                    if *left == 0 {
                        self.state = State::Head;
                    }
                }
                State::Chunked(chunk) => match chunk.step(rest) {
                    ChunkStep::More => at = input.len(),
                    ChunkStep::Done(n) => {
                        at += n;
                        self.state = State::Head;
                    }
                    ChunkStep::Invalid => self.state = State::Opaque,
                },
            }
        }
        at
    }

    /// How many leading bytes of `input` pass unchanged and in place: body
    /// bytes, and whole heads in `input` that need no rewriting (nearly
    /// every request), so that hyper reads them where they were read.
    /// Stops where a head needs the copying path: split across reads,
    /// preceded by empty lines, or to be rewritten or refused.
    pub fn pass_in_place(&mut self, input: &[u8]) -> usize {
        let mut at = 0;
        loop {
            at += self.pass(input.get(at..).unwrap_or_default());
            let rest = input.get(at..).unwrap_or_default();
            let at_head_start = matches!(self.state, State::Head)
                && self.head.is_empty()
                && self.head_end.0 == 0
                && !matches!(rest.first(), None | Some(b'\r' | b'\n'));
            if !at_head_start {
                return at;
            }
            let Some(end) = HeadEnd::default().find(rest).filter(|&e| e <= MAX_HEAD) else {
                return at;
            };
            let (next, rewritten) = examine(rest.get(..end).unwrap_or_default());
            if rewritten.is_some() {
                return at;
            }
            self.state = next;
            at += end;
        }
    }

    /// Takes head bytes from the front of `input`, appending the head to
    /// `out` once it is whole; returns how many bytes it took.
    fn take_head(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        let end = match self.state {
            State::Closed => return input.len(),
            // The empty lines a client may send before a request.
            State::Head if self.head.is_empty() => {
                let n = input
                    .iter()
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count();
                if n > 0 {
                    out.extend_from_slice(input.get(..n).unwrap_or_default());
                    return n;
                }
                self.head_end.find(input)
            }
            _ => self.head_end.find(input),
        };
        let take = end.unwrap_or(input.len());
        let taken = input.get(..take).unwrap_or_default();
        if let State::Refusing { dropped, why } = &mut self.state {
            *dropped += take;
            if end.is_some() || *dropped > MAX_DISCARD {
                out.extend_from_slice(&why.head());
                self.state = State::Closed;
            }
            return take;
        }
        if self.head.len() + take > MAX_HEAD {
            let line_ends = self.head.contains(&b'\n')
                || taken
                    .iter()
                    .take(MAX_HEAD - self.head.len())
                    .any(|&b| b == b'\n');
            let why = if line_ends {
                Refusal::Head
            } else {
                Refusal::RequestLine
            };
            let dropped = self.head.len() + take;
            self.head = Vec::new();
            self.state = if end.is_some() {
                out.extend_from_slice(&why.head());
                State::Closed
            } else {
                State::Refusing { dropped, why }
            };
            return take;
        }
        self.head.extend_from_slice(taken);
        if end.is_some() {
            let head = std::mem::take(&mut self.head);
            let (next, rewritten) = examine(&head);
            self.state = next;
            out.extend_from_slice(rewritten.as_deref().unwrap_or(&head));
        }
        take
    }
}

/// Finds the empty line that ends a head, a byte at a time across reads;
/// a bare `\n` ends a line too, as httparse allows.
#[derive(Debug, Default)]
struct HeadEnd(u8);

impl HeadEnd {
    /// Just past the empty line, when `bytes` hold it.
    fn find(&mut self, bytes: &[u8]) -> Option<usize> {
        for (i, &b) in bytes.iter().enumerate() {
            self.0 = match (b, self.0) {
                (b'\n', 1 | 2) => {
                    self.0 = 0;
                    return Some(i + 1);
                }
                (b'\n', _) => 1,
                (b'\r', 1) => 2,
                _ => 0,
            };
        }
        None
    }
}

/// Where a chunked body is.
#[derive(Debug)]
enum Chunk {
    Size {
        digits: u32,
        value: u64,
        ext: bool,
    },
    Data(u64),
    DataEnd,
    /// In the trailer section; whether the current line is empty so far.
    Trailer {
        line_empty: bool,
    },
}

enum ChunkStep {
    /// All the input belongs to the body.
    More,
    /// The body ended after this many bytes.
    Done(usize),
    /// Not a chunked body hyper would read.
    Invalid,
}

impl Chunk {
    const START: Self = Chunk::Size {
        digits: 0,
        value: 0,
        ext: false,
    };

    fn step(&mut self, input: &[u8]) -> ChunkStep {
        let mut used = 0;
        while let Some(&b) = input.get(used) {
            used += 1;
            *self = match std::mem::replace(self, Chunk::DataEnd) {
                Chunk::Data(left) => {
                    let n = left.min((input.len() - used + 1) as u64);
                    used += n as usize - 1;
                    match left - n {
                        0 => Chunk::DataEnd,
                        left => Chunk::Data(left),
                    }
                }
                Chunk::Size { digits: 0, .. } if b == b'\n' => return ChunkStep::Invalid,
                Chunk::Size { value: 0, .. } if b == b'\n' => Chunk::Trailer { line_empty: true },
                Chunk::Size { value, .. } if b == b'\n' => Chunk::Data(value),
                Chunk::Size { digits, value, ext } => match (ext, b, (b as char).to_digit(16)) {
                    (true, _, _) => Chunk::Size { digits, value, ext },
                    (false, b';' | b' ' | b'\t' | b'\r', _) => Chunk::Size {
                        digits,
                        value,
                        ext: true,
                    },
                    (false, _, Some(d)) if digits < 16 => Chunk::Size {
                        digits: digits + 1,
                        value: value * 16 + u64::from(d),
                        ext,
                    },
                    _ => return ChunkStep::Invalid,
                },
                Chunk::DataEnd if b == b'\n' => Self::START,
                Chunk::DataEnd => Chunk::DataEnd,
                Chunk::Trailer { line_empty: true } if b == b'\n' => return ChunkStep::Done(used),
                Chunk::Trailer { .. } if b == b'\n' => Chunk::Trailer { line_empty: true },
                Chunk::Trailer { line_empty } if b == b'\r' => Chunk::Trailer { line_empty },
                Chunk::Trailer { .. } => Chunk::Trailer { line_empty: false },
            };
        }
        ChunkStep::More
    }
}

/// The state after a whole head, and the head to hand on when it is not
/// `head` itself.
fn examine(head: &[u8]) -> (State, Option<Vec<u8>>) {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty());
    let request_line = lines.next().unwrap_or_default();
    let parts: Vec<&[u8]> = request_line.split(|&b| b == b' ').collect();
    let [method, target, version] = parts.as_slice() else {
        return (State::Opaque, None);
    };
    let (mut headers, mut internal) = (Vec::new(), false);
    let (mut length, mut chunked, mut opaque) = (None, false, false);
    for line in lines {
        let name = line.split(|&b| b == b':').next().unwrap_or_default();
        if name
            .get(..INTERNAL_PREFIX.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(INTERNAL_PREFIX))
        {
            internal = true;
            continue;
        }
        headers.push(line);
        let value = String::from_utf8_lossy(line.get(name.len() + 1..).unwrap_or_default());
        let value = value.trim();
        if name.eq_ignore_ascii_case(b"content-length") {
            match value.parse::<u64>() {
                Ok(n) if length.is_none_or(|l| l == n) => length = Some(n),
                _ => opaque = true,
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            let last = value.rsplit(',').next().unwrap_or_default().trim();
            chunked = last.eq_ignore_ascii_case("chunked");
            opaque |= !chunked;
        } else if name.eq_ignore_ascii_case(b"upgrade") {
            opaque = true;
        }
    }
    let opaque = opaque || (chunked && length.is_some()) || matches!(*method, b"PRI" | b"CONNECT");
    let state = match length {
        _ if opaque => State::Opaque,
        _ if chunked => State::Chunked(Chunk::START),
        Some(n) if n > 0 => State::Body(n),
        _ => State::Head,
    };
    let long = target.len() > MAX_URI;
    if !long && !internal {
        return (state, None);
    }
    let (path, query) = match target.iter().position(|&b| b == b'?') {
        Some(q) if long => (target.get(..q), target.get(q + 1..)),
        _ => (Some(*target), None),
    };
    let path = path.unwrap_or_default();
    if path.len() > MAX_URI {
        return (State::Closed, Some(Refusal::Path.head()));
    }
    let mut out = Vec::with_capacity(head.len() + 64);
    for part in [*method, b" ", path, b" ", *version] {
        out.extend_from_slice(part);
    }
    for line in headers {
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(line);
    }
    if let Some(q) = query {
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(QUERY_HEADER.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(q);
    }
    out.extend_from_slice(b"\r\n\r\n");
    (state, Some(out))
}

/// Why a head was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The request line is longer than [`MAX_HEAD`].
    RequestLine,
    /// The request line and headers are longer than [`MAX_HEAD`].
    Head,
    /// The target's path is longer than [`MAX_URI`].
    Path,
}

impl Refusal {
    pub const ALL: [Self; 3] = [Self::RequestLine, Self::Head, Self::Path];

    /// Its value in [`REFUSED_HEADER`].
    pub fn name(self) -> &'static str {
        match self {
            Self::RequestLine => "request-line",
            Self::Head => "head",
            Self::Path => "path",
        }
    }

    /// The head standing in for the refused one: answered, then the
    /// connection closes.
    fn head(self) -> Vec<u8> {
        format!(
            "GET / HTTP/1.1\r\nconnection: close\r\n{REFUSED_HEADER}: {}\r\n\r\n",
            self.name()
        )
        .into_bytes()
    }
}

#[cfg(test)]
mod tests;
