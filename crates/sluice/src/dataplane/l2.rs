//! The dataplane's layer-2 control: each interface's mode (routed, cross-connected,
//! bridged, a bridge domain's BVI), sub-interfaces and BVIs made and deleted at run time, the
//! config's bridge domains and software interfaces at start, and the MAC learner thread.

use super::{Dataplane, Opened};
use crate::config::Config;
use crate::interface::{Interface, L2Modes, SharedL2Modes};
use crate::l2::bridge::{Bridges, MacLearn};
use crate::subif::{SharedSubIfs, SubIf, SubIfs, TagMatch};
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Sub-interfaces and BVIs made since start, at most: an index is never reused (a frame in
/// flight may still name a deleted one), so a controller creating and deleting in a loop
/// meets this limit instead of growing the tables forever.
pub const MAX_SOFT_INTERFACES: usize = 65_536;

/// MAC learn batches (one per frame at most) waiting for the control plane.
pub(super) const MAC_LEARN_QUEUE: usize = 256;
/// How often learnt MAC addresses are checked for age.
const MAC_AGE_SCAN: Duration = Duration::from_secs(1);

impl Dataplane {
    /// The index the next sub-interface or BVI gets, or why there is none.
    fn next_soft_index(&self) -> Result<u32, String> {
        let made = self.interfaces.list.len() - self.hardware;
        if made >= MAX_SOFT_INTERFACES {
            return Err(format!(
                "{made} sub-interfaces and BVIs made since start: the limit (indices are not \
                 reused while sluice runs; restart to reclaim them)"
            ));
        }
        Ok(self.interfaces.list.len() as u32)
    }

    /// Make `interface` a routed (L3) port, a cross-connect to another, or a bridge port,
    /// and publish the new modes.
    pub fn set_l2_mode(&self, interface: u32, mode: L2Mode) -> Result<(), String> {
        let itf = self
            .interfaces
            .list
            .get(interface as usize)
            .ok_or_else(|| format!("no interface index {interface}"))?
            .clone();
        let is_bvi = itf.driver == BVI_DRIVER;
        let mut bridges = self.bridges.lock().unwrap_or_else(|p| p.into_inner());
        match mode {
            L2Mode::Bridge { bd, bvi: true, .. } if is_bvi => {
                bridges.set_bvi(interface, bd, itf.mac)?
            }
            L2Mode::Bridge { bvi: true, .. } => {
                return Err(format!("{} is not a BVI (bvi create makes one)", itf.name))
            }
            L2Mode::Bridge { .. } | L2Mode::Xconnect(_) if is_bvi => {
                return Err(format!(
                "{} is a BVI: it joins a bridge domain as one (set interface l2 bridge {} BD bvi)",
                itf.name, itf.name
            ))
            }
            L2Mode::Bridge { bd, shg, .. } => bridges.set_member(interface, Some((bd, shg)))?,
            _ => bridges.set_member(interface, None)?,
        }
        let mut m = (**self.modes.load()).clone();
        m.xconnect.resize(self.interfaces.list.len(), None);
        m.xconnect[interface as usize] = match mode {
            L2Mode::Xconnect(tx) => Some(tx),
            _ => None,
        };
        (m.bridge, m.domains) = bridges.view(self.interfaces.list.len());
        self.modes.store(Arc::new(m));
        Ok(())
    }

    /// Create sub-interface `PARENT.ID` matching `tags`, up or down; returns its index. It
    /// exists for the workers (and can take traffic) when this returns.
    pub fn create_subif(
        &mut self,
        parent: &str,
        id: u32,
        tags: TagMatch,
        up: bool,
    ) -> Result<u32, String> {
        let p = self
            .interfaces
            .by_name(parent)
            .ok_or_else(|| format!("no interface named '{parent}'"))?
            .clone();
        if p.index as usize >= self.hardware {
            return Err(format!(
                "{parent} is a sub-interface: sub-interfaces sit on a hardware interface"
            ));
        }
        let name = format!("{parent}.{id}");
        if self.interfaces.by_name(&name).is_some() {
            return Err(format!("{name} exists already"));
        }
        let mut table = (**self.subifs.load()).clone();
        if let Some(other) = table.conflict(p.index, tags) {
            return Err(format!(
                "{} already takes {} frames on {parent}",
                other.interface.name, other.tags
            ));
        }
        let index = self.next_soft_index()?;
        let mut itf = Interface::new(index, &name, "sub-interface", self.workers.len() + 1);
        itf.mac = p.mac;
        itf.mtu = p.mtu;
        itf.details = vec![
            ("parent".into(), parent.to_string()),
            ("match".into(), tags.to_string()),
        ];
        itf.set_up(up);
        let itf = self.add_soft_interface(itf);
        table.insert(SubIf::new(itf, p.index, tags));
        self.subifs.store(Arc::new(table));
        Ok(index)
    }

    /// Create BVI `bviN` (a bridge domain's routed interface), with `mac` or one of sluice's
    /// own; returns its index.
    pub fn create_bvi(
        &mut self,
        instance: u32,
        mac: Option<crate::wire::MacAddress>,
    ) -> Result<u32, String> {
        let name = format!("bvi{instance}");
        if self.interfaces.by_name(&name).is_some() {
            return Err(format!("{name} exists already"));
        }
        let index = self.next_soft_index()?;
        let mut itf = Interface::new(index, &name, BVI_DRIVER, self.workers.len() + 1);
        if let Some(m) = mac {
            itf.mac = m;
        }
        itf.set_up(true);
        let itf = self.add_soft_interface(itf);
        let mut table = (**self.subifs.load()).clone();
        table.insert(SubIf::bvi(itf));
        self.subifs.store(Arc::new(table));
        Ok(index)
    }

    /// Registers a new software interface (a sub-interface or a BVI) with the router, under
    /// the index the dataplane gave it, and in the interface list and the modes.
    fn add_soft_interface(&mut self, itf: Interface) -> Arc<Interface> {
        let itf = Arc::new(itf);
        {
            let mut r = self.router.lock().unwrap_or_else(|p| p.into_inner());
            let at = r.add_interface(&itf.name, itf.mac, itf.mtu);
            debug_assert_eq!(
                at, itf.index,
                "the router numbers interfaces as the dataplane does"
            );
            r.commit();
        }
        self.interfaces.list.push(itf.clone());
        // The modes cover every index before a frame can arrive on the new one.
        let mut m = (**self.modes.load()).clone();
        m.xconnect.resize(self.interfaces.list.len(), None);
        m.bridge.resize(self.interfaces.list.len(), None);
        self.modes.store(Arc::new(m));
        itf
    }

    /// Delete sub-interface or BVI `name`; refused while it has a mode or addresses.
    pub fn delete_subif(&mut self, name: &str) -> Result<(), String> {
        let itf = self
            .interfaces
            .by_name(name)
            .ok_or_else(|| format!("no interface named '{name}'"))?
            .clone();
        let i = itf.index;
        if (i as usize) < self.hardware {
            return Err(format!(
                "{name} is a hardware interface, not a sub-interface or BVI"
            ));
        }
        let modes = self.modes.load();
        let xc = modes.xconnect.get(i as usize).copied().flatten().is_some()
            || modes.xconnect.contains(&Some(i));
        if xc || modes.bridge_port(i).is_some() {
            return Err(format!(
                "{name} is cross-connected or bridged: set interface l3 {name} first"
            ));
        }
        let routed = self.router.lock().unwrap_or_else(|p| p.into_inner()).view();
        if routed.load().interface(i).is_some_and(|l3| l3.routed()) {
            return Err(format!("{name} has IP addresses: delete them first"));
        }
        let mut table = (**self.subifs.load()).clone();
        table.remove(i);
        self.subifs.store(Arc::new(table));
        itf.set_deleted();
        Ok(())
    }

    /// Publish the bridge domains after a change that did not move a port (`create
    /// bridge-domain`, a new setting).
    pub fn publish_bridges(&self, bridges: &Bridges) {
        let mut m = (**self.modes.load()).clone();
        (m.bridge, m.domains) = bridges.view(self.interfaces.list.len());
        self.modes.store(Arc::new(m));
    }
}

/// The driver name of a BVI interface.
pub const BVI_DRIVER: &str = "bvi";

/// What an interface does with the frames it receives, apart from routing by its addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Mode {
    /// No L2 mode: it routes if it has addresses.
    L3,
    Xconnect(u32),
    /// A port of bridge domain `bd`; `bvi`: its routed interface (a BVI interface only).
    Bridge {
        bd: u32,
        shg: u8,
        bvi: bool,
    },
}

/// The config's sub-interfaces, numbered after the hardware interfaces, then its BVIs.
fn sub_interfaces(cfg: &Config, opened: &[Opened], threads: usize) -> Vec<SubIf> {
    let mut out = Vec::new();
    for (k, s) in cfg.subinterfaces.iter().enumerate() {
        // The config checked that the parent is a hardware interface.
        let Some(parent) = opened.iter().find(|o| o.interface.name == s.parent) else {
            continue;
        };
        let p = &parent.interface;
        let index = (opened.len() + k) as u32;
        let mut itf = Interface::new(index, &s.name(), "sub-interface", threads);
        itf.mac = p.mac;
        itf.mtu = p.mtu;
        itf.details = vec![
            ("parent".into(), p.name.clone()),
            ("match".into(), s.tags.to_string()),
        ];
        itf.set_up(s.up);
        out.push(SubIf::new(Arc::new(itf), p.index, s.tags));
    }
    for (k, b) in cfg.bvis.iter().enumerate() {
        let index = (opened.len() + cfg.subinterfaces.len() + k) as u32;
        let mut itf = Interface::new(index, &b.name(), BVI_DRIVER, threads);
        if let Some(m) = b.mac {
            itf.mac = m;
        }
        itf.set_up(true);
        out.push(SubIf::bvi(Arc::new(itf)));
    }
    out
}

/// The bridge domains of the config, their members and static entries.
fn build_bridges(
    cfg: &Config,
    find: &dyn Fn(&str) -> Option<usize>,
    soft: &[SubIf],
) -> Result<Bridges, String> {
    let mut bridges = Bridges::default();
    let index = |name: &str| {
        find(name)
            .map(|i| i as u32)
            .ok_or(format!("no interface {name}"))
    };
    for d in &cfg.bridge_domains {
        bridges.create(d.id, d.settings)?;
        for (name, shg) in &d.members {
            bridges.set_member(index(name)?, Some((d.id, *shg)))?;
        }
        for (name, limit) in &d.port_limits {
            bridges.set_port_limit(index(name)?, Some(*limit));
        }
        for (ip, mac) in &d.arp_entries {
            bridges.set_arp_entry(d.id, u32::from(*ip), Some(*mac))?;
        }
    }
    for m in &cfg.static_macs {
        bridges.add_mac(m.bd, m.mac, index(&m.interface)?, true)?;
    }
    for b in &cfg.bvis {
        let name = b.name();
        let bvi = soft
            .iter()
            .find(|s| s.interface.name == name)
            .ok_or(format!("no interface {name}"))?;
        bridges.set_bvi(bvi.interface.index, b.bd, bvi.interface.mac)?;
    }
    Ok(bridges)
}

/// Takes the workers' MAC learns and applies them, and ages the learnt entries once a
/// second.
pub(super) fn spawn_mac_learner(
    bridges: Arc<Mutex<Bridges>>,
    learns: Receiver<Vec<MacLearn>>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, String> {
    std::thread::Builder::new()
        .name("sluice_l2learn".into())
        .spawn(move || {
            let mut aged_at = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let first = match learns.recv_timeout(MAC_AGE_SCAN) {
                    Ok(batch) => Some(batch),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                };
                let mut b = bridges.lock().unwrap_or_else(|p| p.into_inner());
                for batch in first.into_iter().chain(learns.try_iter()) {
                    b.learn(&batch);
                }
                if aged_at.elapsed() >= MAC_AGE_SCAN {
                    b.age();
                    aged_at = Instant::now();
                }
            }
        })
        .map_err(|e| format!("cannot start the MAC learner: {e}"))
}

/// What layer 2's start step makes: the sub-interfaces and BVIs (numbered after the
/// hardware interfaces), each interface's mode, and the bridge domains.
pub(super) struct L2Start {
    pub subs: Vec<SubIf>,
    pub modes: SharedL2Modes,
    pub subifs: SharedSubIfs,
    pub bridges: Bridges,
}

/// The start step of layer 2: the config's sub-interfaces, BVIs, cross-connects and bridge
/// domains.
pub(super) fn start(cfg: &Config, opened: &[Opened], workers: usize) -> Result<L2Start, String> {
    // Sub-interfaces follow the hardware interfaces, in config order; then the BVIs.
    let hardware = opened.len();
    let sub_names: Vec<String> = cfg
        .subinterfaces
        .iter()
        .map(|s| s.name())
        .chain(cfg.bvis.iter().map(|b| b.name()))
        .collect();
    let find = |n: &str| {
        opened
            .iter()
            .position(|o| o.interface.name == n)
            .or_else(|| sub_names.iter().position(|s| s == n).map(|k| hardware + k))
    };
    let total = hardware + sub_names.len();
    let mut xconnect = vec![None; total];
    for x in &cfg.xconnects {
        if let (Some(rx), Some(tx)) = (find(x.rx.get_ref()), find(x.tx.get_ref())) {
            xconnect[rx] = Some(tx as u32);
        }
    }
    let subs = sub_interfaces(cfg, opened, workers + 1);
    let bridges = build_bridges(cfg, &find, &subs)?;
    let (bridge, domains) = bridges.view(total);
    let modes = L2Modes {
        xconnect,
        bridge,
        domains,
    };
    let mut table = SubIfs::new(hardware as u32);
    for s in &subs {
        table.insert(s.clone());
    }
    Ok(L2Start {
        subs,
        modes: Arc::new(ArcSwap::from_pointee(modes)),
        subifs: Arc::new(ArcSwap::from_pointee(table)),
        bridges,
    })
}
