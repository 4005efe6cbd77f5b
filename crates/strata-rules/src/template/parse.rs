//! A Go template parsed as Go's `text/template/parse` parses it, with Go's
//! error messages, into a tree that [`super::emit`] writes back out for
//! gtmpl, its literals decoded by [`super::literal`].

use super::lex::{Keyword, Tok, Token};
use super::literal::{number, unquote, unquote_char};

/// A parsing error and the byte offset where it was found.
#[derive(Debug)]
pub(super) struct ParseError {
    pub msg: String,
    pub pos: usize,
}

/// A parsed template: its body and the templates it defines.
pub(super) struct Tree {
    pub body: Vec<Node>,
    pub defines: Vec<(String, Vec<Node>)>,
}

pub(super) enum Node {
    Text(String),
    /// `{{pipeline}}`: printed unless it declares or assigns.
    Action(Pipe),
    If(Control),
    With(Control),
    Range(Control),
    /// `{{template "name" pipeline}}`.
    Template {
        name: String,
        pipe: Option<Pipe>,
    },
    /// `{{break}}` or `{{continue}}`, which gtmpl cannot run.
    Unsupported {
        what: &'static str,
        pos: usize,
    },
}

/// `if`, `with` or `range`: the pipeline, the body, and an `else` body.
pub(super) struct Control {
    pub pipe: Pipe,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

/// A variable as written, and where.
#[derive(Clone)]
pub(super) struct Var {
    pub name: String,
    pub pos: usize,
}

pub(super) struct Pipe {
    pub pos: usize,
    pub decl: Vec<Var>,
    /// `$x = ...` rather than `$x := ...`.
    pub is_assign: bool,
    pub cmds: Vec<Cmd>,
}

pub(super) struct Cmd {
    pub args: Vec<Arg>,
}

/// An operand: a term with the fields that follow it.
pub(super) enum Arg {
    Dot,
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Ident(String),
    /// `.a.b`: fields of dot.
    Field(Vec<String>),
    /// `$x.a.b`.
    Var(Var, Vec<String>),
    /// `(pipeline).a`, `func.a`.
    Chain(Box<Arg>, Vec<String>),
    Pipe(Pipe),
}

impl Arg {
    /// The fields that end this operand, if any.
    pub(super) fn fields(&self) -> &[String] {
        match self {
            Arg::Field(f) | Arg::Var(_, f) | Arg::Chain(_, f) => f,
            _ => &[],
        }
    }
}

enum Item {
    Node(Node),
    End,
    /// `{{else}}`; an `if` or `with` after it is left pending.
    Else,
}

struct Parser<'a> {
    toks: &'a [Token],
    i: usize,
    /// The token `next` returned last, backed up or not: where Go reports
    /// errors.
    last: usize,
    is_func: &'a dyn Fn(&str) -> bool,
    defines: Vec<(String, Vec<Node>)>,
    range_depth: usize,
}

/// Parses the tokens of a template; `is_func` says which names are functions.
pub(super) fn parse(toks: &[Token], is_func: &dyn Fn(&str) -> bool) -> Result<Tree, ParseError> {
    let mut p = Parser {
        toks,
        i: 0,
        last: 0,
        is_func,
        defines: Vec::new(),
        range_depth: 0,
    };
    let mut body = Vec::new();
    loop {
        if matches!(p.peek().tok, Tok::Eof) {
            break;
        }
        if matches!(p.peek().tok, Tok::LeftDelim) {
            let at = p.i;
            p.next();
            if matches!(p.next_non_space().tok, Tok::Keyword(Keyword::Define)) {
                p.definition()?;
                continue;
            }
            p.i = at;
        }
        match p.text_or_action()? {
            Item::Node(n) => body.push(n),
            Item::End => return Err(p.error("unexpected {{end}}")),
            Item::Else => return Err(p.error("unexpected {{else}}")),
        }
    }
    Ok(Tree {
        body,
        defines: p.defines,
    })
}

fn eof() -> &'static Token {
    static EOF: Token = Token {
        tok: Tok::Eof,
        pos: usize::MAX,
    };
    &EOF
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> &'a Token {
        let t = self.toks.get(self.i).unwrap_or(eof());
        self.last = self.i;
        self.i += 1;
        t
    }

    fn backup(&mut self) {
        self.i = self.i.saturating_sub(1);
    }

    fn peek(&mut self) -> &'a Token {
        self.toks.get(self.i).unwrap_or(eof())
    }

    fn next_non_space(&mut self) -> &'a Token {
        loop {
            let t = self.next();
            if !matches!(t.tok, Tok::Space) {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> &'a Token {
        let t = self.next_non_space();
        self.backup();
        t
    }

    /// Where the last token read starts, for errors.
    fn pos(&self) -> usize {
        match self.toks.get(self.last) {
            Some(t) if t.pos != usize::MAX => t.pos,
            _ => self.toks.last().map_or(0, |t| t.pos),
        }
    }

    fn error(&self, msg: impl Into<String>) -> ParseError {
        ParseError {
            msg: msg.into(),
            pos: self.pos(),
        }
    }

    fn unexpected(&self, t: &Token, context: &str) -> ParseError {
        self.error(format!("unexpected {t} in {context}"))
    }

    fn expect_right_delim(&mut self, context: &str) -> Result<(), ParseError> {
        let t = self.next_non_space();
        if matches!(t.tok, Tok::RightDelim) {
            Ok(())
        } else {
            Err(self.unexpected(t, context))
        }
    }

    fn template_name(&mut self, context: &str) -> Result<String, ParseError> {
        let t = self.next_non_space();
        match &t.tok {
            Tok::Str(s) | Tok::RawStr(s) => unquote(s).ok_or_else(|| self.error("invalid syntax")),
            _ => Err(self.unexpected(t, context)),
        }
    }

    fn definition(&mut self) -> Result<(), ParseError> {
        let name = self.template_name("define clause")?;
        self.expect_right_delim("define clause")?;
        let (list, end) = self.item_list()?;
        if !matches!(end, Item::End) {
            return Err(self.error("unexpected {{else}} in define clause"));
        }
        self.defines.push((name, list));
        Ok(())
    }

    fn item_list(&mut self) -> Result<(Vec<Node>, Item), ParseError> {
        let mut list = Vec::new();
        while !matches!(self.peek_non_space().tok, Tok::Eof) {
            match self.text_or_action()? {
                Item::Node(n) => list.push(n),
                end => return Ok((list, end)),
            }
        }
        Err(self.error("unexpected EOF"))
    }

    fn text_or_action(&mut self) -> Result<Item, ParseError> {
        let t = self.next_non_space();
        match &t.tok {
            Tok::Text(s) => Ok(Item::Node(Node::Text(s.clone()))),
            Tok::LeftDelim => self.action(),
            _ => Err(self.unexpected(t, "input")),
        }
    }

    fn action(&mut self) -> Result<Item, ParseError> {
        let t = self.next_non_space();
        let node = match t.tok {
            Tok::Keyword(Keyword::Block) => self.block()?,
            Tok::Keyword(k @ (Keyword::Break | Keyword::Continue)) => {
                let what = if k == Keyword::Break {
                    "{{break}}"
                } else {
                    "{{continue}}"
                };
                self.expect_right_delim(what)?;
                if self.range_depth == 0 {
                    return Err(self.error(format!("{what} outside {{{{range}}}}")));
                }
                Node::Unsupported { what, pos: t.pos }
            }
            Tok::Keyword(Keyword::Else) => {
                let peek = self.peek_non_space();
                if !matches!(peek.tok, Tok::Keyword(Keyword::If | Keyword::With)) {
                    self.expect_right_delim("else")?;
                }
                return Ok(Item::Else);
            }
            Tok::Keyword(Keyword::End) => {
                self.expect_right_delim("end")?;
                return Ok(Item::End);
            }
            Tok::Keyword(Keyword::If) => Node::If(self.control("if")?),
            Tok::Keyword(Keyword::Range) => Node::Range(self.control("range")?),
            Tok::Keyword(Keyword::With) => Node::With(self.control("with")?),
            Tok::Keyword(Keyword::Template) => {
                let name = self.template_name("template clause")?;
                let pipe = if matches!(self.next_non_space().tok, Tok::RightDelim) {
                    None
                } else {
                    self.backup();
                    Some(self.pipeline("template clause", false)?)
                };
                Node::Template { name, pipe }
            }
            _ => {
                self.backup();
                Node::Action(self.pipeline("command", false)?)
            }
        };
        Ok(Item::Node(node))
    }

    fn block(&mut self) -> Result<Node, ParseError> {
        let name = self.template_name("block clause")?;
        let pipe = self.pipeline("block clause", false)?;
        let depth = std::mem::take(&mut self.range_depth);
        let (list, end) = self.item_list()?;
        self.range_depth = depth;
        if !matches!(end, Item::End) {
            return Err(self.error("unexpected {{else}} in block clause"));
        }
        self.defines.push((name.clone(), list));
        Ok(Node::Template {
            name,
            pipe: Some(pipe),
        })
    }

    fn control(&mut self, context: &'static str) -> Result<Control, ParseError> {
        let pipe = self.pipeline(context, false)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let listed = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, next) = listed?;
        let else_list = match next {
            Item::End => None,
            Item::Node(_) => return Err(self.error("expected end")),
            Item::Else => {
                // "{{else if}}" and "{{else with}}" are "{{else}}{{if}}...{{end}}{{end}}",
                // the inner control taking the one {{end}}.
                let peek = self.peek();
                match (&peek.tok, context) {
                    (Tok::Keyword(Keyword::If), "if") => {
                        self.next();
                        Some(vec![Node::If(self.control("if")?)])
                    }
                    (Tok::Keyword(Keyword::With), "with") => {
                        self.next();
                        Some(vec![Node::With(self.control("with")?)])
                    }
                    (Tok::Keyword(_), _) => return Err(self.unexpected(peek, "else")),
                    _ => {
                        let (list, next) = self.item_list()?;
                        if !matches!(next, Item::End) {
                            return Err(self.error("expected end; found {{else}}"));
                        }
                        Some(list)
                    }
                }
            }
        };
        Ok(Control {
            pipe,
            list,
            else_list,
        })
    }

    /// A pipeline up to the right delimiter, or up to a right parenthesis
    /// when `in_parens`.
    fn pipeline(&mut self, context: &str, in_parens: bool) -> Result<Pipe, ParseError> {
        let pos = self.peek_non_space().pos;
        let mut pipe = Pipe {
            pos,
            decl: Vec::new(),
            is_assign: false,
            cmds: Vec::new(),
        };
        loop {
            let v = self.peek_non_space();
            let Tok::Var(name) = &v.tok else { break };
            let at = self.i;
            self.next_non_space();
            let next = self.next_non_space();
            match next.tok {
                Tok::Assign | Tok::Declare => {
                    pipe.is_assign = matches!(next.tok, Tok::Assign);
                    pipe.decl.push(Var {
                        name: name.clone(),
                        pos: v.pos,
                    });
                    break;
                }
                Tok::Char(',') => {
                    pipe.decl.push(Var {
                        name: name.clone(),
                        pos: v.pos,
                    });
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().tok {
                            Tok::Var(_) | Tok::RightDelim | Tok::RightParen => continue,
                            _ => return Err(self.error("range can only initialize variables")),
                        }
                    }
                    return Err(self.error(format!("too many declarations in {context}")));
                }
                _ => {
                    self.i = at;
                    break;
                }
            }
        }
        loop {
            let t = self.next_non_space();
            match &t.tok {
                Tok::RightDelim if !in_parens => break,
                Tok::RightParen if in_parens => break,
                Tok::Bool(_)
                | Tok::CharConstant(_)
                | Tok::Complex(_)
                | Tok::Dot
                | Tok::Field(_)
                | Tok::Ident(_)
                | Tok::Number(_)
                | Tok::Keyword(Keyword::Nil)
                | Tok::RawStr(_)
                | Tok::Str(_)
                | Tok::Var(_)
                | Tok::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(t, context)),
            }
        }
        if pipe.cmds.is_empty() {
            return Err(self.error(format!("missing value for {context}")));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if let Some(
                Arg::Bool(_) | Arg::Dot | Arg::Nil | Arg::Int(_) | Arg::Float(_) | Arg::Str(_),
            ) = c.args.first()
            {
                return Err(self.error(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(pipe)
    }

    fn command(&mut self) -> Result<Cmd, ParseError> {
        let mut args = Vec::new();
        loop {
            self.peek_non_space();
            if let Some(a) = self.operand()? {
                args.push(a);
            }
            let t = self.next();
            match t.tok {
                Tok::Space => continue,
                Tok::RightDelim | Tok::RightParen => self.backup(),
                Tok::Pipe => {}
                _ => return Err(self.unexpected(t, "operand")),
            }
            break;
        }
        if args.is_empty() {
            return Err(self.error("empty command"));
        }
        Ok(Cmd { args })
    }

    fn operand(&mut self) -> Result<Option<Arg>, ParseError> {
        let Some(term) = self.term()? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        while let Tok::Field(f) = &self.peek().tok {
            fields.push(f.trim_start_matches('.').to_owned());
            self.next();
        }
        if fields.is_empty() {
            return Ok(Some(term));
        }
        Ok(Some(match term {
            Arg::Field(mut f) => {
                f.extend(fields);
                Arg::Field(f)
            }
            Arg::Var(v, mut f) => {
                f.extend(fields);
                Arg::Var(v, f)
            }
            Arg::Ident(_) | Arg::Pipe(_) | Arg::Chain(..) => Arg::Chain(Box::new(term), fields),
            _ => return Err(self.error("unexpected . after term")),
        }))
    }

    fn term(&mut self) -> Result<Option<Arg>, ParseError> {
        let t = self.next_non_space();
        Ok(Some(match &t.tok {
            Tok::Ident(name) => {
                if !(self.is_func)(name) {
                    return Err(self.error(format!(
                        "function {} not defined",
                        super::text::go_quote(name)
                    )));
                }
                Arg::Ident(name.clone())
            }
            Tok::Dot => Arg::Dot,
            Tok::Keyword(Keyword::Nil) => Arg::Nil,
            Tok::Var(name) => Arg::Var(
                Var {
                    name: name.clone(),
                    pos: t.pos,
                },
                Vec::new(),
            ),
            Tok::Field(f) => Arg::Field(vec![f.trim_start_matches('.').to_owned()]),
            Tok::Bool(b) => Arg::Bool(*b),
            Tok::Number(text) => number(text).map_err(|m| self.error(m))?,
            Tok::CharConstant(text) => match unquote_char(text) {
                Some(c) => Arg::Int(i64::from(u32::from(c))),
                None => return Err(self.error(format!("malformed character constant: {text}"))),
            },
            Tok::Complex(_) => return Err(self.error("complex numbers are not supported")),
            Tok::LeftParen => Arg::Pipe(self.pipeline("parenthesized pipeline", true)?),
            Tok::Str(s) | Tok::RawStr(s) => {
                Arg::Str(unquote(s).ok_or_else(|| self.error("invalid syntax"))?)
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}
