//! Layer 2's config sections: [[xconnect]], [[bridge-domain]], [[l2fib]] and [[bvi]]
//! (keys and checks in `config/xconnect.rs` and `config/bridge.rs`), written back from the
//! running modes and bridge domains by `sluice ctl save`.

use crate::config::emit::Entry;
use crate::config::section::Saved;
use crate::control::save::{int, s, uint, State};
use crate::dataplane::BVI_DRIVER;
use crate::l2::bridge::DEFAULT_PORT_MAC_LIMIT;
use toml::Value;

/// [[xconnect]].
pub static XCONNECT: Saved = Saved(&crate::l2::config::xconnect::SECTION, xconnects);

/// [[bridge-domain]].
pub static BRIDGE_DOMAIN: Saved = Saved(&crate::l2::config::bridge::BRIDGE_DOMAIN, bridge_domains);

/// [[l2fib]].
pub static L2FIB: Saved = Saved(&crate::l2::config::bridge::L2FIB, static_macs);

/// [[bvi]].
pub static BVI: Saved = Saved(&crate::l2::config::bridge::BVI, bvis);

/// [[xconnect]]: every interface that sends what it receives out of another.
fn xconnects(st: &State) -> Result<Vec<Entry>, String> {
    let modes = st.c.dp.modes.load();
    let mut out = Vec::new();
    for (rx, tx) in modes.xconnect.iter().enumerate() {
        let Some(tx) = tx else { continue };
        let Ok(rx) = st.name(rx as u32) else { continue };
        let mut e = Entry::default();
        e.set("rx", rx).set("tx", st.name(*tx)?);
        out.push(e);
    }
    Ok(out)
}

fn lock_bridges<'a>(st: &State<'a>) -> std::sync::MutexGuard<'a, crate::l2::bridge::Bridges> {
    st.c.dp.bridges.lock().unwrap_or_else(|p| p.into_inner())
}

/// [[bridge-domain]]: settings, members (a BVI joins by [[bvi]]) and ARP entries.
fn bridge_domains(st: &State) -> Result<Vec<Entry>, String> {
    let b = lock_bridges(st);
    let mut out = Vec::new();
    for d in b.report(None)? {
        let bvi = b.bvi_of(d.id);
        let mut members = Vec::new();
        for p in &d.ports {
            if Some(p.interface) == bvi {
                continue;
            }
            let name = st.name(p.interface)?;
            let limit = (p.mac_limit != DEFAULT_PORT_MAC_LIMIT).then_some(p.mac_limit);
            members.push(if p.shg == 0 && limit.is_none() {
                s(name)
            } else {
                let mut t = toml::Table::new();
                t.insert("interface".into(), s(name));
                if p.shg != 0 {
                    t.insert("shg".into(), int(p.shg));
                }
                if let Some(l) = limit {
                    t.insert("mac-limit".into(), uint(l));
                }
                Value::Table(t)
            });
        }
        let set = d.settings;
        let mut e = Entry::default();
        e.set("id", int(d.id))
            .set("learn", set.learn)
            .set("flood", set.flood)
            .set("uu-flood", set.uu_flood)
            .set(
                "mac-age",
                if set.mac_age_s % 60 == 0 {
                    int(set.mac_age_s / 60)
                } else {
                    s(&format!("{}s", set.mac_age_s))
                },
            )
            .set("mac-limit", uint(set.mac_limit))
            .set("group-fwd-mask", int(set.group_fwd_mask))
            .set("members", members)
            .set("arp-term", set.arp_term);
        if !d.arp_entries.is_empty() {
            let entries: Vec<Value> = d
                .arp_entries
                .iter()
                .map(|(ip, mac)| {
                    let mut t = toml::Table::new();
                    t.insert("ip".into(), s(ip));
                    t.insert("mac".into(), s(mac));
                    Value::Table(t)
                })
                .collect();
            e.set("arp-entries", entries);
        }
        out.push(e);
    }
    Ok(out)
}

/// [[l2fib]]: the static MAC entries (not a BVI's own address, which [[bvi]] makes).
fn static_macs(st: &State) -> Result<Vec<Entry>, String> {
    let b = lock_bridges(st);
    let mut out = Vec::new();
    for m in b.entries(None)? {
        if !m.is_static || b.bvi_of(m.bd) == Some(m.interface) {
            continue;
        }
        let mut e = Entry::default();
        e.set("mac", m.mac.as_str())
            .set("bridge-domain", int(m.bd))
            .set("interface", st.name(m.interface)?);
        out.push(e);
    }
    Ok(out)
}

/// [[bvi]]: each BVI with its domain, its MAC (written out: the default one comes from the
/// interface index, which a restart may change) and its addresses.
fn bvis(st: &State) -> Result<Vec<Entry>, String> {
    // (domain, its BVI's index), taken before the router is locked for the addresses.
    let owners: Vec<(u32, Option<u32>)> = {
        let b = lock_bridges(st);
        let ids: Vec<u32> = b.report(None)?.iter().map(|d| d.id).collect();
        ids.into_iter().map(|d| (d, b.bvi_of(d))).collect()
    };
    let mut out = Vec::new();
    for bvi in st.soft_interfaces(true) {
        let itf = &bvi.interface;
        debug_assert_eq!(itf.driver, BVI_DRIVER);
        let instance: u32 = itf
            .name
            .strip_prefix("bvi")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("BVI {} is not named bviN", itf.name))?;
        let (bd, _) = owners
            .iter()
            .find(|(_, bvi)| *bvi == Some(itf.index))
            .ok_or_else(|| {
                format!(
                    "{} is in no bridge domain, and a [[bvi]] names one: set interface l2 \
                     bridge {} <BD> bvi, or bvi delete {}",
                    itf.name, itf.name, itf.name
                )
            })?;
        let mut e = Entry::default();
        e.set("instance", int(instance))
            .set("bridge-domain", int(*bd))
            .set("mac", itf.mac.to_string());
        st.set_addresses(&mut e, itf.index);
        out.push(e);
    }
    Ok(out)
}
