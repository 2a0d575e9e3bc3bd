//! An [[lcp]]: a Linux tap that mirrors a sluice interface (`src/lcp/`).

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use toml::Spanned;

/// [[lcp]] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "lcp",
    array: true,
    file: "lcp/config/pair.rs",
    doc: "A Linux tap that mirrors an interface (VPP's linux-cp pair): same MAC and MTU, the \
          interface's addresses, link state both ways. Packets for the router's addresses \
          that sluice does not answer itself go up to the tap (rate-limited), Linux hears a \
          copy of ARP and neighbour discovery, and what Linux sends on the tap leaves \
          through the interface.",
    accepted: crate::config::reference::serde_fields::<LcpKeys>,
    aliases: &[],
    keys: &[
        Key::required(
            "interface",
            "string",
            "an interface or sub-interface (its tap is untagged: the sub-interface's tags are \
             taken off on the way up and put on on the way down); paired at most once",
            "\"e0\"",
        ),
        Key::required(
            "host-if",
            "string",
            "the tap's name in Linux (at most 15 characters); made when the daemon starts, gone \
             when it stops",
            "\"tap-e0\"",
        ),
        Key {
            name: "netns",
            ty: "string",
            default: "the daemon's namespace",
            doc: "a namespace of `ip netns` (a file in /run/netns) to make the tap in",
            example: "\"dut\"",
        },
    ],
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LcpKeys {
    interface: Spanned<String>,
    #[serde(rename = "host-if")]
    host_if: Spanned<String>,
    #[serde(default)]
    netns: Option<Spanned<String>>,
}

/// A checked [[lcp]].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LcpConfig {
    pub interface: String,
    pub host_if: String,
    pub netns: Option<String>,
}

/// A Linux interface name: 1 to 15 bytes, no '/', whitespace or NUL.
pub fn check_host_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 15 {
        return Err(format!(
            "'{name}' is not a Linux interface name (1 to 15 characters)"
        ));
    }
    if name == "."
        || name == ".."
        || name.contains(['/', ':', '\0'])
        || name.contains(char::is_whitespace)
    {
        return Err(format!(
            "'{name}' is not a Linux interface name (no '/', ':' or spaces)"
        ));
    }
    Ok(())
}

/// A namespace name of `ip netns`: a plain file name.
pub fn check_netns_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return Err(format!("'{name}' is not a network namespace name"));
    }
    Ok(())
}

/// Each pair names an interface or sub-interface, once, and a tap name used once.
pub(crate) fn check(
    keys: Vec<LcpKeys>,
    names: &[&str],
    c: &Checker<'_>,
) -> Result<Vec<LcpConfig>, ConfigError> {
    let mut out: Vec<LcpConfig> = Vec::new();
    for k in keys {
        c.known_interface(&k.interface, "interface", names)?;
        let name = k.interface.get_ref();
        if out.iter().any(|p| &p.interface == name) {
            return Err(c.err(
                k.interface.span(),
                "interface",
                format!("interface '{name}' has two lcp pairs"),
            ));
        }
        let host = k.host_if.get_ref();
        check_host_name(host).map_err(|e| c.err(k.host_if.span(), "host-if", e))?;
        if out.iter().any(|p| &p.host_if == host) {
            return Err(c.err(
                k.host_if.span(),
                "host-if",
                format!("tap '{host}' is named twice"),
            ));
        }
        let netns = match k.netns {
            Some(n) => {
                check_netns_name(n.get_ref()).map_err(|e| c.err(n.span(), "netns", e))?;
                Some(n.into_inner())
            }
            None => None,
        };
        out.push(LcpConfig {
            interface: name.clone(),
            host_if: host.clone(),
            netns,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::GOOD;

    #[test]
    fn a_pair_is_read() {
        let src = format!("{GOOD}[[lcp]]\ninterface = \"p0\"\nhost-if = \"tap-p0\"\n");
        let c = crate::config::Config::parse(&src, "t.toml").unwrap();
        assert_eq!(c.lcps[0].host_if, "tap-p0");
        assert_eq!(c.lcps[0].netns, None);
    }

    error_tests! {
        lcp_of_an_unknown_interface: format!("{GOOD}[[lcp]]\ninterface = \"p9\"\nhost-if = \"t\"\n")
            => "t.toml:19: key 'interface': no interface named 'p9' (defined: p0, p1)";
        lcp_twice: format!("{GOOD}[[lcp]]\ninterface = \"p0\"\nhost-if = \"t\"\n[[lcp]]\ninterface = \"p0\"\nhost-if = \"u\"\n")
            => "t.toml:22: key 'interface': interface 'p0' has two lcp pairs";
        lcp_long_name: format!("{GOOD}[[lcp]]\ninterface = \"p0\"\nhost-if = \"a-very-long-tap-name\"\n")
            => "t.toml:20: key 'host-if': 'a-very-long-tap-name' is not a Linux interface name (1 to 15 characters)";
        lcp_same_tap: format!("{GOOD}[[lcp]]\ninterface = \"p0\"\nhost-if = \"t\"\n[[lcp]]\ninterface = \"p1\"\nhost-if = \"t\"\n")
            => "t.toml:23: key 'host-if': tap 't' is named twice";
        lcp_bad_netns: format!("{GOOD}[[lcp]]\ninterface = \"p0\"\nhost-if = \"t\"\nnetns = \"../x\"\n")
            => "t.toml:21: key 'netns': '../x' is not a network namespace name";
    }
}
