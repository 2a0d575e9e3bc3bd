//! [[subinterface]]: a VLAN sub-interface `PARENT.ID` of a hardware interface.
//!
//! ```toml
//! [[subinterface]]
//! parent = "d0"
//! id = 100
//! dot1q = 100             # one 802.1Q tag
//! exact-match = true      # only single-tagged frames (default: double-tagged ones too)
//! # outer-dot1ad = 10, inner-dot1q = 20   # QinQ (or outer-dot1q with inner-dot1q)
//! # default = true        # tagged frames no other sub-interface of d0 takes
//! # untagged = true       # untagged frames, when d0 has sub-interfaces
//! state = "up"
//! address = ["192.0.2.1/24"]   # an L3 sub-interface routes
//! ```
//! It is named `d0.100` wherever an interface is named ([[xconnect]], [[bridge-domain]]).

use crate::config::emit::Entry;
use crate::config::reference::{Key, SectionDoc};
use crate::config::section::Saved;
use crate::config::{Checker, ConfigError};
use crate::control::save::{int, state_word, State};
use crate::subif::TagMatch;
use serde::Deserialize;
use toml::Spanned;

/// [[subinterface]] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "subinterface",
    array: true,
    file: "interface/config/subif.rs",
    doc: "A VLAN sub-interface `PARENT.ID` of an [[interface]]; it is named so wherever an \
          interface is named. It matches one of: dot1q; outer-dot1q or outer-dot1ad with \
          inner-dot1q (QinQ); default; untagged. Its tags are popped on input and pushed on \
          output.",
    accepted: crate::config::reference::serde_fields::<SubIfKeys>,
    aliases: &[],
    keys: &[
        Key::required(
            "parent",
            "string",
            "the [[interface]] it belongs to",
            "\"d0\"",
        ),
        Key::required(
            "id",
            "integer",
            "the sub-interface number: the name is PARENT.ID",
            "100",
        ),
        Key {
            name: "dot1q",
            ty: "integer",
            default: "none",
            doc: "one 802.1Q tag with this VLAN id (1-4094)",
            example: "100",
        },
        Key {
            name: "outer-dot1q",
            ty: "integer",
            default: "none",
            doc: "QinQ with an 802.1Q outer tag (with inner-dot1q)",
            example: "10",
        },
        Key {
            name: "outer-dot1ad",
            ty: "integer",
            default: "none",
            doc: "QinQ with an 802.1ad outer tag (with inner-dot1q)",
            example: "10",
        },
        Key {
            name: "inner-dot1q",
            ty: "integer",
            default: "none",
            doc: "the inner VLAN id of a QinQ sub-interface",
            example: "20",
        },
        Key {
            name: "exact-match",
            ty: "boolean",
            default: "false",
            doc: "with dot1q: only frames with exactly that one tag (else double-tagged ones too)",
            example: "true",
        },
        Key {
            name: "default",
            ty: "boolean",
            default: "false",
            doc: "the tagged frames no other sub-interface of the parent takes",
            example: "false",
        },
        Key {
            name: "untagged",
            ty: "boolean",
            default: "false",
            doc: "the untagged frames, when the parent has sub-interfaces",
            example: "false",
        },
        Key {
            name: "state",
            ty: "string",
            default: "\"up\"",
            doc: "up | down",
            example: "\"up\"",
        },
        Key {
            name: "address",
            ty: "list of strings",
            default: "[] (none)",
            doc: "IPv4/IPv6 ADDRESS/LENGTH: an L3 sub-interface routes",
            example: "[\"192.0.2.1/24\"]",
        },
    ],
};

/// A checked [[subinterface]].
#[derive(Debug)]
pub struct SubIfConfig {
    pub parent: String,
    pub id: u32,
    pub tags: TagMatch,
    pub up: bool,
    pub address: Vec<Spanned<String>>,
}

impl SubIfConfig {
    pub fn name(&self) -> String {
        format!("{}.{}", self.parent, self.id)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct SubIfKeys {
    parent: Spanned<String>,
    id: Spanned<u32>,
    dot1q: Option<Spanned<u16>>,
    outer_dot1q: Option<Spanned<u16>>,
    outer_dot1ad: Option<Spanned<u16>>,
    inner_dot1q: Option<Spanned<u16>>,
    #[serde(default)]
    exact_match: bool,
    #[serde(default)]
    default: bool,
    #[serde(default)]
    untagged: bool,
    state: Option<Spanned<String>>,
    #[serde(default)]
    address: Vec<Spanned<String>>,
}

impl SubIfKeys {
    /// Check against the hardware interfaces (`parents`) and the sub-interfaces before it.
    pub(crate) fn check(
        self,
        parents: &[&str],
        before: &[SubIfConfig],
        c: &Checker<'_>,
    ) -> Result<SubIfConfig, ConfigError> {
        let parent = self.parent.get_ref().clone();
        if !parents.contains(&parent.as_str()) {
            return Err(c.err(
                self.parent.span(),
                "parent",
                format!(
                    "no interface named '{parent}' (defined: {})",
                    parents.join(", ")
                ),
            ));
        }
        let id = *self.id.get_ref();
        let vid = |v: &Spanned<u16>, key: &str| {
            let n = *v.get_ref();
            if (1..=4094).contains(&n) {
                Ok(n)
            } else {
                Err(c.err(v.span(), key, format!("{n} is not a VLAN id (1-4094)")))
            }
        };
        let tags = match (
            &self.dot1q,
            &self.outer_dot1q,
            &self.outer_dot1ad,
            &self.inner_dot1q,
            self.default,
            self.untagged,
        ) {
            (Some(d), None, None, None, false, false) => TagMatch::Dot1q {
                vid: vid(d, "dot1q")?,
                exact: self.exact_match,
            },
            (None, Some(o), None, Some(i), false, false) => TagMatch::Qinq {
                outer: vid(o, "outer-dot1q")?,
                inner: vid(i, "inner-dot1q")?,
                outer_ad: false,
            },
            (None, None, Some(o), Some(i), false, false) => TagMatch::Qinq {
                outer: vid(o, "outer-dot1ad")?,
                inner: vid(i, "inner-dot1q")?,
                outer_ad: true,
            },
            (None, None, None, None, true, false) => TagMatch::Default,
            (None, None, None, None, false, true) => TagMatch::Untagged,
            _ => {
                return Err(c.err(
                    self.id.span(),
                    "dot1q",
                    "a sub-interface takes one of: dot1q, outer-dot1q or outer-dot1ad with \
                     inner-dot1q, default, untagged"
                        .into(),
                ))
            }
        };
        let name = format!("{parent}.{id}");
        for b in before {
            if b.name() == name {
                return Err(c.err(self.id.span(), "id", format!("{name} is defined twice")));
            }
            let same = match (b.tags, tags) {
                (TagMatch::Dot1q { vid: x, .. }, TagMatch::Dot1q { vid: y, .. }) => x == y,
                (
                    TagMatch::Qinq {
                        outer: a, inner: i, ..
                    },
                    TagMatch::Qinq {
                        outer: o, inner: j, ..
                    },
                ) => (a, i) == (o, j),
                (x, y) => x == y,
            };
            if b.parent == parent && same {
                return Err(c.err(
                    self.id.span(),
                    "dot1q",
                    format!("{} already takes {tags} frames on {parent}", b.name()),
                ));
            }
        }
        let up = match &self.state {
            None => true,
            Some(s) => c.one_of(s, "state", &[("up", true), ("down", false)])?,
        };
        for a in &self.address {
            crate::router::parse_interface_address(a.get_ref())
                .map_err(|e| c.err(a.span(), "address", e))?;
        }
        Ok(SubIfConfig {
            parent,
            id,
            tags,
            up,
            address: self.address,
        })
    }
}

/// [[subinterface]] in the one list of sections (`section::SECTIONS`).
pub static SUBINTERFACE: Saved = Saved(&SECTION, subinterfaces);

/// [[subinterface]].
fn subinterfaces(st: &State) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for sub in st.soft_interfaces(false) {
        let parent = st.name(sub.parent)?;
        let name = &sub.interface.name;
        let id: u32 = name
            .strip_prefix(parent)
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| format!("sub-interface {name} is not named {parent}.ID"))?;
        let mut e = Entry::default();
        e.set("parent", parent).set("id", int(id));
        match sub.tags {
            TagMatch::Dot1q { vid, exact } => {
                e.set("dot1q", int(vid));
                if exact {
                    e.set("exact-match", true);
                }
            }
            TagMatch::Qinq {
                outer,
                inner,
                outer_ad,
            } => {
                let key = if outer_ad {
                    "outer-dot1ad"
                } else {
                    "outer-dot1q"
                };
                e.set(key, int(outer)).set("inner-dot1q", int(inner));
            }
            TagMatch::Default => {
                e.set("default", true);
            }
            TagMatch::Untagged => {
                e.set("untagged", true);
            }
        }
        e.set("state", state_word(sub.interface.is_up()));
        st.set_addresses(&mut e, sub.interface.index);
        out.push(e);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::Config;
    use crate::subif::TagMatch;

    const ONE: &str = "[[interface]]\nname = \"d0\"\ndriver = \"pcap\"\ntx-file = \"o.pcap\"\n";

    #[test]
    fn sub_interfaces_parse_and_name_themselves() {
        let src = format!(
            "{ONE}[[subinterface]]\nparent = \"d0\"\nid = 100\ndot1q = 100\nexact-match = true\n\
             [[subinterface]]\nparent = \"d0\"\nid = 7\nouter-dot1ad = 7\ninner-dot1q = 8\n\
             [[xconnect]]\nrx = \"d0.100\"\ntx = \"d0.7\"\n"
        );
        let c = Config::parse(&src, "t.toml").unwrap();
        assert_eq!(c.subinterfaces[0].name(), "d0.100");
        assert_eq!(
            c.subinterfaces[1].tags,
            TagMatch::Qinq {
                outer: 7,
                inner: 8,
                outer_ad: true
            }
        );
    }

    error_tests! {
        unknown_parent: format!("{ONE}[[subinterface]]\nparent = \"d9\"\nid = 1\ndot1q = 1\n")
            => "t.toml:6: key 'parent': no interface named 'd9' (defined: d0)";
        no_tags: format!("{ONE}[[subinterface]]\nparent = \"d0\"\nid = 1\n")
            => "t.toml:7: key 'dot1q': a sub-interface takes one of: dot1q, outer-dot1q or outer-dot1ad with inner-dot1q, default, untagged";
        bad_vid: format!("{ONE}[[subinterface]]\nparent = \"d0\"\nid = 1\ndot1q = 4095\n")
            => "t.toml:8: key 'dot1q': 4095 is not a VLAN id (1-4094)";
        same_tags: format!("{ONE}[[subinterface]]\nparent = \"d0\"\nid = 1\ndot1q = 5\n[[subinterface]]\nparent = \"d0\"\nid = 2\ndot1q = 5\n")
            => "t.toml:11: key 'dot1q': d0.1 already takes dot1q 5 frames on d0";
    }
}
