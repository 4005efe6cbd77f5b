//! A resource and its scopes: the labels they give every series (`job`,
//! `instance`, promoted attributes, scope metadata), and `target_info`.

use bytes::Bytes;
use strata_write::{MetricMetadata, RawSeries};

use super::{
    millis, point_count, widen, ResourceLabels, Translator, INSTANCE, JOB, NAME,
    SERVICE_INSTANCE_ID, SERVICE_NAME, SERVICE_NAMESPACE, TARGET_INFO_INTERVAL_MS,
};
use crate::attributes::{get, value_string, LabelBuilder};
use crate::proto::KeyValue;

impl<'a> Translator<'a> {
    pub(super) fn resource(&mut self, rm: &'a crate::proto::ResourceMetrics) {
        let attrs: &[KeyValue] = rm.resource.as_ref().map_or(&[], |r| &r.attributes);
        let total: usize = rm
            .scope_metrics
            .iter()
            .flat_map(|sm| &sm.metrics)
            .map(|m| point_count(m.data.as_ref()))
            .sum();
        self.data_points += total;
        let resource = match self.resource_labels(attrs) {
            Ok(r) => r,
            Err(e) => {
                self.refuse("resource", total, format!("resource attributes: {e}"));
                return;
            }
        };
        let mut range = (u64::MAX, 0u64);
        for sm in &rm.scope_metrics {
            let scope = match self.scope_labels(sm) {
                Ok(s) => s,
                Err(e) => {
                    let n = sm
                        .metrics
                        .iter()
                        .map(|m| point_count(m.data.as_ref()))
                        .sum();
                    self.refuse("scope", n, format!("scope attributes: {e}"));
                    continue;
                }
            };
            for m in &sm.metrics {
                widen(&mut range, m.data.as_ref());
                self.metric(m, &resource, scope.as_ref());
            }
        }
        if range.0 != u64::MAX {
            self.target_info(attrs, &resource, millis(range.0), millis(range.1));
        }
    }

    fn resource_labels(&mut self, attrs: &[KeyValue]) -> Result<ResourceLabels, String> {
        let mut job = String::new();
        if let Some(name) = get(attrs, SERVICE_NAME) {
            job = value_string(name.value.as_ref());
            if let Some(ns) = get(attrs, SERVICE_NAMESPACE) {
                job = format!("{}/{job}", value_string(ns.value.as_ref()));
            }
        }
        let instance = get(attrs, SERVICE_INSTANCE_ID)
            .map(|kv| value_string(kv.value.as_ref()))
            .unwrap_or_default();
        let s = self.settings;
        let mut promoted = LabelBuilder::default();
        for kv in attrs {
            let listed = if s.promote_all_resource_attributes {
                !s.ignore_resource_attributes.contains(&kv.key)
            } else {
                s.promote_resource_attributes.contains(&kv.key)
            };
            if listed {
                promoted.set(self.names.build(&kv.key)?, value_string(kv.value.as_ref()));
            }
        }
        Ok(ResourceLabels {
            job: Bytes::from(job),
            instance: Bytes::from(instance),
            promoted,
        })
    }

    fn scope_labels(
        &mut self,
        sm: &crate::proto::ScopeMetrics,
    ) -> Result<Option<LabelBuilder>, String> {
        let Some(scope) = sm.scope.as_ref().filter(|s| !s.name.is_empty()) else {
            return Ok(None);
        };
        if !self.settings.promote_scope_metadata {
            return Ok(None);
        }
        let mut b = LabelBuilder::default();
        for kv in &scope.attributes {
            let name = self.names.build(&format!("otel_scope_{}", kv.key))?;
            b.set(name, value_string(kv.value.as_ref()));
        }
        b.set(Bytes::from_static(b"otel_scope_name"), scope.name.clone());
        b.set(
            Bytes::from_static(b"otel_scope_version"),
            scope.version.clone(),
        );
        b.set(
            Bytes::from_static(b"otel_scope_schema_url"),
            sm.schema_url.clone(),
        );
        Ok(Some(b))
    }

    /// `target_info` for a resource with attributes beyond its identity,
    /// from its first to its last point.
    fn target_info(
        &mut self,
        attrs: &[KeyValue],
        resource: &ResourceLabels,
        first: i64,
        last: i64,
    ) {
        let identifying = [SERVICE_NAMESPACE, SERVICE_NAME, SERVICE_INSTANCE_ID];
        let others = attrs
            .iter()
            .filter(|kv| !identifying.contains(&kv.key.as_str()))
            .count();
        if others == 0 {
            return;
        }
        let ignore: &[&str] = if self.settings.keep_identifying_resource_attributes {
            &["__name__"]
        } else {
            &[
                "__name__",
                SERVICE_NAMESPACE,
                SERVICE_NAME,
                SERVICE_INSTANCE_ID,
            ]
        };
        let mut b = match LabelBuilder::from_attributes(
            attrs,
            ignore,
            &mut self.names,
            &mut self.collisions,
        ) {
            Ok(b) => b,
            Err(e) => {
                self.warnings.push(format!("target_info not written: {e}"));
                return;
            }
        };
        b.set(JOB, resource.job.clone());
        b.set(INSTANCE, resource.instance.clone());
        if b.get("job").is_none() && b.get("instance").is_none() {
            return;
        }
        b.set(NAME, Bytes::from_static(b"target_info"));
        self.out.metadata.push(MetricMetadata {
            metric: "target_info".into(),
            kind: "gauge",
            help: "Target metadata".into(),
            unit: String::new(),
        });
        let mut samples = Vec::new();
        let mut t = first;
        while t < last {
            samples.push((t, 1.0));
            t += TARGET_INFO_INTERVAL_MS;
        }
        samples.push((last, 1.0));
        self.out.series.push(RawSeries {
            labels: b.into_raw(),
            samples,
            histograms: Vec::new(),
            exemplars: Vec::new(),
        });
    }
}
