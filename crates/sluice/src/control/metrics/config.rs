//! `[metrics]`: the Prometheus endpoint (`src/control/metrics/`). Off unless `listen` is
//! given; a non-loopback address also needs `allow-remote = true`, so that a config never
//! serves the counters beyond the machine by accident.
//!
//! ```toml
//! [metrics]
//! listen = "127.0.0.1:9482"   # GET /metrics over HTTP/1.1
//! ```

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use std::net::SocketAddr;
use toml::Spanned;

/// [metrics] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "metrics",
    array: false,
    file: "control/metrics/config.rs",
    doc: "The Prometheus endpoint: `GET /metrics` over HTTP/1.1 in the text exposition format \
          (interface counters, node statistics, error counters, the buffer pool; see \
          docs/metrics.md). Off unless `listen` is set. The endpoint has no authentication, so \
          an address other than a loopback one is refused unless `allow-remote = true`.",
    accepted: crate::config::reference::serde_fields::<MetricsKeys>,
    aliases: &[],
    keys: &[
        Key {
            name: "listen",
            ty: "string (address:port)",
            default: "none (no endpoint)",
            doc: "the TCP address and port to serve on: an IPv4 address or a bracketed IPv6 \
                  one, and a port from 1 to 65535; a loopback address (127.0.0.0/8, [::1]) \
                  unless `allow-remote` is set; 9482 is the port VPP's exporter uses",
            example: "\"127.0.0.1:9482\"",
        },
        Key {
            name: "allow-remote",
            ty: "boolean",
            default: "false",
            doc: "allow a `listen` address that is not a loopback one (including 0.0.0.0 and \
                  [::]): anyone who reaches it can read the counters",
            example: "false",
        },
    ],
};

/// The [metrics] section as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct MetricsKeys {
    listen: Option<Spanned<String>>,
    allow_remote: Option<Spanned<bool>>,
}

/// The checked [metrics] section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsConfig {
    /// Where to serve `GET /metrics`; `None`: no endpoint.
    pub listen: Option<SocketAddr>,
}

impl MetricsKeys {
    pub(crate) fn check(self, c: &Checker<'_>) -> Result<MetricsConfig, ConfigError> {
        let allow_remote = self.allow_remote.as_ref().is_some_and(|a| *a.get_ref());
        let Some(listen) = &self.listen else {
            return Ok(MetricsConfig::default());
        };
        let text = listen.get_ref();
        let addr: SocketAddr = text.parse().map_err(|_| {
            c.err(
                listen.span(),
                "listen",
                format!(
                    "'{text}' is not an address and port (e.g. \"127.0.0.1:9482\" or \
                     \"[::1]:9482\")"
                ),
            )
        })?;
        if addr.port() == 0 {
            return Err(c.err(
                listen.span(),
                "listen",
                format!("'{text}': the port must be from 1 to 65535"),
            ));
        }
        if !addr.ip().is_loopback() && !allow_remote {
            return Err(c.err(
                listen.span(),
                "listen",
                format!(
                    "'{text}' is not a loopback address; the endpoint has no authentication, \
                     so serving it beyond this machine needs allow-remote = true"
                ),
            ));
        }
        Ok(MetricsConfig { listen: Some(addr) })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::Config;

    fn listen(src: &str) -> Option<std::net::SocketAddr> {
        Config::parse(src, "t.toml").unwrap().metrics.listen
    }

    #[test]
    fn off_unless_listen_is_set() {
        assert_eq!(listen(""), None);
        assert_eq!(listen("[metrics]\n"), None);
        assert_eq!(listen("[metrics]\nallow-remote = true\n"), None);
    }

    #[test]
    fn loopback_addresses_are_taken() {
        let a = listen("[metrics]\nlisten = \"127.0.0.1:9482\"\n").unwrap();
        assert_eq!(a.to_string(), "127.0.0.1:9482");
        let a = listen("[metrics]\nlisten = \"[::1]:9100\"\n").unwrap();
        assert_eq!(a.to_string(), "[::1]:9100");
        let a = listen("[metrics]\nlisten = \"127.3.2.1:80\"\n").unwrap();
        assert_eq!(a.port(), 80);
    }

    #[test]
    fn other_addresses_need_allow_remote() {
        let a = listen("[metrics]\nlisten = \"0.0.0.0:9482\"\nallow-remote = true\n");
        assert_eq!(a.unwrap().to_string(), "0.0.0.0:9482");
        let a = listen("[metrics]\nallow-remote = true\nlisten = \"[2001:db8::1]:9482\"\n");
        assert_eq!(a.unwrap().port(), 9482);
    }

    /// The error for a `listen` address on line `line` that is not a loopback one.
    fn not_loopback(line: u32, addr: &str) -> String {
        format!(
            "t.toml:{line}: key 'listen': '{addr}' is not a loopback address; the endpoint has \
             no authentication, so serving it beyond this machine needs allow-remote = true"
        )
    }

    error_tests! {
        public_address_is_refused:
            "[metrics]\n\nlisten = \"192.0.2.1:9482\"\n" => not_loopback(3, "192.0.2.1:9482");
        unspecified_address_is_refused:
            "[metrics]\nlisten = \"0.0.0.0:9482\"\nallow-remote = false\n"
            => not_loopback(2, "0.0.0.0:9482");
        unspecified_ipv6_is_refused:
            "[metrics]\nlisten = \"[::]:9482\"\n" => not_loopback(2, "[::]:9482");
        host_name_is_not_an_address:
            "[dataplane]\nworkers = 1\n[metrics]\nlisten = \"localhost:9482\"\n"
            => "t.toml:4: key 'listen': 'localhost:9482' is not an address and port (e.g. \
                \"127.0.0.1:9482\" or \"[::1]:9482\")";
        missing_port:
            "[metrics]\nlisten = \"127.0.0.1\"\n"
            => "t.toml:2: key 'listen': '127.0.0.1' is not an address and port (e.g. \
                \"127.0.0.1:9482\" or \"[::1]:9482\")";
        port_zero:
            "[metrics]\nlisten = \"127.0.0.1:0\"\n"
            => "t.toml:2: key 'listen': '127.0.0.1:0': the port must be from 1 to 65535";
    }

    #[test]
    fn unknown_key_and_wrong_type_name_the_line() {
        let e = crate::config::parse_error("[metrics]\nlisten = \"127.0.0.1:1\"\nport = 9\n");
        assert!(e.starts_with("t.toml:3:") && e.contains("port"), "{e}");
        let e = crate::config::parse_error("[metrics]\nlisten = 9482\n");
        assert!(e.starts_with("t.toml:2:"), "{e}");
    }
}
