//! Tenants: which one a request belongs to (`X-Scope-OrgID`), its limits,
//! and the query view that only sees its series.
//!
//! A named tenant's series carry the label [`TENANT_LABEL`] with the
//! tenant's name, added on write; the default tenant's series carry none.
//! Every read of a tenant selects on that label (`""` for the default
//! tenant, which matches series without it) and strips it from answers, so
//! a query never returns another tenant's series.

use std::sync::Arc;

use axum::http::HeaderMap;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use strata_codec::{Label, MatchOp, Matcher, SeriesMap};
use strata_promql::{MetricMetadata, Queryable, Series, SourceError};
use strata_storage::TENANT_LABEL;

use crate::config::{LimitsConfig, TenantsConfig};
use crate::rate_limit::RateLimiter;
use crate::tenant_id::check_tenant_id;

/// The header that names a request's tenant, as Cortex, Mimir and Loki use.
pub const TENANT_HEADER: &str = "x-scope-orgid";

/// A request's tenant: `None` is the default tenant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tenant(pub Option<Arc<str>>);

impl Tenant {
    pub const DEFAULT: Self = Self(None);

    /// The value of the tenant label of this tenant's series (`""` for the
    /// default tenant: no label).
    pub fn label_value(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }
}

/// The limits one tenant writes under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TenantLimits {
    pub ingest_rate_limit: u64,
    pub ingest_burst: u64,
    pub max_active_series: usize,
}

/// Tenant resolution and per-tenant rate limiters.
pub struct Tenants {
    config: TenantsConfig,
    defaults: TenantLimits,
    limiters: Mutex<FxHashMap<Tenant, Arc<RateLimiter>>>,
}

/// Why a request has no tenant: answered 401 (missing) or 400 (invalid).
#[derive(Debug, PartialEq, Eq)]
pub enum TenantError {
    Missing,
    Invalid(String),
}

impl std::fmt::Display for TenantError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => write!(
                f,
                "no tenant: this server requires the X-Scope-OrgID header"
            ),
            Self::Invalid(why) => write!(f, "invalid X-Scope-OrgID header: {why}"),
        }
    }
}

impl Tenants {
    pub fn new(config: &TenantsConfig, limits: &LimitsConfig) -> Self {
        Self {
            config: config.clone(),
            defaults: TenantLimits {
                ingest_rate_limit: limits.ingest_rate_limit,
                ingest_burst: limits.ingest_burst,
                max_active_series: limits.max_active_series,
            },
            limiters: Mutex::new(FxHashMap::default()),
        }
    }

    /// The tenant a request's headers name.
    pub fn from_headers(&self, headers: &HeaderMap) -> Result<Tenant, TenantError> {
        let Some(value) = headers.get(TENANT_HEADER) else {
            return if self.config.required {
                Err(TenantError::Missing)
            } else {
                Ok(Tenant::DEFAULT)
            };
        };
        let id = value
            .to_str()
            .map_err(|_| TenantError::Invalid("not visible ASCII".into()))?
            .trim();
        if id.is_empty() && !self.config.required {
            return Ok(Tenant::DEFAULT);
        }
        check_tenant_id(id).map_err(TenantError::Invalid)?;
        if id == self.config.default_tenant {
            return Ok(Tenant::DEFAULT);
        }
        Ok(Tenant(Some(id.into())))
    }

    /// The tenant of a name as operators know it (the default tenant's
    /// name is the default tenant).
    pub fn by_name(&self, name: &str) -> Tenant {
        if name == self.config.default_tenant {
            Tenant::DEFAULT
        } else {
            Tenant(Some(name.into()))
        }
    }

    /// The tenant's name as operators know it.
    pub fn name<'a>(&'a self, tenant: &'a Tenant) -> &'a str {
        tenant.0.as_deref().unwrap_or(&self.config.default_tenant)
    }

    /// A tenant's limits: `[limits]`, then its override.
    pub fn limits(&self, tenant: &Tenant) -> TenantLimits {
        let name = self.name(tenant);
        let mut l = self.defaults;
        if let Some(o) = self.config.overrides.iter().find(|o| o.tenant == name) {
            l.ingest_rate_limit = o.ingest_rate_limit.unwrap_or(l.ingest_rate_limit);
            l.ingest_burst = o.ingest_burst.unwrap_or(l.ingest_burst);
            l.max_active_series = o.max_active_series.unwrap_or(l.max_active_series);
        }
        l
    }

    /// Takes `n` samples from the tenant's rate budget, or answers the
    /// seconds to wait and the limit.
    pub fn take(&self, tenant: &Tenant, n: usize) -> Result<(), (u64, u64)> {
        let limits = self.limits(tenant);
        if limits.ingest_rate_limit == 0 {
            return Ok(());
        }
        let limiter = {
            let mut map = self.limiters.lock();
            Arc::clone(map.entry(tenant.clone()).or_insert_with(|| {
                let burst = match limits.ingest_burst {
                    0 => limits.ingest_rate_limit,
                    b => b,
                };
                Arc::new(RateLimiter::new(limits.ingest_rate_limit, burst))
            }))
        };
        limiter
            .take(n)
            .map_err(|wait| (wait, limits.ingest_rate_limit))
    }
}

/// The query view of one tenant over another source.
pub struct TenantSource {
    inner: Arc<dyn Queryable>,
    tenant: Tenant,
}

impl TenantSource {
    pub fn new(inner: Arc<dyn Queryable>, tenant: Tenant) -> Self {
        Self { inner, tenant }
    }

    /// `matchers` plus the one that keeps to this tenant's series, or
    /// `None` when nothing can match. In a tenant's view no series has the
    /// tenant label, so a matcher on it is decided against the empty value.
    fn scoped(&self, matchers: &[Matcher]) -> Result<Option<Vec<Matcher>>, SourceError> {
        scope(&self.tenant, matchers).map_err(SourceError::Internal)
    }
}

/// `matchers` plus the one that keeps to `tenant`'s series, or `None` when
/// nothing can match. In a tenant's view no series has the tenant label, so
/// a matcher on it is decided against the empty value.
pub fn scope(tenant: &Tenant, matchers: &[Matcher]) -> Result<Option<Vec<Matcher>>, String> {
    let mut out = Vec::with_capacity(matchers.len() + 1);
    for m in matchers {
        if m.name == TENANT_LABEL {
            if !m.matches("") {
                return Ok(None);
            }
        } else {
            out.push(m.clone());
        }
    }
    out.push(
        Matcher::new(MatchOp::Equal, TENANT_LABEL, tenant.label_value())
            .map_err(|e| format!("tenant matcher: {e}"))?,
    );
    Ok(Some(out))
}

fn strip(labels: &mut Vec<Label>) {
    labels.retain(|l| l.name != TENANT_LABEL);
}

/// [`strip`] of a series' shared labels: moved out when not shared, else
/// copied.
fn strip_series(series: &mut Series) {
    if !series.labels.iter().any(|l| l.name == TENANT_LABEL) {
        return;
    }
    let kept: Vec<Label> = match Arc::get_mut(&mut series.labels) {
        Some(own) => own
            .iter_mut()
            .filter(|l| l.name != TENANT_LABEL)
            .map(std::mem::take)
            .collect(),
        None => series
            .labels
            .iter()
            .filter(|l| l.name != TENANT_LABEL)
            .cloned()
            .collect(),
    };
    series.labels = kept.into();
}

#[async_trait::async_trait]
impl Queryable for TenantSource {
    async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        let Some(matchers) = self.scoped(matchers)? else {
            return Ok(Vec::new());
        };
        let mut series = self.inner.select(&matchers, mint, maxt).await?;
        for s in &mut series {
            strip_series(s);
        }
        Ok(series)
    }

    async fn select_mapped(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
        map: SeriesMap,
    ) -> Result<Vec<Series>, SourceError> {
        let Some(matchers) = self.scoped(matchers)? else {
            return Ok(Vec::new());
        };
        let mut series = self.inner.select_mapped(&matchers, mint, maxt, map).await?;
        for s in &mut series {
            strip_series(s);
        }
        series.sort_unstable_by(|a, b| a.labels.cmp(&b.labels));
        Ok(series)
    }

    async fn series(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Vec<Label>>, SourceError> {
        let Some(matchers) = self.scoped(matchers)? else {
            return Ok(Vec::new());
        };
        let mut all = self.inner.series(&matchers, mint, maxt).await?;
        for labels in &mut all {
            strip(labels);
        }
        Ok(all)
    }

    async fn label_names(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        let Some(matchers) = self.scoped(matchers)? else {
            return Ok(Vec::new());
        };
        let mut names = self.inner.label_names(&matchers, mint, maxt).await?;
        names.retain(|n| n != TENANT_LABEL);
        Ok(names)
    }

    async fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        let Some(matchers) = self.scoped(matchers)?.filter(|_| name != TENANT_LABEL) else {
            return Ok(Vec::new());
        };
        self.inner.label_values(name, &matchers, mint, maxt).await
    }

    async fn metadata(
        &self,
        _tenant: &str,
        metric: Option<&str>,
    ) -> Result<Vec<(String, Vec<MetricMetadata>)>, SourceError> {
        self.inner.metadata(self.tenant.label_value(), metric).await
    }

    async fn exemplars(
        &self,
        matcher_sets: &[Vec<Matcher>],
        start: i64,
        end: i64,
    ) -> Result<Vec<strata_codec::SeriesExemplars>, SourceError> {
        let mut scoped = Vec::with_capacity(matcher_sets.len());
        for set in matcher_sets {
            scoped.extend(self.scoped(set)?);
        }
        if scoped.is_empty() {
            return Ok(Vec::new());
        }
        let mut found = self.inner.exemplars(&scoped, start, end).await?;
        for s in &mut found {
            strip(&mut s.labels);
        }
        Ok(found)
    }

    async fn tsdb_status(
        &self,
        _tenant: &str,
        limit: usize,
    ) -> Result<Option<strata_promql::TsdbStatus>, SourceError> {
        self.inner
            .tsdb_status(self.tenant.label_value(), limit)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn tenants(required: bool) -> Tenants {
        let mut c = Config::load(None, Vec::new(), &Default::default()).unwrap();
        c.tenants.required = required;
        c.limits.ingest_rate_limit = 100;
        c.tenants.overrides.push(crate::config::TenantOverride {
            tenant: "big".into(),
            ingest_rate_limit: Some(1000),
            ingest_burst: None,
            max_active_series: Some(5),
        });
        Tenants::new(&c.tenants, &c.limits)
    }

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(TENANT_HEADER, v.parse().unwrap());
        h
    }

    #[test]
    fn resolution() {
        let t = tenants(false);
        assert_eq!(t.from_headers(&HeaderMap::new()), Ok(Tenant::DEFAULT));
        assert_eq!(t.from_headers(&headers("anonymous")), Ok(Tenant::DEFAULT));
        assert_eq!(
            t.from_headers(&headers("team-a")),
            Ok(Tenant(Some("team-a".into())))
        );
        assert!(matches!(
            t.from_headers(&headers("a/b")),
            Err(TenantError::Invalid(_))
        ));
        assert!(matches!(
            t.from_headers(&headers("..")),
            Err(TenantError::Invalid(_))
        ));
        assert!(matches!(
            t.from_headers(&headers(&"x".repeat(151))),
            Err(TenantError::Invalid(_))
        ));
        let strict = tenants(true);
        assert_eq!(
            strict.from_headers(&HeaderMap::new()),
            Err(TenantError::Missing)
        );
    }

    #[test]
    fn limits_and_overrides() {
        let t = tenants(false);
        let big = Tenant(Some("big".into()));
        assert_eq!(t.limits(&big).ingest_rate_limit, 1000);
        assert_eq!(t.limits(&big).max_active_series, 5);
        assert_eq!(t.limits(&Tenant::DEFAULT).ingest_rate_limit, 100);
        // Each tenant has its own budget.
        assert!(t.take(&Tenant::DEFAULT, 100).is_ok());
        assert_eq!(t.take(&Tenant::DEFAULT, 50).map_err(|e| e.1), Err(100));
        assert!(t.take(&big, 900).is_ok());
    }
}
