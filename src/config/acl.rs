//! `[[acl]]` (a named rule list) and `[[acl-input]]` (a list checking what an interface
//! receives, before routing):
//!
//! ```toml
//! [[acl]]
//! name = "edge"
//! rules = ["deny src 198.18.0.7/32", "permit proto tcp dport 22", "deny proto tcp", "permit"]
//!
//! [[acl-input]]
//! interface = "e0"
//! acl = "edge"
//! ```
//!
//! A packet no rule matches is denied, as in VPP's ACL plugin (end a list with `permit` to
//! pass the rest). Each rule is checked by `Rule::parse`, errors on its line.

use super::{Checker, ConfigError};
use crate::acl::Rule;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AclKeys {
    name: Spanned<String>,
    rules: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AclInputKeys {
    interface: Spanned<String>,
    acl: Spanned<String>,
}

/// A named rule list.
#[derive(Debug, Clone)]
pub struct AclConfig {
    pub name: String,
    pub rules: Vec<Rule>,
    /// Each rule as written.
    pub texts: Vec<String>,
}

/// An interface's input list, by names.
#[derive(Debug, Clone)]
pub struct AclInput {
    pub interface: String,
    pub acl: String,
}

pub(super) fn check_acls(
    keys: Vec<AclKeys>,
    c: &Checker<'_>,
) -> Result<Vec<AclConfig>, ConfigError> {
    let mut out: Vec<AclConfig> = Vec::new();
    for a in keys {
        let name = a.name.get_ref();
        if name.is_empty() {
            return Err(c.err(a.name.span(), "name", "an ACL needs a name".into()));
        }
        crate::acl::control::check_name(name).map_err(|e| c.err(a.name.span(), "name", e))?;
        if out.iter().any(|x| &x.name == name) {
            return Err(c.err(
                a.name.span(),
                "name",
                format!("ACL '{name}' is defined twice"),
            ));
        }
        let rules = a
            .rules
            .iter()
            .map(|r| Rule::parse(r.get_ref()).map_err(|e| c.err(r.span(), "rules", e)))
            .collect::<Result<Vec<Rule>, ConfigError>>()?;
        out.push(AclConfig {
            name: name.clone(),
            rules,
            texts: a
                .rules
                .iter()
                .map(|r| r.get_ref().trim().to_string())
                .collect(),
        });
    }
    Ok(out)
}

pub(super) fn check_inputs(
    keys: Vec<AclInputKeys>,
    acls: &[AclConfig],
    interfaces: &[&str],
    c: &Checker<'_>,
) -> Result<Vec<AclInput>, ConfigError> {
    let mut out: Vec<AclInput> = Vec::new();
    for k in keys {
        let (iface, acl) = (k.interface.get_ref(), k.acl.get_ref());
        if !interfaces.contains(&iface.as_str()) {
            return Err(c.err(
                k.interface.span(),
                "interface",
                format!(
                    "no interface named '{iface}' (defined: {})",
                    interfaces.join(", ")
                ),
            ));
        }
        if !acls.iter().any(|a| &a.name == acl) {
            let names: Vec<&str> = acls.iter().map(|a| a.name.as_str()).collect();
            return Err(c.err(
                k.acl.span(),
                "acl",
                format!("no ACL named '{acl}' (defined: {})", names.join(", ")),
            ));
        }
        if out.iter().any(|x| &x.interface == iface) {
            return Err(c.err(
                k.interface.span(),
                "interface",
                format!("interface '{iface}' has an input ACL already"),
            ));
        }
        out.push(AclInput {
            interface: iface.clone(),
            acl: acl.clone(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::GOOD;

    const ACL: &str = "[[acl]]\nname = \"edge\"\nrules = [\"deny proto icmp\", \"permit\"]\n";

    #[test]
    fn acl_config_is_read() {
        let text = format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n");
        let c = crate::config::Config::parse(&text, "t.toml").unwrap();
        assert_eq!(c.acls.len(), 1);
        assert_eq!(c.acls[0].rules.len(), 2);
        assert_eq!(c.acl_inputs[0].interface, "p0");
    }

    error_tests! {
        acl_bad_rule: format!("{GOOD}[[acl]]\nname = \"a\"\nrules = [\"permit\", \"allow all\"]\n")
            => "t.toml:20: key 'rules': 'allow' is no action (want permit, deny or permit+reflect)";
        acl_twice: format!("{GOOD}{ACL}{ACL}")
            => "t.toml:22: key 'name': ACL 'edge' is defined twice";
        acl_input_unknown_interface: format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p9\"\nacl = \"edge\"\n")
            => "t.toml:22: key 'interface': no interface named 'p9' (defined: p0, p1)";
        acl_input_unknown_acl: format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p0\"\nacl = \"core\"\n")
            => "t.toml:23: key 'acl': no ACL named 'core' (defined: edge)";
        acl_input_twice: format!("{GOOD}{ACL}[[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n[[acl-input]]\ninterface = \"p0\"\nacl = \"edge\"\n")
            => "t.toml:25: key 'interface': interface 'p0' has an input ACL already";
    }
}
