//! [[lcp]] (keys and checks in `config/lcp.rs`), written back from the running taps by
//! `sluice ctl save`.

use crate::config::emit::Entry;
use crate::config::reference::SectionDoc;
use crate::config::section::Section;
use crate::control::save::State;

/// [[lcp]].
pub struct LcpSection;

impl Section for LcpSection {
    fn doc(&self) -> &'static SectionDoc {
        &crate::config::lcp::SECTION
    }

    fn save(&self, st: &State) -> Result<Vec<Entry>, String> {
        lcps(st)
    }
}

/// [[lcp]]: the interfaces' taps, as they are now.
fn lcps(st: &State) -> Result<Vec<Entry>, String> {
    let pairs = st.c.dp.lcp.as_ref().map(|l| l.view()).unwrap_or_default();
    Ok(pairs
        .iter()
        .map(|p| {
            let mut e = Entry::default();
            e.set("interface", p.interface.as_str())
                .set("host-if", p.host_if.as_str());
            if let Some(ns) = &p.netns {
                e.set("netns", ns.as_str());
            }
            e
        })
        .collect())
}
