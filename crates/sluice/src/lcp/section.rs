//! [[lcp]] (keys and checks in `config/lcp.rs`), written back from the running taps by
//! `sluice ctl save`.

use crate::config::emit::Entry;
use crate::config::section::Saved;
use crate::control::save::State;

/// [[lcp]].
pub static LCP: Saved = Saved(&crate::lcp::config::pair::SECTION, lcps);

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

/// The start step of lcp: the tap thread, and a tap for each of the config's [[lcp]] pairs
/// (with its interface's addresses, and the interface then punting to it).
pub fn start(
    cfg: &crate::config::Config,
    parts: super::LcpParts,
    router: std::sync::Arc<std::sync::Mutex<crate::router::Router>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<super::Lcp, String> {
    let interfaces = parts.interfaces.clone();
    let lcp = super::Lcp::start(parts, router.clone(), stop)?;
    for pair in &cfg.lcps {
        let Some(itf) = interfaces.iter().find(|i| i.name == pair.interface) else {
            continue;
        };
        let mut r = router.lock().unwrap();
        let addresses = r.address_list(itf.index);
        let refused = lcp
            .create(itf, &pair.host_if, pair.netns.as_deref(), &addresses)
            .map_err(|e| format!("[[lcp]] {}: {e}", pair.interface))?;
        for r in refused {
            eprintln!(
                "sluice: [[lcp]] {}: Linux refused address {r}",
                pair.host_if
            );
        }
        r.set_host(itf.index, true)?;
        r.commit();
    }
    Ok(lcp)
}
