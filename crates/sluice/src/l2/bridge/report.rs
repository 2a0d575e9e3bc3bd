//! What the workers and `show` read of the bridges: the published ports and domains,
//! and the reports of `show bridge-domain` and `show l2fib`.

use super::*;

/// A row of `show bridge-domain`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DomainReport {
    pub id: BdId,
    pub index: u16,
    #[serde(flatten)]
    pub settings: DomainSettings,
    pub entries: usize,
    pub learnt_entries: usize,
    /// (interface, split-horizon group).
    pub members: Vec<(u32, u8)>,
    pub learnt: u64,
    pub moves: u64,
    pub aged: u64,
    pub over_limit: u64,
    /// Sources refused because their port was at its limit, in all ports.
    pub over_port_limit: u64,
    /// Each port's learn limit and share, in interface order.
    pub ports: Vec<PortReport>,
    /// (IPv4 address, MAC) of the ARP entries.
    pub arp_entries: Vec<(String, String)>,
}

/// A port of `show bridge-domain`: its learn limit, learnt entries and refusals.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PortReport {
    pub interface: u32,
    pub shg: u8,
    pub mac_limit: usize,
    pub learnt_entries: usize,
    pub over_limit: u64,
}

/// A row of `show l2fib`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MacReport {
    pub bd: BdId,
    pub mac: String,
    pub interface: u32,
    #[serde(rename = "static")]
    pub is_static: bool,
    /// Seconds since it was last seen as a source.
    pub age_s: u32,
}

impl Bridges {
    /// The published domains and ports, for `L2Modes`: `(ports by interface, domains by
    /// index)` for `interfaces` interfaces.
    pub fn view(&self, interfaces: usize) -> (Vec<Option<BridgePort>>, Vec<Option<DomainView>>) {
        let mut ports = vec![None; interfaces];
        let mut views: Vec<Option<DomainView>> = Vec::new();
        for (id, d) in &self.domains {
            let i = d.index as usize;
            if views.len() <= i {
                views.resize(i + 1, None);
            }
            views[i] = Some(DomainView {
                id: *id,
                settings: d.settings,
                members: Vec::new(),
                bvi: self.bvi_of(*id),
                arp: Arc::new(
                    self.arp
                        .get(id)
                        .map(|m| m.iter().map(|(ip, mac)| (*ip, *mac)).collect())
                        .unwrap_or_default(),
                ),
            });
        }
        for (&itf, &(id, shg)) in &self.members {
            let d = &self.domains[&id];
            let bvi = self.bvis.get(&id).is_some_and(|b| b.0 == itf);
            if let Some(p) = ports.get_mut(itf as usize) {
                *p = Some(BridgePort {
                    bd: d.index,
                    shg,
                    bvi,
                });
            }
            if let Some(Some(v)) = views.get_mut(d.index as usize) {
                v.members.push((itf, shg));
            }
        }
        (ports, views)
    }

    /// `show bridge-domain`.
    pub fn report(&self, id: Option<BdId>) -> Result<Vec<DomainReport>, String> {
        if let Some(id) = id {
            self.domain(id)?;
        }
        Ok(self
            .domains
            .iter()
            .filter(|(i, _)| id.is_none_or(|want| **i == want))
            .map(|(&id, d)| {
                let (entries, learnt_entries) = self.macs.count(id);
                let MacCounters {
                    learnt,
                    moves,
                    aged,
                    over_limit,
                    over_port_limit,
                } = self.macs.counters(id);
                DomainReport {
                    id,
                    index: d.index,
                    settings: d.settings,
                    entries,
                    learnt_entries,
                    members: self
                        .members
                        .iter()
                        .filter(|(_, m)| m.0 == id)
                        .map(|(&i, m)| (i, m.1))
                        .collect(),
                    learnt,
                    moves,
                    aged,
                    over_limit,
                    over_port_limit,
                    ports: self
                        .members
                        .iter()
                        .filter(|(_, m)| m.0 == id)
                        .map(|(&i, m)| {
                            let count = self.macs.port(id, i);
                            PortReport {
                                interface: i,
                                shg: m.1,
                                mac_limit: self.port_limit(i),
                                learnt_entries: count.learnt,
                                over_limit: count.over_limit,
                            }
                        })
                        .collect(),
                    arp_entries: self
                        .arp
                        .get(&id)
                        .map(|m| {
                            m.iter()
                                .map(|(ip, mac)| {
                                    (std::net::Ipv4Addr::from(*ip).to_string(), mac.to_string())
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                }
            })
            .collect())
    }

    /// `show l2fib`: the entries of `id` or of every domain, by domain and address.
    pub fn entries(&self, id: Option<BdId>) -> Result<Vec<MacReport>, String> {
        if let Some(id) = id {
            self.domain(id)?;
        }
        let now = self.clock.now();
        let table = self.fib.table();
        let mut out = Vec::new();
        for (&bd, d) in self
            .domains
            .iter()
            .filter(|(i, _)| id.is_none_or(|w| **i == w))
        {
            for (mac, e) in self.macs.entries(bd) {
                let seen = table.seen(key(d.index, &mac.0)).unwrap_or(now);
                out.push(MacReport {
                    bd,
                    mac: mac.to_string(),
                    interface: e.interface,
                    is_static: e.is_static,
                    age_s: now.saturating_sub(seen),
                });
            }
        }
        Ok(out)
    }

    /// Entries in every domain, and the table's memory.
    pub fn totals(&self) -> (usize, usize) {
        let t = self.fib.table();
        (t.live(), t.memory_bytes())
    }

    pub fn learns_lost(&self) -> u64 {
        self.learns_lost.load(Ordering::Relaxed)
    }
}
