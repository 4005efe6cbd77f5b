//! A query's text as the steps before parsing read it
//! ([`crate::range_modifier`], [`crate::duration_expr`]): a token list
//! that knows strings, comments, names, numbers and durations, and the
//! brackets around each token, and not much more.

/// The index of the token opening the bracket that token `close` closes.
pub(crate) fn matching_open(
    tokens: &[Token],
    close: usize,
    open: char,
    shut: char,
) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=close).rev() {
        match tokens.get(j)?.kind {
            Kind::Sym(c) if c == shut => depth += 1,
            Kind::Sym(c) if c == open => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// A name or keyword.
    Word,
    /// A number or duration (`5m`, `1.5e3`, `0x1f`).
    Number,
    /// A quoted string.
    Str,
    /// Any other character.
    Sym(char),
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    /// `{` levels open around the token.
    pub brace_depth: usize,
    /// `[` levels open around the token.
    pub bracket_depth: usize,
}

impl Token {
    pub fn text<'q>(&self, query: &'q str) -> &'q str {
        query.get(self.start..self.end).unwrap_or_default()
    }
}

/// The query's tokens, as far as finding modifiers needs: strings and
/// comments skipped whole, words, numbers and single characters.
pub(crate) fn tokens(query: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let (mut braces, mut brackets) = (0usize, 0usize);
    let mut chars = query.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let kind = match c {
            c if c.is_whitespace() => continue,
            '#' => {
                while chars.next_if(|&(_, c)| c != '\n').is_some() {}
                continue;
            }
            '"' | '\'' | '`' => {
                while let Some((_, s)) = chars.next() {
                    if s == '\\' && c != '`' {
                        chars.next();
                    } else if s == c {
                        break;
                    }
                }
                Kind::Str
            }
            c if c.is_ascii_digit()
                || (c == '.' && chars.peek().is_some_and(|(_, n)| n.is_ascii_digit())) =>
            {
                while chars
                    .next_if(|&(_, n)| n.is_ascii_alphanumeric() || n == '.' || n == '_')
                    .is_some()
                {}
                Kind::Number
            }
            // `:` starts a name (`:job:rate5m`), not a subquery's step.
            c if c.is_alphabetic() || c == '_' || (c == ':' && brackets == 0) => {
                while chars
                    .next_if(|&(_, n)| n.is_alphanumeric() || n == '_' || n == ':')
                    .is_some()
                {}
                Kind::Word
            }
            c => Kind::Sym(c),
        };
        let end = chars.peek().map_or(query.len(), |&(i, _)| i);
        if kind == Kind::Sym('}') || kind == Kind::Sym(']') {
            if kind == Kind::Sym('}') {
                braces = braces.saturating_sub(1);
            } else {
                brackets = brackets.saturating_sub(1);
            }
        }
        out.push(Token {
            kind,
            start,
            end,
            brace_depth: braces,
            bracket_depth: brackets,
        });
        match kind {
            Kind::Sym('{') => braces += 1,
            Kind::Sym('[') => brackets += 1,
            _ => {}
        }
    }
    out
}
