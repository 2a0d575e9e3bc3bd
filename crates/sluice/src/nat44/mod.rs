//! NAT44, endpoint dependent (VPP's nat44-ed, Linux's masquerade): inside hosts reach the
//! outside through the outside addresses, and only the replies of their sessions, or
//! packets to a static mapping (a port forward), come back in.
//!
//! - `nat44-in`, a feature of the ip4-unicast arc on inside and outside interfaces, finds
//!   a packet's session by its tuple and, when its destination changes (replies, port
//!   forwards), translates it before the route lookup; on an
//!   outside interface it opens sessions for static mappings, and hands a reply to the
//!   worker that owns its port; on an inside interface a packet to a static mapping's
//!   outside address opens a hairpin session (both ends translated).
//! - `nat44-out`, a feature of the ip4-output arc on outside interfaces, translates the
//!   packets whose source alone changes (after the TTL and MTU checks, whose errors then go
//!   to the sender untranslated) and opens the session of a flow's first packet.
//! - Each worker owns its sessions (`table.rs`) and a slice of every outside address's
//!   ports (`ports.rs`): a reply names its worker by its port, and no lock is shared.
//!
//! The control plane (`control.rs`) keeps the configuration and publishes what the workers
//! read (`NatView`); workers publish counters (`Stats`) and, on request, session lists.

pub mod commands;
pub mod config;
pub mod control;
pub mod node;
pub mod packet;
pub mod ports;
pub mod section;
pub mod shared;
pub mod table;

use packet::{ICMP, TCP, UDP};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use table::{Session, State};

/// Session timeouts, in seconds (the config's and `set nat44 timeout`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub udp: u32,
    pub tcp_established: u32,
    pub tcp_transitory: u32,
    pub icmp: u32,
}

impl Default for Timeouts {
    /// VPP's nat44-ed defaults (RFC 4787 REQ-5 asks at least 120 s of UDP; RFC 5382 REQ-5
    /// at least 2 h 4 min for established TCP).
    fn default() -> Timeouts {
        Timeouts {
            udp: 300,
            tcp_established: 7440,
            tcp_transitory: 240,
            icmp: 60,
        }
    }
}

impl Timeouts {
    /// How long `s` may stay idle, in ms.
    pub fn of(&self, s: &Session) -> u64 {
        let secs = match (s.orig.proto, s.state) {
            (TCP, State::Established) => self.tcp_established,
            (TCP, _) => self.tcp_transitory,
            (ICMP, _) => self.icmp,
            _ => self.udp,
        };
        secs as u64 * 1000
    }
}

/// How many sessions one worker may hold, and one inside address on one worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub sessions: usize,
    pub per_host: u32,
}

/// Why the NAT dropped a packet: each is a counter of the node that dropped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The worker's session table is full.
    TableFull,
    /// The inside address holds its limit of sessions.
    HostLimit,
    /// Every port of the worker's slice of the address is in use.
    PortsFull,
    /// No outside address: no pool and the outside interface has no IPv4 address.
    NoAddress,
    /// The translated flow's reply tuple is another session's.
    Collision,
}

/// A worker's counters, read by `show nat44 summary` and the metrics.
#[derive(Default)]
pub struct Stats {
    /// Live sessions per protocol: TCP, UDP, ICMP.
    pub live: [AtomicU64; 3],
    pub created: AtomicU64,
    pub expired: AtomicU64,
    /// Bytes the worker's table holds (sessions, indexes, port maps), roughly.
    pub memory: AtomicU64,
}

fn proto_index(proto: u8) -> usize {
    match proto {
        TCP => 0,
        UDP => 1,
        _ => 2,
    }
}

impl Stats {
    fn opened(&self, proto: u8) {
        self.live[proto_index(proto)].fetch_add(1, Relaxed);
        self.created.fetch_add(1, Relaxed);
    }

    fn closed(&self, proto: u8) {
        self.live[proto_index(proto)].fetch_sub(1, Relaxed);
    }

    fn expired(&self) {
        self.expired.fetch_add(1, Relaxed);
    }

    pub fn sessions(&self) -> u64 {
        self.live.iter().map(|l| l.load(Relaxed)).sum()
    }
}

/// An interface's part in the NAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Inside,
    Outside,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Inside => "in",
            Role::Outside => "out",
        }
    }
}

/// A static mapping (a port forward): outside `external` to inside `local`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticMapping {
    pub proto: u8,
    pub local: (u32, u16),
    pub external: (u32, u16),
}

/// What the workers read: published whole by the control plane when anything changes.
#[derive(Clone, Debug, Default)]
pub struct NatView {
    /// By interface index.
    pub roles: Vec<Option<Role>>,
    /// The outside addresses sessions are mapped to: the pool, or the outside interfaces'
    /// own addresses when there is no pool.
    pub pool: Vec<u32>,
    /// By (protocol, outside address, port): the inside endpoint.
    pub statics_out: HashMap<(u8, u32, u16), (u32, u16)>,
    /// By (protocol, inside address, port): the outside endpoint.
    pub statics_in: HashMap<(u8, u32, u16), (u32, u16)>,
    pub timeouts: Timeouts,
    pub limits: Option<Limits>,
    /// The pool and the static mappings' outside addresses: where replies and port
    /// forwards arrive (besides the outside interfaces' own addresses, when there is no
    /// pool).
    pub addresses: Vec<u32>,
    /// Bumped when the pool or the interfaces change: the workers' sessions are closed.
    pub generation: u64,
    pub workers: usize,
}

impl NatView {
    #[inline]
    pub fn role(&self, interface: u32) -> Option<Role> {
        self.roles.get(interface as usize).copied().flatten()
    }

    /// Whether `addr` is one the NAT maps to (a reply or a port forward may be for it).
    #[inline]
    pub fn is_outside_address(&self, addr: u32) -> bool {
        self.addresses.contains(&addr)
    }

    /// The pool index an inside address is always mapped to (paired pooling, RFC 4787
    /// REQ-2): a hash of the address.
    pub fn pool_index(&self, inside: u32) -> usize {
        let h = inside.wrapping_mul(0x9e37_79b1).rotate_left(13);
        (h as usize) % self.pool.len().max(1)
    }
}
