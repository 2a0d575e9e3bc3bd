//! A config section as one value, and the one list of them.
//!
//! A section is a table of the file (`[dataplane]`, `[[route]]`). Its `Section` value says
//! what the reference documents of it (`doc`: name, keys, meaning) and how `sluice ctl save`
//! writes it back from the running dataplane (`save`). `SECTIONS` lists every section once,
//! in the file's order; `reference.rs` (docs/config.md), `emit.rs` and `control/save.rs`
//! iterate it, so a new section is its keys' file, its `Section` value and one line here.
//!
//! A section's value lives with its subsystem when it has a folder (`acl/section.rs`,
//! `l2/section.rs`, `lcp/section.rs`, `router/section.rs`, `handoff/section.rs`,
//! `dataplane/section.rs`), else beside its keys in `config/`. The sections the CLI cannot
//! change are `AsStarted`: saved as the start-up file had them.

use super::emit::Entry;
use super::reference::SectionDoc;
use crate::control::save::State;

/// One table of the config file.
pub trait Section: Sync {
    /// Its name, keys and meaning, as docs/config.md gives them.
    fn doc(&self) -> &'static SectionDoc;

    /// Its entries as the running dataplane holds them now (`sluice ctl save`); none
    /// leaves the section out of the file.
    fn save(&self, st: &State) -> Result<Vec<Entry>, String>;

    /// Whether the CLI can change it (`ctl apply` refuses a file that changes one that
    /// cannot).
    fn live(&self) -> bool {
        true
    }
}

/// A section the CLI cannot change: saved as the start-up file had it (left out when it had
/// none).
pub struct AsStarted(pub &'static SectionDoc);

impl Section for AsStarted {
    fn doc(&self) -> &'static SectionDoc {
        self.0
    }

    fn save(&self, st: &State) -> Result<Vec<Entry>, String> {
        Ok(st.as_started(self.0))
    }

    fn live(&self) -> bool {
        false
    }
}

/// A section the CLI can change: saved by `save` from the running dataplane.
pub struct Saved(
    pub &'static SectionDoc,
    pub fn(&State) -> Result<Vec<Entry>, String>,
);

impl Section for Saved {
    fn doc(&self) -> &'static SectionDoc {
        self.0
    }

    fn save(&self, st: &State) -> Result<Vec<Entry>, String> {
        (self.1)(st)
    }
}

/// Every section, in the order of `ConfigKeys`, docs/config.md and a saved file.
pub static SECTIONS: &[&dyn Section] = &[
    &AsStarted(&super::dataplane::SECTION),
    &AsStarted(&crate::control::access::SECTION),
    &AsStarted(&super::metrics::SECTION),
    &AsStarted(&super::watchdog::SECTION),
    &AsStarted(&super::neighbors::SECTION),
    &super::interface::INTERFACE,
    &super::subif::SUBINTERFACE,
    &crate::l2::section::XCONNECT,
    &crate::dataplane::section::RX_PLACEMENT,
    &crate::handoff::section::HANDOFF,
    &crate::l2::section::BRIDGE_DOMAIN,
    &crate::l2::section::L2FIB,
    &crate::l2::section::BVI,
    &crate::router::section::IP_TABLE,
    &crate::router::section::ROUTE,
    &AsStarted(&super::route::FIB),
    &crate::acl::section::ACL,
    &crate::acl::section::ACL_INPUT,
    &crate::acl::section::ACL_OUTPUT,
    &AsStarted(&super::acl::SESSIONS),
    &crate::lcp::section::LCP,
    &AsStarted(&super::punt::SECTION),
    &crate::nat44::section::NAT44,
    &crate::nat44::section::NAT44_INTERFACE,
    &crate::nat44::section::NAT44_STATIC,
    &AsStarted(&crate::drivers::dpdk::config::SECTION),
];
