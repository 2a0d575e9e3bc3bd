//! [[rx-placement]] (keys and checks in `config/placement.rs`), written back from the
//! running placement by `sluice ctl save`.

use crate::config::emit::Entry;
use crate::config::section::Saved;
use crate::control::save::{uint, State};

/// [[rx-placement]].
pub static RX_PLACEMENT: Saved =
    Saved(&crate::dataplane::config::placement::SECTION, rx_placements);

/// [[rx-placement]]: the queues not on the worker they start on by default (queue mod
/// workers).
fn rx_placements(st: &State) -> Result<Vec<Entry>, String> {
    let workers = st.c.dp.workers.len().max(1);
    let mut homes = st.c.dp.rx_placement.homes();
    homes.sort_by_key(|h| (h.interface_index, h.queue));
    Ok(homes
        .iter()
        .filter(|h| h.worker != h.queue % workers)
        .map(|h| {
            let mut e = Entry::default();
            e.set("interface", h.interface.as_str())
                .set("queue", uint(h.queue))
                .set("worker", uint(h.worker));
            e
        })
        .collect())
}
