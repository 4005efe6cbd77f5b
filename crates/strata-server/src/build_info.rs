//! What this binary is: its version and the build facts `build.rs`
//! recorded, for `/api/v1/status/buildinfo` and `strata_build_info`.

/// The running binary's build.
pub struct BuildInfo {
    pub version: &'static str,
    /// The git commit built, or "unknown".
    pub revision: &'static str,
    pub branch: &'static str,
    /// When the build script last ran (`SOURCE_DATE_EPOCH` when set), as
    /// Prometheus writes it: `20240131-15:04:05`.
    pub build_date: &'static str,
    /// `rustc --version` of the compiler.
    pub rustc: &'static str,
}

pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    revision: env!("STRATA_BUILD_REVISION"),
    branch: env!("STRATA_BUILD_BRANCH"),
    build_date: env!("STRATA_BUILD_DATE"),
    rustc: env!("STRATA_BUILD_RUSTC"),
};
