//! Which Alertmanagers a configured URL stands for: itself, or one per
//! address its name resolves to (Prometheus' `dns_sd_configs` with A and
//! AAAA records), looked up at each send.

use std::net::SocketAddr;
use std::time::Duration;

/// One entry of a group's `urls`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// One Alertmanager: the URL to post to.
    Static(String),
    /// One Alertmanager per address of `host`.
    Dns {
        scheme: String,
        host: String,
        port: u16,
        /// The path to post to, from `/`.
        path: String,
    },
}

impl Target {
    /// Parses `spec` (`http(s)://host:port[/path]`, `dns+http(s)://name:port`
    /// or `name:port`) with the group's `path_prefix`.
    pub(crate) fn parse(spec: &str, path_prefix: &str) -> Result<Self, String> {
        let (dns, full) = match spec.split_once("://") {
            Some((scheme, _)) if scheme.starts_with("dns+") => (true, spec.replacen("dns+", "", 1)),
            Some(_) => (false, spec.to_owned()),
            None => (true, format!("http://{spec}")),
        };
        let url = url::Url::parse(&full).map_err(|e| format!("url {spec:?}: {e}"))?;
        let scheme = url.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(format!("url {spec:?}: scheme must be http or https"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "url {spec:?}: credentials go in basic_auth, not in the URL"
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!("url {spec:?}: no query or fragment allowed"));
        }
        let Some(host) = url.host_str() else {
            return Err(format!("url {spec:?}: no host"));
        };
        let path = post_path(url.path(), path_prefix);
        if !dns {
            let authority = match url.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            };
            return Ok(Self::Static(format!("{scheme}://{authority}{path}")));
        }
        // A plain name states its port; a URL may leave its scheme's.
        let plain_port = !spec.contains("://")
            && spec
                .rsplit_once(':')
                .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
        let port = match url.port_or_known_default() {
            Some(port) if plain_port || spec.contains("://") => port,
            _ => return Err(format!("url {spec:?}: a name to look up needs a port")),
        };
        Ok(Self::Dns {
            scheme: scheme.to_owned(),
            host: host.to_owned(),
            port,
            path,
        })
    }

    /// The Alertmanagers this target stands for now; `Err` when the name
    /// could not be looked up in `timeout`.
    pub(crate) async fn resolve(&self, timeout: Duration) -> Result<Vec<String>, String> {
        let (scheme, host, port, path) = match self {
            Self::Static(url) => return Ok(vec![url.clone()]),
            Self::Dns {
                scheme,
                host,
                port,
                path,
            } => (scheme, host, port, path),
        };
        let lookup = tokio::net::lookup_host(format!("{host}:{port}"));
        let addrs: Vec<SocketAddr> = match tokio::time::timeout(timeout, lookup).await {
            Ok(Ok(addrs)) => addrs.collect(),
            Ok(Err(e)) => return Err(format!("looking up {host}: {e}")),
            Err(_) => return Err(format!("looking up {host}: timed out")),
        };
        let mut urls: Vec<String> = addrs
            .into_iter()
            .map(|addr| format!("{scheme}://{addr}{path}"))
            .collect();
        urls.sort();
        urls.dedup();
        Ok(urls)
    }

    /// The text it was keyed by in the look-up cache.
    pub(crate) fn key(&self) -> String {
        match self {
            Self::Static(url) => url.clone(),
            Self::Dns {
                scheme,
                host,
                port,
                path,
            } => format!("dns+{scheme}://{host}:{port}{path}"),
        }
    }
}

/// `path.Join("/", base, prefix, "/api/v2/alerts")`, without `..`.
fn post_path(base: &str, prefix: &str) -> String {
    let mut out = String::new();
    for segment in base
        .split('/')
        .chain(prefix.split('/'))
        .chain(["api", "v2", "alerts"])
        .filter(|s| !s.is_empty() && *s != ".")
    {
        out.push('/');
        out.push_str(segment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_urls_take_the_prefix() {
        assert_eq!(
            Target::parse("http://am:9093", "").unwrap(),
            Target::Static("http://am:9093/api/v2/alerts".into())
        );
        assert_eq!(
            Target::parse("https://am.example/base/", "/pre/fix/").unwrap(),
            Target::Static("https://am.example/base/pre/fix/api/v2/alerts".into())
        );
        assert_eq!(
            Target::parse("http://[::1]:9093", "x").unwrap(),
            Target::Static("http://[::1]:9093/x/api/v2/alerts".into())
        );
    }

    #[test]
    fn names_to_look_up() {
        let want = Target::Dns {
            scheme: "http".into(),
            host: "alertmanager".into(),
            port: 9093,
            path: "/api/v2/alerts".into(),
        };
        assert_eq!(Target::parse("alertmanager:9093", "").unwrap(), want);
        assert_eq!(
            Target::parse("dns+http://alertmanager:9093", "").unwrap(),
            want
        );
        let Target::Dns { scheme, .. } = Target::parse("dns+https://am:443", "").unwrap() else {
            panic!("not dns");
        };
        assert_eq!(scheme, "https");
        let Target::Dns { port, .. } = Target::parse("dns+http://am", "").unwrap() else {
            panic!("not dns");
        };
        assert_eq!(port, 80);
    }

    #[test]
    fn bad_urls() {
        for (spec, want) in [
            ("ftp://am:21", "scheme"),
            ("http://u:p@am:9093", "basic_auth"),
            ("http://am:9093/?a=b", "query"),
            ("alertmanager", "port"),
        ] {
            let err = Target::parse(spec, "").unwrap_err();
            assert!(err.contains(want), "{spec}: {err}");
        }
    }

    #[tokio::test]
    async fn resolves_to_every_address() {
        let t = Target::parse("dns+http://localhost:9093", "p").unwrap();
        let urls = t.resolve(Duration::from_secs(5)).await.unwrap();
        assert!(!urls.is_empty());
        for url in &urls {
            assert!(
                url == "http://127.0.0.1:9093/p/api/v2/alerts"
                    || url == "http://[::1]:9093/p/api/v2/alerts",
                "{url}"
            );
        }
        let t = Target::parse("127.0.0.1:1", "").unwrap();
        assert_eq!(
            t.resolve(Duration::from_secs(5)).await.unwrap(),
            vec!["http://127.0.0.1:1/api/v2/alerts".to_owned()]
        );
    }
}
