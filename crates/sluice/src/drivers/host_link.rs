//! The Linux device under an af_packet or af_xdp interface, as rtnetlink reports it: up,
//! lower-down (no carrier, e.g. a veth whose peer is down), down, or deleted. A control-plane
//! thread listens to link notifications and keeps each `HostLink` current; the drivers'
//! transmit queues read its state (one atomic load per burst) and drop, with a named count,
//! what the device could not send anyway, instead of asking the kernel once per frame.

use super::LiveStatus;
use crate::sys::rtnetlink::{self, LinkMessage};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A host device's state, as far as sending through it goes.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// IFF_UP and IFF_LOWER_UP: frames can go out.
    Up = 0,
    /// IFF_UP without IFF_LOWER_UP: no carrier (a veth whose peer is down, a cable out).
    LowerDown = 1,
    /// Administratively down (`ip link set DEV down`).
    Down = 2,
    /// RTM_DELLINK: the device was deleted or left this network namespace; our sockets on
    /// it are dead.
    Deleted = 3,
}

impl LinkState {
    pub fn from_flags(flags: u32) -> LinkState {
        if flags & libc::IFF_UP as u32 == 0 {
            LinkState::Down
        } else if flags & libc::IFF_LOWER_UP as u32 == 0 {
            LinkState::LowerDown
        } else {
            LinkState::Up
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LinkState::Up => "up",
            LinkState::LowerDown => "lower-down",
            LinkState::Down => "down",
            LinkState::Deleted => "deleted",
        }
    }

    fn from_u8(v: u8) -> LinkState {
        match v {
            0 => LinkState::Up,
            1 => LinkState::LowerDown,
            2 => LinkState::Down,
            _ => LinkState::Deleted,
        }
    }
}

/// RFC 2863 operational states as IFLA_OPERSTATE numbers them.
fn operstate_name(v: u8) -> &'static str {
    match v {
        1 => "notpresent",
        2 => "down",
        3 => "lowerlayerdown",
        4 => "testing",
        5 => "dormant",
        6 => "up",
        _ => "unknown",
    }
}

/// Reopens a driver's sockets on a device that came back under the same name (its new
/// ifindex given); the driver's queues pick the new sockets up when `generation` changes.
pub type Reattach = Box<dyn Fn(u32) -> Result<(), String> + Send + Sync>;

/// One host device as the daemon last heard of it.
pub struct HostLink {
    name: String,
    ifindex: AtomicU32,
    state: AtomicU8,
    operstate: AtomicU8,
    /// State changes seen since the interface opened.
    changes: AtomicU64,
    /// Frames the transmit queues dropped because the link was down or had no carrier.
    tx_link_down: AtomicU64,
    /// Frames the transmit queues dropped because the device was gone.
    tx_no_device: AtomicU64,
    /// Bumped after every successful reattach.
    generation: AtomicU32,
    reattach: Option<Reattach>,
    /// The last reattach outcome, for `show interface`.
    note: Mutex<Option<String>>,
}

impl HostLink {
    /// The device `name` (index `ifindex`), its state read from the kernel now.
    pub fn new(name: &str, ifindex: u32, reattach: Option<Reattach>) -> HostLink {
        let l = HostLink::assumed_up(name, ifindex, reattach);
        // Unknown until the kernel says.
        l.operstate.store(0, Ordering::Relaxed);
        if let Ok(Some(m)) = rtnetlink::get_link(ifindex) {
            l.state
                .store(LinkState::from_flags(m.flags) as u8, Ordering::Relaxed);
            l.operstate
                .store(m.operstate.unwrap_or(0), Ordering::Relaxed);
        }
        l
    }

    /// A link taken to be up (operstate "up"), before the kernel is asked.
    fn assumed_up(name: &str, ifindex: u32, reattach: Option<Reattach>) -> HostLink {
        HostLink {
            name: name.to_string(),
            ifindex: AtomicU32::new(ifindex),
            state: AtomicU8::new(LinkState::Up as u8),
            operstate: AtomicU8::new(6),
            changes: AtomicU64::new(0),
            tx_link_down: AtomicU64::new(0),
            tx_no_device: AtomicU64::new(0),
            generation: AtomicU32::new(0),
            reattach,
            note: Mutex::new(None),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex.load(Ordering::Relaxed)
    }

    /// Acquire: pairs with the Release in `set_state`, so a queue that sees the state a
    /// reattach set also sees the new generation.
    #[inline]
    pub fn state(&self) -> LinkState {
        LinkState::from_u8(self.state.load(Ordering::Acquire))
    }

    #[inline]
    pub fn generation(&self) -> u32 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    /// Count `n` frames a transmit queue dropped because the link is not up.
    pub fn count_tx_drops(&self, state: LinkState, n: usize) {
        let c = match state {
            LinkState::Deleted => &self.tx_no_device,
            _ => &self.tx_link_down,
        };
        c.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn set_state(&self, s: LinkState) {
        if self.state.swap(s as u8, Ordering::Release) != s as u8 {
            self.changes.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn set_note(&self, note: String) {
        eprintln!("sluice: host device {}: {note}", self.name);
        *self.note.lock().unwrap_or_else(|p| p.into_inner()) = Some(note);
    }

    /// Take in one link notification (any device's: those of others are ignored).
    pub fn apply(&self, m: &LinkMessage) {
        if self.state() == LinkState::Deleted {
            // Only a new device with our name matters now (it may even have the old index,
            // if it left the namespace and came back).
            if !m.deleted && m.name.as_deref() == Some(self.name.as_str()) {
                self.reappeared(m);
            }
            return;
        }
        if m.ifindex != self.ifindex() {
            return;
        }
        if m.deleted {
            self.set_state(LinkState::Deleted);
            return;
        }
        if let Some(o) = m.operstate {
            self.operstate.store(o, Ordering::Relaxed);
        }
        self.set_state(LinkState::from_flags(m.flags));
    }

    fn reappeared(&self, m: &LinkMessage) {
        let Some(reattach) = &self.reattach else {
            self.set_note(format!(
                "a device of that name is back (ifindex {}); this driver does not reattach: restart sluice to use it",
                m.ifindex
            ));
            return;
        };
        // Sockets join a fanout group only on a running device: wait for it to come up (its
        // next notification says so).
        if m.flags & libc::IFF_UP as u32 == 0 {
            self.set_note(format!(
                "a device of that name is back (ifindex {}), down: reattaching when it comes up",
                m.ifindex
            ));
            return;
        }
        match reattach(m.ifindex) {
            Ok(()) => {
                self.ifindex.store(m.ifindex, Ordering::Relaxed);
                self.operstate
                    .store(m.operstate.unwrap_or(0), Ordering::Relaxed);
                self.generation.fetch_add(1, Ordering::Release);
                self.set_state(LinkState::from_flags(m.flags));
                self.set_note(format!(
                    "reattached to the new device (ifindex {})",
                    m.ifindex
                ));
            }
            Err(e) => self.set_note(format!(
                "a device of that name is back (ifindex {}) but reopening failed: {e}",
                m.ifindex
            )),
        }
    }

    /// Ask the kernel for the state again (at start, and when notifications were lost).
    fn resync(&self) {
        if self.state() != LinkState::Deleted {
            match rtnetlink::get_link(self.ifindex()) {
                Ok(Some(m)) => return self.apply(&m),
                Ok(None) => self.set_state(LinkState::Deleted),
                Err(e) => return eprintln!("sluice: host device {}: {e}", self.name),
            }
        }
        if let Some(ix) = super::af_packet::netdev::index(&self.name) {
            if let Ok(Some(m)) = rtnetlink::get_link(ix) {
                self.apply(&m);
            }
        }
    }
}

impl LiveStatus for HostLink {
    fn link_up(&self) -> bool {
        self.state() == LinkState::Up
    }

    fn link_state(&self) -> &'static str {
        self.state().name()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("link-changes", self.changes()),
            (
                "tx-dropped-link-down",
                self.tx_link_down.load(Ordering::Relaxed),
            ),
            (
                "tx-dropped-no-device",
                self.tx_no_device.load(Ordering::Relaxed),
            ),
        ]
    }

    fn details(&self) -> Vec<(String, String)> {
        let mut d = vec![
            ("host-ifindex".to_string(), self.ifindex().to_string()),
            ("link".to_string(), self.state().name().to_string()),
            (
                "operstate".to_string(),
                operstate_name(self.operstate.load(Ordering::Relaxed)).to_string(),
            ),
            ("link-changes".to_string(), self.changes().to_string()),
        ];
        if let Some(n) = self.note.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            d.push(("link-note".to_string(), n));
        }
        d
    }

    fn host_link(self: Arc<Self>) -> Option<Arc<HostLink>> {
        Some(self)
    }
}

/// How long the monitor waits for a notification before it looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Start the control-plane thread that keeps `links` current. The notification socket is
/// opened here, so a failure is the caller's error, not a silent thread.
pub fn spawn_monitor(
    links: Vec<Arc<HostLink>>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, String> {
    let socket = rtnetlink::Socket::link_events()
        .and_then(|s| s.set_receive_timeout(STOP_CHECK).map(|()| s))
        .map_err(|e| format!("cannot subscribe to link notifications: {e}"))?;
    std::thread::Builder::new()
        .name("sluice_link".into())
        .spawn(move || {
            // Subscribed first, then read: no change falls between the two.
            for l in &links {
                l.resync();
            }
            let mut buf = vec![0u8; 64 << 10];
            while !stop.load(Ordering::Relaxed) {
                match socket.recv(&mut buf) {
                    Ok(n) => {
                        for m in rtnetlink::messages(&buf[..n]).filter_map(rtnetlink::parse_link) {
                            for l in &links {
                                l.apply(&m);
                            }
                        }
                    }
                    Err(e) => match e.raw_os_error() {
                        Some(libc::EAGAIN) | Some(libc::EINTR) => {}
                        // The kernel dropped notifications: ask for the state instead.
                        Some(libc::ENOBUFS) => {
                            for l in &links {
                                l.resync();
                            }
                        }
                        _ => {
                            eprintln!("sluice: link notifications: {e}");
                            std::thread::sleep(STOP_CHECK);
                        }
                    },
                }
            }
        })
        .map_err(|e| format!("cannot start the link monitor: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(deleted: bool, ifindex: u32, flags: i32, name: &str) -> LinkMessage {
        LinkMessage {
            deleted,
            ifindex,
            flags: flags as u32,
            name: Some(name.to_string()),
            operstate: Some(if flags & libc::IFF_LOWER_UP != 0 {
                6
            } else {
                2
            }),
            tx_packets: None,
            tx_dropped: None,
        }
    }

    /// A link as `new` would make it, without asking the kernel.
    fn link(name: &str, ifindex: u32, reattach: Option<Reattach>) -> HostLink {
        HostLink::assumed_up(name, ifindex, reattach)
    }

    const UP: i32 = libc::IFF_UP | libc::IFF_LOWER_UP;

    #[test]
    fn follows_carrier_admin_state_and_deletion_of_its_own_device_only() {
        let l = link("d2", 7, None);
        l.apply(&msg(false, 8, 0, "other"));
        assert_eq!((l.state(), l.changes()), (LinkState::Up, 0));
        l.apply(&msg(false, 7, libc::IFF_UP, "d2"));
        assert_eq!(l.state(), LinkState::LowerDown);
        l.apply(&msg(false, 7, libc::IFF_UP, "d2")); // the same again is no change
        l.apply(&msg(false, 7, 0, "d2"));
        assert_eq!(l.state(), LinkState::Down);
        l.apply(&msg(false, 7, UP, "d2"));
        assert_eq!((l.state(), l.changes()), (LinkState::Up, 3));
        l.apply(&msg(true, 7, 0, "d2"));
        assert_eq!((l.state(), l.changes()), (LinkState::Deleted, 4));
        // A later message about the old index, or another device, changes nothing.
        l.apply(&msg(false, 7, UP, "x"));
        assert_eq!(l.state(), LinkState::Deleted);
        // Without a way to reattach, a new device of that name is only noted.
        l.apply(&msg(false, 9, UP, "d2"));
        assert_eq!(l.state(), LinkState::Deleted);
        assert!(l
            .details()
            .iter()
            .any(|(k, v)| k == "link-note" && v.contains("restart")));
        l.count_tx_drops(LinkState::Deleted, 5);
        l.count_tx_drops(LinkState::LowerDown, 2);
        assert_eq!(
            l.counters(),
            vec![
                ("link-changes", 4),
                ("tx-dropped-link-down", 2),
                ("tx-dropped-no-device", 5)
            ]
        );
    }

    #[test]
    fn reattaches_to_a_device_that_comes_back_under_its_name() {
        let asked = Arc::new(AtomicU32::new(0));
        let a = asked.clone();
        let fail = Arc::new(AtomicBool::new(true));
        let f = fail.clone();
        let l = link(
            "d2",
            7,
            Some(Box::new(move |ix| {
                a.store(ix, Ordering::Relaxed);
                if f.load(Ordering::Relaxed) {
                    Err("no".into())
                } else {
                    Ok(())
                }
            })),
        );
        l.apply(&msg(true, 7, 0, "d2"));
        // Back but down: nothing is opened yet.
        l.apply(&msg(false, 9, 0, "d2"));
        assert_eq!(asked.load(Ordering::Relaxed), 0);
        // Reopening fails: still deleted, same generation, the failure noted.
        l.apply(&msg(false, 9, libc::IFF_UP, "d2"));
        assert_eq!(asked.load(Ordering::Relaxed), 9);
        assert_eq!((l.state(), l.generation()), (LinkState::Deleted, 0));
        fail.store(false, Ordering::Relaxed);
        l.apply(&msg(false, 9, libc::IFF_UP, "d2"));
        assert_eq!(l.state(), LinkState::LowerDown);
        assert_eq!((l.ifindex(), l.generation()), (9, 1));
        l.apply(&msg(false, 9, UP, "d2"));
        assert_eq!(l.state(), LinkState::Up);
    }
}
