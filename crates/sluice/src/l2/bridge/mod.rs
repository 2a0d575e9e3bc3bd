//! Bridge domains as the control plane keeps them: each domain's settings, its members (an
//! interface and its split-horizon group), the MAC table, and what the workers read of it
//! (the published `L2Fib`, and the domains and ports in `L2Modes`).
//!
//! Workers learn by sending `MacLearn` batches to the control thread, which applies them
//! here; the per-packet path reads the published table and never takes this lock.

use super::fib::{key, key_mac, L2FibReader, L2FibWriter};
use super::mac_table::{BdId, Learnt, MacCounters, MacTable};
use crate::wire::MacAddress;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

mod report;
pub use report::{DomainReport, MacReport, PortReport};

/// Learnt entries a bridge domain holds at most unless configured.
pub const DEFAULT_MAC_LIMIT: usize = 1 << 20;
/// Learnt entries one port holds at most unless configured: room for a large access
/// segment, while a MAC flood from one port takes under 1 % of the domain's limit. An uplink
/// facing a bigger L2 network needs more (`mac-limit` of the member).
pub const DEFAULT_PORT_MAC_LIMIT: usize = 8192;
/// Seconds a learnt entry lives unseen unless configured: Linux's `ageing_time` and IEEE
/// 802.1D's recommended default (7.9.2).
pub const DEFAULT_MAC_AGE_S: u32 = 300;
/// Bits of `group-fwd-mask` refused, as Linux refuses them (`BR_GROUPFWD_RESTRICTED`):
/// 01:80:C2:00:00:00 is the bridges' spanning tree, :01 MAC control (PAUSE), :02 slow
/// protocols (LACP), all meant for the link alone.
pub const GROUP_FWD_RESTRICTED: u16 = 0x0007;
/// Internal indices are 16 bits (they are part of the MAC table's key).
pub const MAX_DOMAINS: usize = 4096;

/// What `create bridge-domain` and `[[bridge-domain]]` set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DomainSettings {
    /// Learn source addresses.
    pub learn: bool,
    /// Flood broadcast and multicast frames.
    pub flood: bool,
    /// Flood unicast frames to unknown addresses.
    pub uu_flood: bool,
    /// Seconds a learnt address lives unseen; 0: forever.
    pub mac_age_s: u32,
    /// Learnt addresses at most; sources beyond it are counted, not learnt.
    pub mac_limit: usize,
    /// Answer ARP requests for the domain's ARP entries instead of flooding them.
    pub arp_term: bool,
    /// Bit N set: forward frames to the reserved group 01:80:C2:00:00:0N (see
    /// `nodes/l2/fwd.rs`); never bits 0-2 (`GROUP_FWD_RESTRICTED`).
    pub group_fwd_mask: u16,
}

impl Default for DomainSettings {
    fn default() -> Self {
        DomainSettings {
            learn: true,
            flood: true,
            uu_flood: true,
            mac_age_s: DEFAULT_MAC_AGE_S,
            mac_limit: DEFAULT_MAC_LIMIT,
            arp_term: false,
            group_fwd_mask: 0,
        }
    }
}

/// One bridge port as the workers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BridgePort {
    /// The domain's internal index.
    pub bd: u16,
    /// Split-horizon group: frames are not flooded or forwarded between two members of the
    /// same non-zero group.
    pub shg: u8,
    /// The domain's routed interface: frames to it go to the routing nodes, and what the
    /// router sends out of it goes into the domain.
    pub bvi: bool,
}

/// One domain as the workers see it.
#[derive(Clone, Debug)]
pub struct DomainView {
    pub id: BdId,
    pub settings: DomainSettings,
    /// (interface, split-horizon group), in interface order.
    pub members: Vec<(u32, u8)>,
    /// The domain's routed interface, one of the members.
    pub bvi: Option<u32>,
    /// IPv4 address → MAC, for ARP termination.
    pub arp: Arc<std::collections::HashMap<u32, MacAddress>>,
}

/// A MAC address a worker saw as a source where the table does not have it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacLearn {
    pub bd: u16,
    pub mac: MacAddress,
    pub interface: u32,
}

/// Batches of learns on their way from a worker to the control thread.
pub type MacLearnSender = std::sync::mpsc::SyncSender<Vec<MacLearn>>;

/// The seconds clock of the MAC table: workers stamp entries with it, ageing reads it.
#[derive(Clone, Copy, Debug)]
pub struct L2Clock(Instant);

impl L2Clock {
    pub fn now(&self) -> u32 {
        self.0.elapsed().as_secs() as u32
    }
}

struct Domain {
    index: u16,
    settings: DomainSettings,
}

/// Every bridge domain and the MAC table.
pub struct Bridges {
    domains: BTreeMap<BdId, Domain>,
    /// Interface → (domain, split-horizon group).
    members: BTreeMap<u32, (BdId, u8)>,
    /// Interface → its learn limit, where not `DEFAULT_PORT_MAC_LIMIT`.
    port_limits: BTreeMap<u32, usize>,
    /// Domain → its BVI and the BVI's MAC (a static entry of the domain).
    bvis: BTreeMap<BdId, (u32, MacAddress)>,
    /// Domain → its ARP entries (IPv4 address → MAC), for ARP termination.
    arp: BTreeMap<BdId, BTreeMap<u32, MacAddress>>,
    macs: MacTable,
    fib: L2FibWriter,
    clock: L2Clock,
    /// Learn batches a worker could not send (the control thread was behind).
    pub learns_lost: Arc<AtomicU64>,
}

impl Default for Bridges {
    fn default() -> Self {
        Bridges {
            domains: BTreeMap::new(),
            members: BTreeMap::new(),
            port_limits: BTreeMap::new(),
            bvis: BTreeMap::new(),
            arp: BTreeMap::new(),
            macs: MacTable::new(),
            fib: L2FibWriter::default(),
            clock: L2Clock(Instant::now()),
            learns_lost: Arc::default(),
        }
    }
}

impl Bridges {
    pub fn reader(&self) -> L2FibReader {
        self.fib.reader()
    }

    pub fn clock(&self) -> L2Clock {
        self.clock
    }

    pub fn exists(&self, id: BdId) -> bool {
        self.domains.contains_key(&id)
    }

    /// Create domain `id`, or change an existing one's settings.
    pub fn create(&mut self, id: BdId, settings: DomainSettings) -> Result<(), String> {
        check_group_fwd_mask(settings.group_fwd_mask)?;
        if let Some(d) = self.domains.get_mut(&id) {
            d.settings = settings;
        } else {
            let index = (0..MAX_DOMAINS as u16)
                .find(|i| self.domains.values().all(|d| d.index != *i))
                .ok_or_else(|| format!("at most {MAX_DOMAINS} bridge domains"))?;
            self.domains.insert(id, Domain { index, settings });
        }
        self.macs.set_limit(id, settings.mac_limit);
        Ok(())
    }

    /// Delete domain `id`; refused while it has members.
    pub fn delete(&mut self, id: BdId) -> Result<(), String> {
        let d = self.domain(id)?;
        let members: Vec<String> = self
            .members
            .iter()
            .filter(|(_, (bd, _))| *bd == id)
            .map(|(i, _)| i.to_string())
            .collect();
        if !members.is_empty() {
            return Err(format!(
                "bridge domain {id} has members (interface index {}): take them out first \
                 (set interface l3 IF)",
                members.join(", ")
            ));
        }
        let index = d.index;
        self.fib.retain(|k, _| (k >> 48) as u16 != index + 1);
        self.macs.remove_domain(id);
        self.arp.remove(&id);
        self.domains.remove(&id);
        Ok(())
    }

    fn domain(&self, id: BdId) -> Result<&Domain, String> {
        self.domains
            .get(&id)
            .ok_or_else(|| format!("no bridge domain {id} (create bridge-domain {id})"))
    }

    /// Put `interface` in domain `id` (out of any other), or take it out with `None`. Its
    /// learnt addresses are forgotten either way.
    pub fn set_member(&mut self, interface: u32, to: Option<(BdId, u8)>) -> Result<(), String> {
        if let Some((id, _)) = to {
            self.domain(id)?;
        }
        if self.members.get(&interface).copied() == to {
            return Ok(());
        }
        self.forget_interface(interface);
        // A BVI leaving its domain takes its address entry along.
        let was_bvi = self
            .bvis
            .iter()
            .find(|(_, b)| b.0 == interface)
            .map(|(d, b)| (*d, b.1));
        if let Some((bd, mac)) = was_bvi {
            self.bvis.remove(&bd);
            let _ = self.remove_mac(bd, mac);
        }
        match to {
            Some(m) => self.members.insert(interface, m),
            None => {
                self.port_limits.remove(&interface);
                self.members.remove(&interface)
            }
        };
        Ok(())
    }

    /// Make `interface` (with address `mac`) the routed interface of domain `id`: a port of it
    /// whose address is a static entry.
    pub fn set_bvi(&mut self, interface: u32, id: BdId, mac: MacAddress) -> Result<(), String> {
        if let Some((other, _)) = self.bvis.get(&id).filter(|b| b.0 != interface) {
            return Err(format!(
                "bridge domain {id} has a BVI already (interface index {other})"
            ));
        }
        self.set_member(interface, Some((id, 0)))?;
        self.bvis.insert(id, (interface, mac));
        self.add_mac(id, mac, interface, true)
    }

    /// `set bridge-domain arp entry`: `ip` is at `mac` in domain `id` (or no longer, `None`).
    pub fn set_arp_entry(
        &mut self,
        id: BdId,
        ip: u32,
        mac: Option<MacAddress>,
    ) -> Result<(), String> {
        self.domain(id)?;
        let entries = self.arp.entry(id).or_default();
        match mac {
            Some(m) if m.is_multicast() => Err(format!("{m} is not a unicast MAC address")),
            Some(m) => {
                entries.insert(ip, m);
                Ok(())
            }
            None => entries.remove(&ip).map(|_| ()).ok_or_else(|| {
                format!(
                    "{} has no ARP entry in bridge domain {id}",
                    std::net::Ipv4Addr::from(ip)
                )
            }),
        }
    }

    /// Let `interface` hold at most `limit` learnt entries (`None`: the default). Entries
    /// beyond a lowered limit stay until they age or leave.
    pub fn set_port_limit(&mut self, interface: u32, limit: Option<usize>) {
        match limit.filter(|&l| l != DEFAULT_PORT_MAC_LIMIT) {
            Some(l) => self.port_limits.insert(interface, l),
            None => self.port_limits.remove(&interface),
        };
    }

    /// The learn limit of `interface`.
    pub fn port_limit(&self, interface: u32) -> usize {
        self.port_limits
            .get(&interface)
            .copied()
            .unwrap_or(DEFAULT_PORT_MAC_LIMIT)
    }

    /// The BVI of domain `id`, if it has one.
    pub fn bvi_of(&self, id: BdId) -> Option<u32> {
        self.bvis.get(&id).map(|b| b.0)
    }

    /// The domain and split-horizon group `interface` is in.
    pub fn member_of(&self, interface: u32) -> Option<(BdId, u8)> {
        self.members.get(&interface).copied()
    }

    /// Remove the learnt entries behind `interface` (it left its domain or went away).
    fn forget_interface(&mut self, interface: u32) {
        let Some((id, _)) = self.members.get(&interface).copied() else {
            return;
        };
        for (mac, e) in self.macs.entries(id) {
            if e.interface == interface && !e.is_static {
                self.macs.remove(id, mac);
                if let Ok(d) = self.domain(id) {
                    self.fib.remove(key(d.index, &mac.0));
                }
            }
        }
        self.macs.forget_port(id, interface);
    }

    /// `l2fib add`: `mac` behind `interface` in domain `id`, static or as if learnt now.
    pub fn add_mac(
        &mut self,
        id: BdId,
        mac: MacAddress,
        interface: u32,
        is_static: bool,
    ) -> Result<(), String> {
        let index = self.domain(id)?.index;
        if mac.is_multicast() || mac.0 == [0; 6] {
            return Err(format!(
                "{mac} is a group or all-zero address: only unicast ones are learnt"
            ));
        }
        if self.members.get(&interface).map(|m| m.0) != Some(id) {
            return Err(format!(
                "interface index {interface} is not in bridge domain {id}"
            ));
        }
        let now = self.clock.now();
        self.macs.add(id, mac, interface, is_static, now as u64);
        self.fib.set(key(index, &mac.0), interface, is_static, now);
        Ok(())
    }

    /// `l2fib del`.
    pub fn remove_mac(&mut self, id: BdId, mac: MacAddress) -> Result<(), String> {
        let index = self.domain(id)?.index;
        self.macs
            .remove(id, mac)
            .ok_or_else(|| format!("{mac} is not in bridge domain {id}"))?;
        self.fib.remove(key(index, &mac.0));
        Ok(())
    }

    /// `clear l2fib`: forget the learnt entries of `id`, or of every domain.
    pub fn flush(&mut self, id: Option<BdId>) -> Result<usize, String> {
        let ids: Vec<BdId> = match id {
            Some(id) => {
                self.domain(id)?;
                vec![id]
            }
            None => self.domains.keys().copied().collect(),
        };
        let mut n = 0;
        for id in ids {
            let index = self.domains[&id].index;
            n += self.macs.flush(id);
            self.fib.retain(|k, st| st || (k >> 48) as u16 != index + 1);
        }
        Ok(n)
    }

    /// Apply a worker's learns.
    pub fn learn(&mut self, batch: &[MacLearn]) {
        let now = self.clock.now();
        let mut moved = false;
        for l in batch {
            // The domain may have gone, or the interface left it, since the worker looked.
            let Some(&(id, _)) = self.members.get(&l.interface) else {
                continue;
            };
            match self.domains.get(&id) {
                Some(d) if d.index == l.bd => {}
                _ => continue,
            }
            let limit = self.port_limit(l.interface);
            match self.macs.learn(id, l.mac, l.interface, limit, now as u64) {
                Learnt::Added => self.fib.set(key(l.bd, &l.mac.0), l.interface, false, now),
                Learnt::Moved { .. } => {
                    self.fib.set(key(l.bd, &l.mac.0), l.interface, false, now);
                    moved = true;
                }
                _ => {}
            }
        }
        // A flow the XDP fast path carries to a moved address is stale now (a new address
        // changes no flow it carries: frames to it were flooded, never offloaded).
        if moved {
            crate::graph::epoch::bump();
        }
    }

    /// Forget learnt entries not seen for their domain's age. Returns how many went.
    pub fn age(&mut self) -> usize {
        let now = self.clock.now();
        let mut ages = [0u32; MAX_DOMAINS];
        let mut ids = [0 as BdId; MAX_DOMAINS];
        for (id, d) in &self.domains {
            ages[d.index as usize] = d.settings.mac_age_s;
            ids[d.index as usize] = *id;
        }
        let table = self.fib.table();
        let expired: Vec<(u64, BdId)> = table
            .entries()
            .filter_map(|(k, _, st, seen)| {
                let index = ((k >> 48) as usize).checked_sub(1)?;
                let age = *ages.get(index)?;
                (!st && age > 0 && now.saturating_sub(seen) >= age).then_some((k, ids[index]))
            })
            .collect();
        drop(table);
        for &(k, id) in &expired {
            self.macs.expire(id, key_mac(k));
            self.fib.remove(k);
        }
        // Frames to an address no longer learnt are flooded: the fast path's flows to it
        // are stale.
        if !expired.is_empty() {
            crate::graph::epoch::bump();
        }
        expired.len()
    }
}

/// `group-fwd-mask` as Linux takes it: bits 0-2 are refused.
pub fn check_group_fwd_mask(mask: u16) -> Result<(), String> {
    if mask & GROUP_FWD_RESTRICTED != 0 {
        return Err(format!(
            "group-fwd-mask {mask:#06x}: bits 0-2 (01:80:c2:00:00:00 STP, :01 PAUSE, :02 LACP) \
             are never forwarded"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
