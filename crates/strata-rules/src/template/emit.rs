//! Writes a parsed template back out as a template that gtmpl runs the way
//! Go runs the original. What gtmpl gets wrong, and how it is avoided:
//!
//! - It prints floats, maps and lists as Rust does: every printed value
//!   goes through `__print`, which prints as Go's `%v`.
//! - It turns float literals without a fraction into integers and negative
//!   ones into their truncation: float literals become `(__float BITS)`.
//! - Its truth knows no Go floats: `if` and `with` test through `__truth`
//!   and `__with`, which keep the value `with` sets dot to.
//! - It ranges over maps in hash order and always runs a range's `else`:
//!   a range becomes an `if` over `__range`, which lists the entries (map
//!   keys sorted), and inner ranges that bind the variables and dot.
//! - It scopes variables declared in `if` and `with` to the enclosing
//!   range body or template instead of the block: a declaration that
//!   shadows another is renamed, so the outer one reads right after `end`.
//! - It has no `$x = value`: that becomes a new declaration of `$x` in the
//!   same runtime scope, which reads the same afterwards; assigning from
//!   inside a range to a variable declared outside it cannot be done that
//!   way and is refused.
//! - It cannot call methods with arguments and misreads missing struct
//!   fields: fields and methods are read through `__field` and `__method`.
//! - Its lexer mishandles raw strings, some escapes and newlines inside
//!   actions, and reads `\\"` as an escaped quote: strings are written back
//!   in one plain quoted form (one ending in a backslash one character
//!   longer, cut by `__chop`), and the lexer here has already dropped
//!   comments and applied trim markers.
//! - It cannot pass `nil`, nor run `{{template "x"}}` on nil data: `nil`
//!   is `__nil`, and a template call without data passes it.

use super::parse::{Arg, Cmd, Control, Node, ParseError, Pipe, Tree, Var};

/// A variable in scope: its name in the template and in what is emitted.
struct Binding {
    name: String,
    emitted: String,
    /// How many range bodies enclose its declaration: gtmpl keeps one
    /// variable scope per range iteration.
    range_level: usize,
}

struct Emitter {
    out: String,
    /// One scope per control structure, innermost last, as Go's parser
    /// keeps them.
    scopes: Vec<Vec<Binding>>,
    range_level: usize,
    /// For names of its own: renamed variables and range helpers.
    counter: usize,
}

/// The gtmpl text of `tree`: its body, then its definitions.
pub(super) fn emit(tree: &Tree) -> Result<String, ParseError> {
    let mut e = Emitter {
        out: String::new(),
        scopes: Vec::new(),
        range_level: 0,
        counter: 0,
    };
    e.tree(&tree.body)?;
    for (name, body) in &tree.defines {
        e.out.push_str(&format!("{{{{define {}}}}}", quote(name)));
        e.tree(body)?;
        e.out.push_str("{{end}}");
    }
    Ok(e.out)
}

/// A string literal gtmpl's lexer and unquoting read back as `s`. Its
/// lexer takes the quote after an escaped backslash for an escaped quote,
/// so a string ending in a backslash is written with one more character,
/// which `__chop` drops.
fn string_literal(s: &str) -> String {
    if s.ends_with('\\') {
        format!("(__chop {})", quote(&format!("{s}.")))
    } else {
        quote(s)
    }
}

/// `s` quoted for gtmpl; see [`string_literal`] for what it cannot read.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '\\' => q.push_str("\\\\"),
            '"' => q.push_str("\\\""),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

impl Emitter {
    /// A template body, with variables of its own: only `$`.
    fn tree(&mut self, body: &[Node]) -> Result<(), ParseError> {
        let saved = (std::mem::take(&mut self.scopes), self.range_level);
        self.scopes.push(vec![Binding {
            name: "$".into(),
            emitted: "$".into(),
            range_level: 0,
        }]);
        self.range_level = 0;
        let r = self.list(body);
        (self.scopes, self.range_level) = saved;
        r
    }

    fn list(&mut self, nodes: &[Node]) -> Result<(), ParseError> {
        nodes.iter().try_for_each(|n| self.node(n))
    }

    fn node(&mut self, n: &Node) -> Result<(), ParseError> {
        match n {
            Node::Text(s) => {
                // A text ending in '{' could make "{{" with what follows.
                match s.strip_suffix('{') {
                    Some(head) => {
                        self.out.push_str(head);
                        self.out.push_str("{{\"{\"}}");
                    }
                    None => self.out.push_str(s),
                }
            }
            Node::Action(p) if p.decl.is_empty() => {
                let cmds = self.cmds(p)?;
                self.out.push_str(&format!("{{{{{cmds} | __print}}}}"));
            }
            Node::Action(p) => {
                self.bind(p)?;
            }
            Node::If(c) => self.if_or_with(c, "if", "__truth")?,
            Node::With(c) => self.if_or_with(c, "with", "__with")?,
            Node::Range(c) => self.range(c)?,
            Node::Template { name, pipe } => {
                let pipe = match pipe {
                    Some(p) => format!(" {}", self.pipe_text(p)?),
                    // Go runs it with nil data, which prints as "<no value>".
                    None => " __nil".to_owned(),
                };
                self.out
                    .push_str(&format!("{{{{template {}{pipe}}}}}", quote(name)));
            }
            Node::Unsupported { what, pos } => {
                return Err(ParseError {
                    msg: format!("{what} is not supported"),
                    pos: *pos,
                })
            }
        }
        Ok(())
    }

    fn if_or_with(&mut self, c: &Control, keyword: &str, test: &str) -> Result<(), ParseError> {
        self.scopes.push(Vec::new());
        let cond = if c.pipe.decl.is_empty() {
            self.cmds(&c.pipe)?
        } else {
            self.bind(&c.pipe)?
        };
        self.out
            .push_str(&format!("{{{{{keyword} {cond} | {test}}}}}"));
        self.list(&c.list)?;
        if let Some(else_list) = &c.else_list {
            self.out.push_str("{{else}}");
            self.list(else_list)?;
        }
        self.out.push_str("{{end}}");
        self.scopes.pop();
        Ok(())
    }

    fn range(&mut self, c: &Control) -> Result<(), ParseError> {
        if c.pipe.is_assign {
            return Err(ParseError {
                msg: "assigning range variables with = is not supported".into(),
                pos: c.pipe.pos,
            });
        }
        self.scopes.push(Vec::new());
        let cmds = self.cmds(&c.pipe)?;
        self.counter += 1;
        let n = self.counter;
        let (r, e) = (format!("$__strata_r{n}"), format!("$__strata_e{n}"));
        let vars = c.pipe.decl.len();
        self.out.push_str(&format!(
            "{{{{if {r} := {cmds} | __range {vars}}}}}{{{{range {e} := {r}}}}}{{{{range {e}.d}}}}"
        ));
        self.range_level += 1;
        match c.pipe.decl.as_slice() {
            [v] => {
                let v = self.declare(v);
                self.out.push_str(&format!("{{{{{v} := {e}.v}}}}"));
            }
            [k, v] => {
                let k = self.declare(k);
                let v = self.declare(v);
                self.out
                    .push_str(&format!("{{{{{k} := {e}.k}}}}{{{{{v} := {e}.v}}}}"));
            }
            _ => {}
        }
        let body = self.list(&c.list);
        self.range_level -= 1;
        body?;
        self.out.push_str("{{end}}{{end}}");
        if let Some(else_list) = &c.else_list {
            self.out.push_str("{{else}}");
            self.list(else_list)?;
        }
        self.out.push_str("{{end}}");
        self.scopes.pop();
        Ok(())
    }

    /// Writes a declaration or assignment as an action of its own; returns
    /// the variable written.
    fn bind(&mut self, p: &Pipe) -> Result<String, ParseError> {
        let (var, text) = self.binding(p)?;
        self.out.push_str(&format!("{{{{{text}}}}}"));
        Ok(var.unwrap_or(text))
    }

    fn declare(&mut self, v: &Var) -> String {
        let shadows = self.scopes.iter().flatten().any(|b| b.name == v.name);
        let emitted = if shadows {
            self.counter += 1;
            format!("{}_strata{}", v.name, self.counter)
        } else {
            v.name.clone()
        };
        let binding = Binding {
            name: v.name.clone(),
            emitted: emitted.clone(),
            range_level: self.range_level,
        };
        if let Some(scope) = self.scopes.last_mut() {
            scope.push(binding);
        }
        emitted
    }

    fn lookup(&self, v: &Var) -> Result<&Binding, ParseError> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|b| b.name == v.name)
            .ok_or_else(|| ParseError {
                msg: format!("undefined variable {}", super::text::go_quote(&v.name)),
                pos: v.pos,
            })
    }

    fn assign(&mut self, v: &Var) -> Result<String, ParseError> {
        let b = self.lookup(v)?;
        if b.range_level != self.range_level {
            return Err(ParseError {
                msg: format!(
                    "assigning to {} inside a {{{{range}}}} it was declared outside of is not supported",
                    v.name
                ),
                pos: v.pos,
            });
        }
        Ok(b.emitted.clone())
    }

    /// A pipeline's commands, its variables left out.
    fn cmds(&mut self, p: &Pipe) -> Result<String, ParseError> {
        let mut parts = Vec::with_capacity(p.cmds.len());
        for (i, c) in p.cmds.iter().enumerate() {
            parts.push(self.cmd(c, i > 0)?);
        }
        Ok(parts.join(" | "))
    }

    /// A pipeline, with its declaration or assignment if it has one.
    fn pipe_text(&mut self, p: &Pipe) -> Result<String, ParseError> {
        Ok(self.binding(p)?.1)
    }

    /// The variable a pipeline sets, if any, and the pipeline's text.
    fn binding(&mut self, p: &Pipe) -> Result<(Option<String>, String), ParseError> {
        // The value is read before the variable exists, as Go runs it.
        let cmds = self.cmds(p)?;
        let var = match p.decl.first() {
            Some(v) if p.is_assign => Some(self.assign(v)?),
            Some(v) => Some(self.declare(v)),
            None => None,
        };
        let text = match &var {
            Some(v) => format!("{v} := {cmds}"),
            None => cmds,
        };
        Ok((var, text))
    }

    fn cmd(&mut self, c: &Cmd, piped: bool) -> Result<String, ParseError> {
        let mut parts = Vec::with_capacity(c.args.len() + 2);
        let mut args = c.args.iter();
        if let Some(first) = c.args.first() {
            // Fields with arguments, or fed a pipeline's value, are a
            // method call in Go.
            if let Some((last, init)) = first.fields().split_last() {
                if c.args.len() > 1 || piped {
                    args.next();
                    let base = self.base(first)?;
                    let recv = if init.is_empty() {
                        base
                    } else {
                        field_access(&base, init)
                    };
                    parts.push("__method".to_owned());
                    parts.push(quote(last));
                    parts.push(recv);
                }
            }
        }
        if parts.is_empty() && matches!(c.args.first(), Some(Arg::Nil)) {
            return Ok("__fail \"nil is not a command\"".into());
        }
        if let (true, Some(Arg::Ident(name))) = (parts.is_empty(), c.args.first()) {
            let given = c.args.len() - 1 + usize::from(piped);
            if let Some(msg) = wrong_arity(name, given) {
                return Ok(format!("__fail {}", quote(&msg)));
            }
            args.next();
            parts.push(name.clone());
        }
        for a in args {
            parts.push(self.arg(a)?);
        }
        Ok(parts.join(" "))
    }

    /// What an operand's fields are read from.
    fn base(&mut self, a: &Arg) -> Result<String, ParseError> {
        Ok(match a {
            Arg::Field(_) => ".".into(),
            Arg::Var(v, _) => self.lookup(v)?.emitted.clone(),
            Arg::Chain(base, _) => self.arg(base)?,
            other => self.arg(other)?,
        })
    }

    fn arg(&mut self, a: &Arg) -> Result<String, ParseError> {
        Ok(match a {
            Arg::Dot => ".".into(),
            // gtmpl cannot pass nil as an argument.
            Arg::Nil => "__nil".into(),
            Arg::Bool(b) => b.to_string(),
            Arg::Int(i) => i.to_string(),
            Arg::Float(f) => format!("(__float {})", f.to_bits()),
            Arg::Str(s) => string_literal(s),
            Arg::Ident(name) => match wrong_arity(name, 0) {
                Some(msg) => format!("(__fail {})", quote(&msg)),
                None => name.clone(),
            },
            Arg::Field(fields) | Arg::Var(_, fields) | Arg::Chain(_, fields) => {
                let base = self.base(a)?;
                if fields.is_empty() {
                    base
                } else {
                    field_access(&base, fields)
                }
            }
            Arg::Pipe(p) => format!("({})", self.pipe_text(p)?),
        })
    }
}

/// Go's error for calling `name` with `given` arguments, if it is one:
/// Go reports it before evaluating them, gtmpl after.
fn wrong_arity(name: &str, given: usize) -> Option<String> {
    match super::prom::arg_count(name) {
        (min, None) if given < min => Some(format!(
            "wrong number of args for {name}: want at least {min} got {given}"
        )),
        (n, Some(max)) if given != max => Some(format!(
            "wrong number of args for {name}: want {n} got {given}"
        )),
        _ => None,
    }
}

fn field_access(base: &str, fields: &[String]) -> String {
    let names: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    format!("(__field {base} {})", names.join(" "))
}
