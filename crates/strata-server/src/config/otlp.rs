//! `[otlp]`: how OTLP metrics become Prometheus series.

use serde::{Deserialize, Serialize};

use super::name_list;

/// How OTLP metrics become Prometheus series: Prometheus 3's `otlp`
/// settings, by the same names and with the same defaults.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OtlpConfig {
    /// `UnderscoreEscapingWithSuffixes`, `UnderscoreEscapingWithoutSuffixes`,
    /// `NoUTF8EscapingWithSuffixes` or `NoTranslation`.
    pub translation_strategy: String,
    #[serde(deserialize_with = "name_list")]
    pub promote_resource_attributes: Vec<String>,
    pub promote_all_resource_attributes: bool,
    #[serde(deserialize_with = "name_list")]
    pub ignore_resource_attributes: Vec<String>,
    pub keep_identifying_resource_attributes: bool,
    pub promote_scope_metadata: bool,
    pub label_name_underscore_sanitization: bool,
    pub label_name_preserve_multiple_underscores: bool,
}

impl OtlpConfig {
    /// The translation settings, or what is wrong with them.
    pub fn settings(&self) -> Result<strata_otlp::Settings, String> {
        let strategy = strata_otlp::TranslationStrategy::from_name(&self.translation_strategy)
            .ok_or_else(|| {
                format!(
                    "otlp.translation_strategy: {:?} is none of {}",
                    self.translation_strategy,
                    strata_otlp::TranslationStrategy::ALL
                        .map(|s| s.name())
                        .join(", ")
                )
            })?;
        if self.promote_all_resource_attributes && !self.promote_resource_attributes.is_empty() {
            return Err(
                "otlp: promote_all_resource_attributes and promote_resource_attributes \
                        exclude each other"
                    .into(),
            );
        }
        if !self.promote_all_resource_attributes && !self.ignore_resource_attributes.is_empty() {
            return Err(
                "otlp.ignore_resource_attributes needs promote_all_resource_attributes = true"
                    .into(),
            );
        }
        Ok(strata_otlp::Settings {
            translation_strategy: strategy,
            promote_resource_attributes: self.promote_resource_attributes.clone(),
            promote_all_resource_attributes: self.promote_all_resource_attributes,
            ignore_resource_attributes: self.ignore_resource_attributes.clone(),
            keep_identifying_resource_attributes: self.keep_identifying_resource_attributes,
            promote_scope_metadata: self.promote_scope_metadata,
            label_name_underscore_sanitization: self.label_name_underscore_sanitization,
            label_name_preserve_multiple_underscores: self.label_name_preserve_multiple_underscores,
        })
    }
}
