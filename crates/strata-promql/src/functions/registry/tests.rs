//! The table against itself and against the parser's own signatures.

use promql_parser::parser::{self, Expr};

use super::*;

#[test]
fn sorted_by_name_without_duplicates() {
    for pair in FUNCTIONS.windows(2) {
        if let [a, b] = pair {
            assert!(a.name < b.name, "{} is not before {}", a.name, b.name);
        }
    }
    for f in FUNCTIONS {
        assert!(lookup(f.name).is_some_and(|found| found.name == f.name));
    }
    assert!(lookup("holt_winters").is_none());
    assert!(lookup("").is_none());
}

/// A call of `f` with one argument of each listed kind.
fn call_text(f: &Function) -> String {
    let args: Vec<&str> = f
        .args
        .iter()
        .map(|k| match k {
            Kind::Scalar => "1",
            Kind::InstantVector => "x",
            Kind::RangeVector => "x[1m]",
            Kind::String => "\"a\"",
        })
        .collect();
    format!("{}({})", f.name, args.join(", "))
}

#[test]
fn signatures_match_the_parser() {
    for f in FUNCTIONS {
        let text = call_text(f);
        let Ok(Expr::Call(c)) = parser::parse(&text) else {
            panic!("{text} does not parse to a call");
        };
        assert!(f.signature_is(&c.func), "{}: {:?}", f.name, c.func);
        assert_eq!(c.func.experimental, f.experimental, "{}", f.name);
    }
    let Ok(Expr::Call(abs)) = parser::parse("abs(x)") else {
        panic!("abs(x) does not parse to a call");
    };
    for other in ["round", "hour", "clamp", "rate", "scalar"] {
        assert!(
            lookup(other).is_some_and(|f| !f.signature_is(&abs.func)),
            "{other}"
        );
    }
}

#[test]
fn range_functions_take_one_range_vector() {
    for f in FUNCTIONS {
        let ranges = f.args.iter().filter(|k| **k == Kind::RangeVector).count();
        let is_range = matches!(f.eval, Eval::Range(..));
        assert_eq!(ranges, usize::from(is_range), "{}", f.name);
    }
}
