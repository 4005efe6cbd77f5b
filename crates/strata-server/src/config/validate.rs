//! The checks a loaded configuration passes before start-up goes on, each
//! failure naming the key.

use super::{Config, Role, ShardId};

/// `ip:port`, `[ipv6]:port` or `hostname:port`.
fn is_listen_address(s: &str) -> bool {
    if s.parse::<std::net::SocketAddr>().is_ok() {
        return true;
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return false;
    };
    port.parse::<u16>().is_ok()
        && !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

impl Config {
    pub(super) fn validate(&self) -> Result<(), String> {
        self.storage
            .validate()
            .map_err(|e| format!("invalid configuration: storage.{e}"))?;
        self.reader
            .validate()
            .map_err(|e| format!("invalid configuration: {e}"))?;
        if !is_listen_address(&self.server.listen) {
            return Err(format!(
                "invalid configuration: server.listen: {:?} is not an address like 127.0.0.1:9470, localhost:9470 or :9470",
                self.server.listen
            ));
        }
        if self.limits.max_body_bytes == 0 || self.limits.max_decoded_bytes == 0 {
            return Err("invalid configuration: limits.max_body_bytes and limits.max_decoded_bytes must be greater than 0".into());
        }
        if self.tls.enabled() && (self.tls.cert_file.is_empty() || self.tls.key_file.is_empty()) {
            return Err(
                "invalid configuration: tls: cert_file and key_file must be set together".into(),
            );
        }
        if !self.tls.client_ca_file.is_empty() && !self.tls.enabled() {
            return Err(
                "invalid configuration: tls.client_ca_file needs tls.cert_file and tls.key_file"
                    .into(),
            );
        }
        crate::tenant_id::check_tenant_id(&self.tenants.default_tenant)
            .map_err(|e| format!("invalid configuration: tenants.default_tenant: {e}"))?;
        for o in &self.tenants.overrides {
            crate::tenant_id::check_tenant_id(&o.tenant)
                .map_err(|e| format!("invalid configuration: tenants.overrides: {e}"))?;
        }
        self.otlp
            .settings()
            .map_err(|e| format!("invalid configuration: {e}"))?;
        if self.auth.failure_rate_limit > 0 && self.auth.failure_burst == 0 {
            return Err(
                "invalid configuration: auth.failure_burst: must be at least 1 when auth.failure_rate_limit is set"
                    .into(),
            );
        }
        if self.query.timeout.is_zero() {
            return Err("invalid configuration: query.timeout: must be greater than 0".into());
        }
        for e in &self.rules.external_labels {
            if !e.contains('=') {
                return Err(format!(
                    "invalid configuration: rules.external_labels: {e:?} is not name=value"
                ));
            }
        }
        self.notifier_settings()
            .validate()
            .map_err(|e| format!("invalid configuration: alerting: {e}"))?;
        if self.rules.evaluation_interval.is_zero() {
            return Err(
                "invalid configuration: rules.evaluation_interval: must be greater than 0".into(),
            );
        }
        if self.query.queue_timeout.is_zero() {
            return Err(
                "invalid configuration: query.queue_timeout: must be greater than 0".into(),
            );
        }
        if self.query.max_concurrent == 0 {
            return Err("invalid configuration: query.max_concurrent: must be at least 1".into());
        }
        self.validate_shards()
    }

    fn validate_shards(&self) -> Result<(), String> {
        let shards = &self.shards;
        if shards.count == 0 {
            return Err("invalid configuration: shards.count: must be at least 1".into());
        }
        if let ShardId::Index(id) = shards.id {
            if id >= shards.count {
                return Err(format!(
                    "invalid configuration: shards.id: {id} is not below shards.count ({})",
                    shards.count
                ));
            }
        }
        if shards.forward_timeout.is_zero() {
            return Err(
                "invalid configuration: shards.forward_timeout: must be greater than 0".into(),
            );
        }
        if self.server.role == Role::Ruler {
            let url = &self.ruler.write_url;
            if url.is_empty() {
                return Err("invalid configuration: ruler.write_url: a ruler needs the URL of the distributor or writer it writes to".into());
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "invalid configuration: ruler.write_url: {url:?} is not an http:// or https:// URL"
                ));
            }
        }
        for (key, d) in [
            ("ruler.write_timeout", self.ruler.write_timeout),
            ("ruler.poll_interval", self.ruler.poll_interval),
            ("ruler.heartbeat_interval", self.ruler.heartbeat_interval),
        ] {
            if d.is_zero() {
                return Err(format!(
                    "invalid configuration: {key}: must be greater than 0"
                ));
            }
        }
        if self.server.role == Role::Distributor {
            if shards.writers.is_empty() {
                return Err("invalid configuration: shards.writers: a distributor needs the writers' URLs (--writers URL,URL,...)".into());
            }
            if let Some(bad) = shards
                .writers
                .iter()
                .find(|u| !(u.starts_with("http://") || u.starts_with("https://")))
            {
                return Err(format!(
                    "invalid configuration: shards.writers: {bad:?} is not an http:// or https:// URL"
                ));
            }
        }
        Ok(())
    }
}
