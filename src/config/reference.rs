//! The configuration reference, `docs/config.md`, made from the config types themselves.
//!
//! Each section's file declares a `Section` beside its serde `*Keys` struct: the section's
//! meaning and, per key, its type, default, meaning and an example value. `SECTIONS` gathers
//! them in file order and `markdown` writes the reference (`sluice run
//! --print-config-reference`). The tests below keep the two from drifting apart: the keys a
//! section documents are exactly the field names serde accepts for it (read from the derive's
//! own field list by a recording `Deserializer`), the section names are exactly the top-level
//! keys, and a file that sets every documented key to its example value is accepted.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::fmt;

/// One key of a section.
pub struct Key {
    pub name: &'static str,
    /// The TOML type, as a reader would say it: `integer`, `string`, `list of strings`.
    pub ty: &'static str,
    /// What applies when the key is left out (`required` when it must be given).
    pub default: &'static str,
    pub doc: &'static str,
    /// A TOML value for the key, shown in the reference and parsed by the tests.
    pub example: &'static str,
}

/// One table of the file: `[name]`, or `[[name]]` when `array` (it may appear many times).
pub struct Section {
    pub name: &'static str,
    pub array: bool,
    /// Where it is defined and checked, under `src/config/`.
    pub file: &'static str,
    pub doc: &'static str,
    pub keys: &'static [Key],
    /// Other spellings serde takes for a key: (alias, key).
    pub aliases: &'static [(&'static str, &'static str)],
    /// The field names serde accepts for the section: `serde_fields::<ItsKeys>`.
    pub accepted: fn() -> &'static [&'static str],
}

/// Every section in the order of `ConfigKeys`.
pub fn sections() -> [&'static Section; 22] {
    [
        &super::dataplane::SECTION,
        &super::CONTROL,
        &super::metrics::SECTION,
        &super::watchdog::SECTION,
        &super::neighbors::SECTION,
        &super::interface::SECTION,
        &super::subif::SECTION,
        &super::xconnect::SECTION,
        &super::placement::SECTION,
        &super::handoff::SECTION,
        &super::bridge::BRIDGE_DOMAIN,
        &super::bridge::L2FIB,
        &super::bridge::BVI,
        &super::table::SECTION,
        &super::route::ROUTE,
        &super::route::FIB,
        &super::acl::ACL,
        &super::acl::ACL_INPUT,
        &super::acl::ACL_OUTPUT,
        &super::acl::SESSIONS,
        &super::lcp::SECTION,
        &super::punt::SECTION,
    ]
}

/// The field names that `T`'s derived `Deserialize` passes to `deserialize_struct`: with
/// `rename_all` and `rename` applied, so exactly the keys a file may use. Empty for a type
/// that is not a struct.
pub fn serde_fields<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    match T::deserialize(Recorder) {
        Err(Recorded(Some(fields))) => fields,
        _ => &[],
    }
}

/// A `Deserializer` that deserializes nothing: it records the field list a struct asks for
/// and stops with it as its "error".
struct Recorder;

#[derive(Debug)]
struct Recorded(Option<&'static [&'static str]>);

impl fmt::Display for Recorded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field names recorded")
    }
}

impl std::error::Error for Recorded {}

impl de::Error for Recorded {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Recorded(None)
    }
}

impl<'de> Deserializer<'de> for Recorder {
    type Error = Recorded;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Recorded> {
        Err(Recorded(None))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Recorded> {
        Err(Recorded(Some(fields)))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

impl Section {
    /// The section's header line as the file writes it.
    pub fn header(&self) -> String {
        if self.array {
            format!("[[{}]]", self.name)
        } else {
            format!("[{}]", self.name)
        }
    }

    /// The header and every key set to its example value.
    pub fn example(&self) -> String {
        let mut s = self.header() + "\n";
        for k in self.keys {
            s.push_str(&format!("{} = {}\n", k.name, k.example));
        }
        s
    }
}

/// A table cell: pipes escaped, so that grammar like `up|down` stays in its column.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The reference, `docs/config.md`.
pub fn markdown() -> String {
    let mut s = String::from(
        "# sluice run: the configuration reference\n\n\
         <!-- Generated by `sluice run --print-config-reference > docs/config.md` from the\n\
         config types in src/config/ (each section declares its keys beside its serde struct).\n\
         Do not edit: tests/docs_reference.rs fails when this file differs from what the binary\n\
         prints. -->\n\n\
         `sluice run -c FILE.toml` reads one TOML file; `sluice run -c FILE.toml --check` checks \
         it and exits. Keys are written in kebab-case. A key the section does not know, a value \
         of the wrong type or one out of range is an error that names the file, the line and \
         the key, and the daemon does not start. `examples/` holds complete files \
         (`xconnect.toml`, `router.toml`, `bridge.toml`, `memif.toml`, `pcap.toml`, \
         `xconnect-af-xdp.toml`).\n\nSections:",
    );
    for (i, sec) in sections().iter().enumerate() {
        let sep = if i == 0 { " " } else { ", " };
        s.push_str(&format!("{sep}`{}`", sec.header()));
    }
    s.push_str(".\n");
    for sec in sections() {
        s.push_str(&format!("\n## `{}`\n\n{}", sec.header(), sec.doc));
        if sec.array {
            s.push_str(" It may appear any number of times.");
        }
        for (alias, key) in sec.aliases {
            s.push_str(&format!(" `{key}` may also be written `{alias}`."));
        }
        s.push_str(&format!(" Checked in `src/config/{}`.\n\n", sec.file));
        s.push_str("| key | type | default | meaning |\n|---|---|---|---|\n");
        for k in sec.keys {
            s.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                k.name,
                cell(k.ty),
                cell(k.default),
                cell(k.doc)
            ));
        }
        s.push_str(&format!(
            "\nEvery key set (the values are examples):\n\n```toml\n{}```\n",
            sec.example()
        ));
    }
    s.push_str(SAVING);
    s
}

/// The last part of the reference: what `sluice ctl save` writes (src/control/save.rs).
const SAVING: &str = "\n## Saving the running configuration\n\n\
`sluice ctl save FILE` has the daemon write its running configuration as such a file, and \
`sluice ctl save` prints it. FILE is an absolute path (the daemon writes it, in its own \
working directory and mount namespace); the text goes to a temporary file in the same \
directory, mode 0600, which is then renamed over FILE, so FILE is replaced whole or not at \
all. The file starts with comments that give the sluice version and the time (UTC), and has \
the sections in the order above.\n\n\
What the CLI changes is written as it is now: each interface's `state` and `address`, the \
sub-interfaces and BVIs (a BVI with its MAC), cross-connects, `[[rx-placement]]` (the queues \
not on their default worker), `[[handoff]]`, bridge domains with their members, settings, \
ARP entries and static MACs, `[[ip-table]]`, the static routes of `[[route]]` and of `ip route \
add` with their next hops as resolved (interface and address), ACLs and the interfaces they \
check. What the CLI cannot change is written as the start-up file had it: `[dataplane]`, \
`[control]`, `[metrics]`, `[fib]`, `[sessions]`, `[punt]`, and each interface's driver keys and `mtu`. \
The routes of `[fib] route-file` are not written out: the key stays and the file is read \
again at start, after the `[[route]]`s (so a route the CLI put over one of the file's \
prefixes wins again, and one of the file's routes deleted by the CLI comes back).\n\n\
Static neighbours (`set ip neighbor`) have no section: they are listed at the end of the \
file as comments, with the commands that enter them again. State a file cannot say is an \
error and nothing is written: an interface routing IPv4 and IPv6 in different tables, a BVI \
in no bridge domain, a route whose next hops are in different tables, or on different \
interfaces that their addresses do not find, or that mixes next hops with a drop. The text is \
checked as `sluice run --check` would before it is written.\n";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigKeys;

    #[test]
    fn sections_are_the_files_top_level_keys() {
        let names: Vec<&str> = sections().iter().map(|s| s.name).collect();
        assert_eq!(names, serde_fields::<ConfigKeys>());
    }

    #[test]
    fn each_section_documents_exactly_the_keys_serde_accepts() {
        for sec in sections() {
            let mut documented: Vec<&str> = sec.keys.iter().map(|k| k.name).collect();
            for (alias, key) in sec.aliases {
                assert!(documented.contains(key), "{alias} names no key: {key}");
                documented.push(alias);
            }
            let accepted = (sec.accepted)();
            assert!(!accepted.is_empty(), "{}: no fields recorded", sec.name);
            let mut a = accepted.to_vec();
            let mut d = documented;
            a.sort_unstable();
            d.sort_unstable();
            assert_eq!(d, a, "[{}] documented keys vs serde's", sec.name);
            for k in sec.keys {
                assert!(!k.doc.is_empty() && !k.ty.is_empty() && !k.default.is_empty());
            }
        }
    }

    #[test]
    fn every_documented_key_is_accepted_with_its_example() {
        let all: String = sections().iter().map(|s| s.example() + "\n").collect();
        if let Err(e) = toml::from_str::<ConfigKeys>(&all) {
            panic!("{e}\n{all}");
        }
        // Each section alone too, so that a failure names its section.
        for sec in sections() {
            let one = sec.example();
            assert!(toml::from_str::<ConfigKeys>(&one).is_ok(), "{one}");
        }
    }

    #[test]
    fn the_recorder_sees_a_misspelt_key() {
        // What the test above relies on: a key serde does not know is refused.
        assert!(toml::from_str::<ConfigKeys>("[dataplane]\nwrokers = 1\n").is_err());
        assert!(serde_fields::<u32>().is_empty());
        assert!(serde_fields::<crate::config::Control>() == ["socket"]);
    }

    /// The documented default of `section`'s `key`.
    fn default_of(section: &str, key: &str) -> &'static str {
        let sec = sections().into_iter().find(|s| s.name == section).unwrap();
        sec.keys.iter().find(|k| k.name == key).unwrap().default
    }

    #[test]
    fn documented_defaults_are_what_a_file_without_the_key_gets() {
        let c = crate::config::Config::parse(
            "[[bridge-domain]]\nid = 1\n[[interface]]\nname = \"m\"\ndriver = \"memif\"\n\
             socket = \"s\"\n[[interface]]\nname = \"x\"\ndriver = \"af_xdp\"\n\
             [[interface]]\nname = \"p\"\ndriver = \"af_packet\"\n",
            "t.toml",
        )
        .unwrap();
        let d = &c.dataplane;
        let t = &c.sessions.timeouts;
        let bd = &c.bridge_domains[0].settings;
        let quoted = |s: &str| format!("\"{s}\"");
        let cases: Vec<(&str, &str, String)> = vec![
            ("dataplane", "workers", d.workers.to_string()),
            ("dataplane", "buffers", d.buffers.to_string()),
            ("dataplane", "min-frame", d.min_frame.to_string()),
            ("dataplane", "worker-nice", d.worker_nice.to_string()),
            (
                "dataplane",
                "hugepages",
                quoted(&format!("{:?}", d.hugepages).to_lowercase()),
            ),
            (
                "control",
                "socket",
                quoted(&c.control.socket.display().to_string()),
            ),
            ("sessions", "per-worker", c.sessions.per_worker.to_string()),
            ("sessions", "per-source", c.sessions.per_source.to_string()),
            ("sessions", "tcp-established", t.tcp_established.to_string()),
            ("sessions", "tcp-transient", t.tcp_transient.to_string()),
            ("sessions", "udp", t.udp.to_string()),
            ("sessions", "icmp", t.icmp.to_string()),
            ("sessions", "other", t.other.to_string()),
            ("bridge-domain", "learn", bd.learn.to_string()),
            ("bridge-domain", "flood", bd.flood.to_string()),
            ("bridge-domain", "uu-flood", bd.uu_flood.to_string()),
            ("bridge-domain", "arp-term", bd.arp_term.to_string()),
            ("bridge-domain", "mac-limit", bd.mac_limit.to_string()),
        ];
        for (section, key, parsed) in cases {
            assert_eq!(default_of(section, key), parsed, "[{section}] {key}");
        }
        let age_min = (bd.mac_age_s / 60).to_string();
        assert!(default_of("bridge-domain", "mac-age").starts_with(&age_min));
        let rings: Vec<u32> = c
            .interfaces
            .iter()
            .map(|i| match &i.driver {
                crate::config::Driver::Memif(m) => m.ring_size,
                crate::config::Driver::AfXdp(x) => x.ring_size,
                crate::config::Driver::AfPacket(p) => p.ring_size,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            default_of("interface", "ring-size"),
            format!(
                "{} (af_packet), {} (af_xdp), {} (memif)",
                rings[2], rings[1], rings[0]
            )
        );
    }

    #[test]
    fn markdown_has_every_section_and_key() {
        let m = markdown();
        for sec in sections() {
            assert!(
                m.contains(&format!("\n## `{}`\n", sec.header())),
                "{}",
                sec.name
            );
            for k in sec.keys {
                assert!(m.contains(&format!("| `{}` |", k.name)), "{}", k.name);
            }
        }
        assert!(m.contains("| `hugepages` | string | \"auto\" | "), "{m}");
    }
}
