//! [[ip-table]]: routing tables (VRFs) and the interfaces that route in them.
//!
//! ```toml
//! [[ip-table]]
//! id = 10
//! interfaces = ["d0.100", "d1.100"]  # their IPv4 and IPv6 are looked up in table 10
//! ```
//!
//! Table 0 always exists and holds every interface no table names. A [[route]] with
//! `table = 10` goes into table 10; `next-hop-table = 0` finds its next hop among table 0's
//! connected networks (an inter-VRF route).

use crate::config::reference::{Key, SectionDoc};
use crate::config::{Checker, ConfigError};
use serde::Deserialize;
use toml::Spanned;

/// [[ip-table]] in the reference (`docs/config.md`).
pub(crate) const SECTION: SectionDoc = SectionDoc {
    name: "ip-table",
    array: true,
    file: "router/config/table.rs",
    doc: "A routing table (VRF) besides table 0, for both families (see docs/vrf.md). An \
          interface no table names routes in table 0.",
    accepted: crate::config::reference::serde_fields::<TableKeys>,
    aliases: &[],
    keys: &[
        Key::required("id", "integer", "the table's number, not 0, unique", "10"),
        Key {
            name: "interfaces",
            ty: "list of strings",
            default: "[] (none)",
            doc: "interfaces whose IPv4 and IPv6 route in this table (each in one table only)",
            example: "[\"d2\"]",
        },
    ],
};

/// A checked [[ip-table]].
#[derive(Debug, Clone)]
pub struct TableConfig {
    pub id: u32,
    pub interfaces: Vec<String>,
}

/// An [[ip-table]] as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TableKeys {
    id: Spanned<u32>,
    #[serde(default)]
    interfaces: Vec<Spanned<String>>,
}

/// Every table's id is unique and not 0, and every interface exists and is in one table.
pub(crate) fn check(
    keys: Vec<TableKeys>,
    names: &[&str],
    c: &Checker<'_>,
) -> Result<Vec<TableConfig>, ConfigError> {
    let mut tables: Vec<TableConfig> = Vec::new();
    for t in keys {
        let id = *t.id.get_ref();
        if id == 0 {
            return Err(c.err(
                t.id.span(),
                "id",
                "table 0 is the default table: it exists without an [[ip-table]], and holds \
                 every interface no table names"
                    .into(),
            ));
        }
        if tables.iter().any(|x| x.id == id) {
            return Err(c.err(t.id.span(), "id", format!("table {id} is defined twice")));
        }
        if tables.len() >= crate::router::tables::MAX_TABLES - 1 {
            return Err(c.err(
                t.id.span(),
                "id",
                format!("more than {} tables", crate::router::tables::MAX_TABLES - 1),
            ));
        }
        let mut interfaces = Vec::new();
        for i in &t.interfaces {
            let name = i.get_ref();
            if !names.contains(&name.as_str()) {
                return Err(c.err(
                    i.span(),
                    "interfaces",
                    format!("no interface named '{name}'"),
                ));
            }
            if let Some(other) = tables.iter().find(|x| x.interfaces.contains(name)) {
                return Err(c.err(
                    i.span(),
                    "interfaces",
                    format!("'{name}' is already in table {}", other.id),
                ));
            }
            if interfaces.contains(name) {
                return Err(c.err(i.span(), "interfaces", format!("'{name}' is listed twice")));
            }
            interfaces.push(name.clone());
        }
        tables.push(TableConfig { id, interfaces });
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use crate::config::error_tests;
    use crate::config::interface_with;

    fn table(lines: &str) -> String {
        format!(
            "{}[[ip-table]]\n{lines}",
            interface_with("pcap", "tx-file = \"o\"\n")
        )
    }

    error_tests! {
        table_zero: table("id = 0\n")
            => "t.toml:6: key 'id': table 0 is the default table: it exists without an [[ip-table]], and holds every interface no table names";
        table_twice: format!("{}[[ip-table]]\nid = 1\n", table("id = 1\n"))
            => "t.toml:8: key 'id': table 1 is defined twice";
        table_of_an_unknown_interface: table("id = 1\ninterfaces = [\"zz\"]\n")
            => "t.toml:7: key 'interfaces': no interface named 'zz'";
        interface_in_two_tables: format!("{}[[ip-table]]\nid = 2\ninterfaces = [\"a\"]\n", table("id = 1\ninterfaces = [\"a\"]\n"))
            => "t.toml:10: key 'interfaces': 'a' is already in table 1";
        table_id_not_a_number: table("id = \"red\"\n")
            => "t.toml:6: invalid type: string \"red\", expected u32";
    }

    #[test]
    fn tables_and_their_interfaces_are_read() {
        let c = crate::config::Config::parse(&table("id = 7\ninterfaces = [\"a\"]\n"), "t.toml")
            .unwrap();
        assert_eq!(c.tables.len(), 1);
        assert_eq!(
            (c.tables[0].id, &c.tables[0].interfaces[..]),
            (7, &["a".to_string()][..])
        );
    }
}
