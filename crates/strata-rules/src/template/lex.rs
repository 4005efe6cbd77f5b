//! The tokens of a Go template, as Go's `text/template/parse` lexer makes
//! them: text, and the items of each action. Comments are dropped and the
//! `{{-` / `-}}` trim markers are applied to the text here, so what follows
//! never sees them.

use super::text::go_rune_name;

/// A keyword of the template language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keyword {
    Block,
    Break,
    Continue,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

impl Keyword {
    fn parse(word: &str) -> Option<Keyword> {
        Some(match word {
            "block" => Keyword::Block,
            "break" => Keyword::Break,
            "continue" => Keyword::Continue,
            "define" => Keyword::Define,
            "else" => Keyword::Else,
            "end" => Keyword::End,
            "if" => Keyword::If,
            "nil" => Keyword::Nil,
            "range" => Keyword::Range,
            "template" => Keyword::Template,
            "with" => Keyword::With,
            _ => return None,
        })
    }
}

/// What a token is; strings and numbers keep their source spelling.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Text(String),
    LeftDelim,
    RightDelim,
    Space,
    Bool(bool),
    /// A printable ASCII character with no other meaning, such as ','.
    Char(char),
    CharConstant(String),
    Complex(String),
    Declare,
    Assign,
    Pipe,
    LeftParen,
    RightParen,
    Dot,
    /// A field name with its leading '.'.
    Field(String),
    Ident(String),
    Number(String),
    /// A quoted string, quotes and escapes as written.
    Str(String),
    RawStr(String),
    /// A variable with its leading '$'.
    Var(String),
    Keyword(Keyword),
    Eof,
}

/// A token and the byte offset in the template where it starts.
#[derive(Clone, Debug)]
pub(super) struct Token {
    pub tok: Tok,
    pub pos: usize,
}

impl std::fmt::Display for Token {
    /// As Go's parser names a token in its errors.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let quoted = |s: &str| {
            if s.chars().count() > 10 {
                let head: String = s.chars().take(10).collect();
                format!("{}...", super::text::go_quote(&head))
            } else {
                super::text::go_quote(s)
            }
        };
        match &self.tok {
            Tok::Eof => write!(f, "EOF"),
            Tok::Keyword(k) => write!(f, "<{}>", format!("{k:?}").to_lowercase()),
            Tok::Text(s)
            | Tok::CharConstant(s)
            | Tok::Complex(s)
            | Tok::Field(s)
            | Tok::Ident(s)
            | Tok::Number(s)
            | Tok::Str(s)
            | Tok::RawStr(s)
            | Tok::Var(s) => write!(f, "{}", quoted(s)),
            Tok::LeftDelim => write!(f, "\"{{{{\""),
            Tok::RightDelim => write!(f, "\"}}}}\""),
            Tok::Space => write!(f, "\" \""),
            Tok::Bool(b) => write!(f, "{}", quoted(&b.to_string())),
            Tok::Char(c) => write!(f, "{}", quoted(&c.to_string())),
            Tok::Declare => write!(f, "\":=\""),
            Tok::Assign => write!(f, "\"=\""),
            Tok::Pipe => write!(f, "\"|\""),
            Tok::LeftParen => write!(f, "\"(\""),
            Tok::RightParen => write!(f, "\")\""),
            Tok::Dot => write!(f, "\".\""),
        }
    }
}

/// A lexing error and the byte offset where it was found.
#[derive(Debug)]
pub(super) struct LexError {
    pub msg: String,
    pub pos: usize,
}

/// Go's `isSpace`: the white space trim markers and actions know.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    paren_depth: i32,
    out: Vec<Token>,
}

/// Lexes a whole template.
pub(super) fn lex(src: &str) -> Result<Vec<Token>, LexError> {
    let mut l = Lexer {
        src,
        pos: 0,
        paren_depth: 0,
        out: Vec::new(),
    };
    l.run()?;
    Ok(l.out)
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn push(&mut self, tok: Tok, pos: usize) {
        self.out.push(Token { tok, pos });
    }

    fn err<T>(&self, msg: impl Into<String>, pos: usize) -> Result<T, LexError> {
        Err(LexError {
            msg: msg.into(),
            pos,
        })
    }

    /// Whether a right delimiter starts at `p`, and whether it trims.
    fn at_right_delim(&self, p: usize) -> Option<bool> {
        let s = self.src.get(p..).unwrap_or("");
        let mut cs = s.chars();
        if let (Some(a), Some('-')) = (cs.next(), cs.next()) {
            if is_space(a) && s.get(2..).is_some_and(|r| r.starts_with("}}")) {
                return Some(true);
            }
        }
        s.starts_with("}}").then_some(false)
    }

    fn run(&mut self) -> Result<(), LexError> {
        let mut trim_leading = false;
        loop {
            let start = self.pos;
            let rest = self.rest();
            let Some(x) = rest.find("{{") else {
                let mut text = rest;
                if trim_leading {
                    text = text.trim_start_matches(is_space);
                }
                if !text.is_empty() {
                    self.push(Tok::Text(text.to_owned()), start);
                }
                self.push(Tok::Eof, self.src.len());
                return Ok(());
            };
            let after = rest.get(x + 2..).unwrap_or("");
            let left_trim = {
                let mut cs = after.chars();
                cs.next() == Some('-') && cs.next().is_some_and(is_space)
            };
            let mut text = rest.get(..x).unwrap_or("");
            if trim_leading {
                text = text.trim_start_matches(is_space);
            }
            if left_trim {
                text = text.trim_end_matches(is_space);
            }
            if !text.is_empty() {
                self.push(Tok::Text(text.to_owned()), start);
            }
            let delim = start + x;
            self.pos = delim + 2 + if left_trim { 2 } else { 0 };
            if self.rest().starts_with("/*") {
                trim_leading = self.comment()?;
                continue;
            }
            self.push(Tok::LeftDelim, delim);
            self.paren_depth = 0;
            trim_leading = self.action()?;
        }
    }

    /// Skips a comment; returns whether its right delimiter trims.
    fn comment(&mut self) -> Result<bool, LexError> {
        let start = self.pos;
        let Some(end) = self.rest().get(2..).and_then(|r| r.find("*/")) else {
            return self.err("unclosed comment", start);
        };
        let p = start + 2 + end + 2;
        let Some(trim) = self.at_right_delim(p) else {
            return self.err("comment ends before closing delimiter", start);
        };
        self.pos = p + if trim { 4 } else { 2 };
        Ok(trim)
    }

    /// Lexes one action up to and including its right delimiter; returns
    /// whether that trims.
    fn action(&mut self) -> Result<bool, LexError> {
        loop {
            if let Some(trim) = self.at_right_delim(self.pos) {
                if self.paren_depth != 0 {
                    return self.err("unclosed left paren", self.pos);
                }
                let at = self.pos + if trim { 1 } else { 0 };
                self.pos += if trim { 4 } else { 2 };
                self.push(Tok::RightDelim, at);
                return Ok(trim);
            }
            let start = self.pos;
            let Some(c) = self.next() else {
                return self.err("unclosed action", start);
            };
            match c {
                c if is_space(c) => {
                    while self.peek().is_some_and(is_space) {
                        self.next();
                    }
                    // " -}}": the last space belongs to the delimiter.
                    if self.rest().starts_with("-}}") {
                        self.pos -= 1;
                    }
                    if self.pos > start {
                        self.push(Tok::Space, start);
                    }
                }
                '=' => self.push(Tok::Assign, start),
                ':' => {
                    if self.next() != Some('=') {
                        return self.err("expected :=", start);
                    }
                    self.push(Tok::Declare, start);
                }
                '|' => self.push(Tok::Pipe, start),
                '"' => self.quote(start)?,
                '`' => {
                    let Some(end) = self.rest().find('`') else {
                        return self.err("unterminated raw quoted string", start);
                    };
                    self.pos += end + 1;
                    let raw = self.src.get(start..self.pos).unwrap_or("").to_owned();
                    self.push(Tok::RawStr(raw), start);
                }
                '$' => self.field_or_variable(start, true)?,
                '\'' => self.char_constant(start)?,
                '.' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => {
                    self.field_or_variable(start, false)?
                }
                '.' | '+' | '-' | '0'..='9' => {
                    self.pos = start;
                    self.number(start)?;
                }
                c if is_alnum(c) => {
                    self.pos = start;
                    self.identifier(start)?;
                }
                '(' => {
                    self.paren_depth += 1;
                    self.push(Tok::LeftParen, start);
                }
                ')' => {
                    self.paren_depth -= 1;
                    if self.paren_depth < 0 {
                        return self.err("unexpected right paren", start);
                    }
                    self.push(Tok::RightParen, start);
                }
                c if c.is_ascii() && !c.is_ascii_control() => self.push(Tok::Char(c), start),
                c => {
                    return self.err(
                        format!("unrecognized character in action: {}", go_rune_name(c)),
                        start,
                    )
                }
            }
        }
    }

    /// Go's `atTerminator`: what may follow a name.
    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) || matches!(c, '.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(_) => self.rest().starts_with("}}"),
        }
    }

    fn scan_alnum(&mut self) {
        while self.peek().is_some_and(is_alnum) {
            self.next();
        }
    }

    fn field_or_variable(&mut self, start: usize, var: bool) -> Result<(), LexError> {
        if self.at_terminator() {
            let tok = if var { Tok::Var("$".into()) } else { Tok::Dot };
            self.push(tok, start);
            return Ok(());
        }
        self.scan_alnum();
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            return self.err(format!("bad character {}", go_rune_name(c)), self.pos);
        }
        let word = self.src.get(start..self.pos).unwrap_or("").to_owned();
        self.push(
            if var {
                Tok::Var(word)
            } else {
                Tok::Field(word)
            },
            start,
        );
        Ok(())
    }

    fn identifier(&mut self, start: usize) -> Result<(), LexError> {
        self.scan_alnum();
        if !self.at_terminator() {
            let c = self.peek().unwrap_or(' ');
            return self.err(format!("bad character {}", go_rune_name(c)), self.pos);
        }
        let word = self.src.get(start..self.pos).unwrap_or("");
        let tok = match (Keyword::parse(word), word) {
            (Some(k), _) => Tok::Keyword(k),
            (None, "true") => Tok::Bool(true),
            (None, "false") => Tok::Bool(false),
            (None, w) => Tok::Ident(w.to_owned()),
        };
        self.push(tok, start);
        Ok(())
    }

    /// A quoted string or character constant: up to the closing `close`,
    /// stepping over escapes.
    fn quoted(&mut self, start: usize, close: char, what: &str) -> Result<String, LexError> {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    Some(c) if c != '\n' => {}
                    _ => return self.err(format!("unterminated {what}"), start),
                },
                None | Some('\n') => return self.err(format!("unterminated {what}"), start),
                Some(c) if c == close => break,
                Some(_) => {}
            }
        }
        Ok(self.src.get(start..self.pos).unwrap_or("").to_owned())
    }

    fn quote(&mut self, start: usize) -> Result<(), LexError> {
        let s = self.quoted(start, '"', "quoted string")?;
        self.push(Tok::Str(s), start);
        Ok(())
    }

    fn char_constant(&mut self, start: usize) -> Result<(), LexError> {
        let s = self.quoted(start, '\'', "character constant")?;
        self.push(Tok::CharConstant(s), start);
        Ok(())
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.next();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    /// Go's `scanNumber`.
    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if self.peek().is_some_and(is_alnum) {
            self.next();
            return false;
        }
        true
    }

    fn number(&mut self, start: usize) -> Result<(), LexError> {
        let bad = |l: &Self| {
            let text = l.src.get(start..l.pos).unwrap_or("");
            l.err(
                format!("bad number syntax: {}", super::text::go_quote(text)),
                start,
            )
        };
        if !self.scan_number() {
            return bad(self);
        }
        if matches!(self.peek(), Some('+' | '-')) {
            if !self.scan_number() || !self.src.get(..self.pos).is_some_and(|s| s.ends_with('i')) {
                return bad(self);
            }
            let text = self.src.get(start..self.pos).unwrap_or("").to_owned();
            self.push(Tok::Complex(text), start);
            return Ok(());
        }
        let text = self.src.get(start..self.pos).unwrap_or("").to_owned();
        self.push(Tok::Number(text), start);
        Ok(())
    }
}
