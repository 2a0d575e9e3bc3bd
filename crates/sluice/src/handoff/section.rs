//! [[handoff]] (keys and checks in `config/handoff.rs`), written back from the running
//! spreads by `sluice ctl save`.

use crate::config::emit::Entry;
use crate::config::section::Saved;
use crate::control::save::{uint, State};
use toml::Value;

/// [[handoff]].
pub static HANDOFF: Saved = Saved(&crate::handoff::config::SECTION, handoffs);

/// [[handoff]]: the interfaces whose packets are spread over workers.
fn handoffs(st: &State) -> Result<Vec<Entry>, String> {
    let spreads = st.c.dp.handoff.spreads();
    let mut out = Vec::new();
    for (i, spread) in spreads.iter().enumerate() {
        let Some(spread) = spread else { continue };
        let workers: Vec<Value> = spread.workers.iter().map(|&w| uint(w)).collect();
        let mut e = Entry::default();
        e.set("interface", st.name(i as u32)?)
            .set("workers", workers)
            .set("key", spread.key.name());
        out.push(e);
    }
    Ok(out)
}

/// The start step of handoff: the spreads of the config's [[handoff]]s over `workers`, for
/// the hardware `interfaces`.
pub fn start(
    cfg: &crate::config::Config,
    interfaces: &[std::sync::Arc<crate::interface::Interface>],
    workers: usize,
) -> Result<std::sync::Arc<super::Handoff>, String> {
    let handoff = std::sync::Arc::new(super::Handoff::new(workers, interfaces.len()));
    for h in &cfg.handoffs {
        let Some(i) = interfaces.iter().position(|i| i.name == h.interface) else {
            continue;
        };
        let spread = super::Spread::new(&h.workers, h.key, workers)
            .map_err(|e| format!("[[handoff]] {}: {e}", h.interface))?;
        handoff.set(i, Some(spread))?;
    }
    Ok(handoff)
}
