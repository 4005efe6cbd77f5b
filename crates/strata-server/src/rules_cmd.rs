//! `strata rules check`: rule files checked as `promtool check rules`
//! checks them, with its output and exit codes.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use strata_rules::file::{self, Problem, RuleFile};

/// Flags of `strata rules check`, promtool's.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// Rule files to check; standard input when none is given.
    pub files: Vec<PathBuf>,
    /// Lint checks to apply: duplicate-rules, all or none.
    #[arg(long, default_value = "duplicate-rules")]
    pub lint: String,
    /// Exit 3 when a lint check finds something (and nothing worse).
    #[arg(long)]
    pub lint_fatal: bool,
}

/// What one file's check came to.
#[derive(Default)]
struct Verdict {
    failed: bool,
    has_errors: bool,
}

/// Checks each file (or standard input), printing `Checking FILE` and then
/// `  SUCCESS: N rules found` or `  FAILED:` with the problems, as promtool
/// does; exits 1 when a file has errors, 3 for lint findings with
/// `--lint-fatal`, 0 otherwise.
pub fn check(args: CheckArgs) -> ExitCode {
    let mut lint_duplicates = false;
    for option in args.lint.split(',') {
        match option {
            "all" | "duplicate-rules" => lint_duplicates = true,
            "none" => {}
            other => println!("WARNING: unknown lint option: {other:?}"),
        }
    }
    let mut verdict = Verdict::default();
    if args.files.is_empty() {
        println!("Checking standard input");
        let mut text = String::new();
        let parsed = match std::io::stdin().read_to_string(&mut text) {
            Ok(_) => file::parse(&text),
            Err(e) => Err(vec![Problem::Read(e.to_string())]),
        };
        report(parsed, None, lint_duplicates, &mut verdict);
    } else {
        for path in &args.files {
            println!("Checking {}", path.display());
            report(
                file::load(path),
                Some(&path.display().to_string()),
                lint_duplicates,
                &mut verdict,
            );
        }
    }
    let _ = std::io::stdout().flush();
    if verdict.failed && verdict.has_errors {
        ExitCode::FAILURE
    } else if verdict.failed && args.lint_fatal {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    }
}

fn report(
    parsed: Result<RuleFile, Vec<Problem>>,
    name: Option<&str>,
    lint_duplicates: bool,
    verdict: &mut Verdict,
) {
    // promtool writes the verdict lines to stdout and what failed to
    // stderr; flush so that a terminal shows them in order.
    let _ = std::io::stdout().flush();
    let file = match parsed {
        Ok(file) => file,
        Err(problems) => {
            verdict.failed = true;
            verdict.has_errors = true;
            eprintln!("  FAILED:");
            for problem in problems {
                match name {
                    Some(name) => eprintln!("{name}: {problem}"),
                    None => eprintln!("{problem}"),
                }
            }
            return;
        }
    };
    let duplicates = if lint_duplicates {
        file::duplicate_rules(&file)
    } else {
        Vec::new()
    };
    if duplicates.is_empty() {
        println!("  SUCCESS: {} rules found", file.rule_count());
    } else {
        verdict.failed = true;
        eprintln!("  FAILED:");
        eprintln!("lint error {}", file::render_duplicates(&duplicates));
    }
    println!();
}
