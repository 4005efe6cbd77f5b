//! Build facts for `/api/v1/status/buildinfo` and `strata_build_info`: the
//! commit and branch (from `STRATA_REVISION` / `STRATA_BRANCH`, else git,
//! else "unknown", so a source tarball or a Docker context without `.git`
//! builds too), the build date (`SOURCE_DATE_EPOCH` when set, for
//! reproducible builds) and the compiler's version.
// A build stamps the wall-clock time it ran, unless SOURCE_DATE_EPOCH says.
#![allow(clippy::disallowed_methods)]

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    for var in ["STRATA_REVISION", "STRATA_BRANCH", "SOURCE_DATE_EPOCH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // A new commit or branch re-runs this script: the files git keeps them
    // in. Without git, only the variables above do. Cargo re-runs a script
    // on every build for a path that does not exist, so only existing
    // ones are named (a packed branch: the folder its loose ref would be
    // written to).
    let git_path = |p: &str| git(&["rev-parse", "--git-path", p]);
    let mut watched: Vec<String> = ["HEAD", "packed-refs"]
        .iter()
        .filter_map(|p| git_path(p))
        .collect();
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
        match git_path(&head_ref) {
            Some(p) if std::path::Path::new(&p).exists() => watched.push(p),
            _ => {
                let folder = head_ref.rsplit_once('/').map_or("refs", |(f, _)| f);
                watched.extend(git_path(folder));
            }
        }
    }
    for p in watched {
        if std::path::Path::new(&p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    let revision = env("STRATA_REVISION")
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    let branch = env("STRATA_BRANCH")
        .or_else(|| git(&["rev-parse", "--abbrev-ref", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    let epoch = env("SOURCE_DATE_EPOCH")
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=STRATA_BUILD_REVISION={revision}");
    println!("cargo:rustc-env=STRATA_BUILD_BRANCH={branch}");
    println!("cargo:rustc-env=STRATA_BUILD_DATE={}", build_date(epoch));
    println!("cargo:rustc-env=STRATA_BUILD_RUSTC={rustc_version}");
}

/// A non-empty environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// What `git args` prints, when git is there and succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (!s.is_empty()).then_some(s)
}

/// Unix seconds in Prometheus' `buildDate` form, `20240131-15:04:05` (UTC).
fn build_date(epoch: u64) -> String {
    let (days, secs) = (epoch / 86_400, epoch % 86_400);
    // Howard Hinnant's days-to-civil, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}:{:02}:{:02}",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}
