//! One worker's NAT sessions. Only that worker reads and writes them (its nat44 nodes share
//! the table, see `node.rs`), so nothing here is atomic; the control plane sees counters in
//! `Stats` and session lists through a snapshot the worker makes on request (`Shared`).
//!
//! A session holds the tuple its first packet came with (`orig`) and the tuple it left with
//! (`xlat`). It is found by either direction: `orig` for the initiator's packets, the
//! reverse of `xlat` for the replies, which are the only packets let in from beyond the NAT
//! (address-and-port dependent filtering, as conntrack). Mappings are endpoint independent:
//! an inside address and port keeps one outside address and port while any of its sessions
//! lives (RFC 4787 REQ-1).

use super::packet::{Tuple, ICMP, TCP};
use super::ports::{slice, PortSet, FIRST};
use super::{Limits, Refusal, Stats, Timeouts};
use crate::wire::tcp;
use std::collections::HashMap as StdMap;

/// The table's maps: keys a peer chooses (ports, addresses), so a keyed hash (ahash's, a
/// random key per map), which also costs a quarter of SipHash's.
type HashMap<K, V> = StdMap<K, V, ahash::RandomState>;

/// Where a session stands, for its timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// UDP, ICMP, and TCP before its reply or after a FIN or RST.
    Open,
    /// TCP that has seen both directions and no FIN or RST.
    Established,
    /// TCP that has seen a FIN or RST.
    Closing,
}

impl State {
    pub fn name(self, proto: u8) -> &'static str {
        match (self, proto) {
            (State::Open, TCP) => "syn",
            (State::Open, _) => "open",
            (State::Established, _) => "established",
            (State::Closing, _) => "closing",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Session {
    pub orig: Tuple,
    pub xlat: Tuple,
    pub state: State,
    /// When a packet last used it (ms).
    pub last: u64,
    pub created: u64,
    /// The inside endpoint's mapping (its key), when the session holds one.
    mapped: Option<MapKey>,
    /// The inside address counted against the per-host limit.
    host: u32,
    replied: bool,
    /// The XDP fast path may carry its frames: its entries go when it closes or begins
    /// closing (`withdrawn`).
    offloaded: bool,
    /// When each direction (`Dir` order) was last offered to the fast path: the epoch and
    /// the time (ms, the offerer's clock). Kept here, where the session already is in the
    /// cache, rather than in a map of its own.
    offered: [(u32, u32); 2],
}

/// Which way a packet goes in its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From the initiator: becomes `xlat`.
    Forward,
    /// A reply: becomes the reverse of `orig`.
    Reply,
}

/// Where a new session's source goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Untouched (a port forward from outside).
    Keep,
    /// Mapped to a port of this outside address (or the endpoint's mapping's).
    Map(u32),
    /// To this endpoint (a static mapping's, for a flow its inside host opens).
    Fixed(u32, u16),
}

/// An inside endpoint: protocol, address, port.
type MapKey = (u8, u32, u16);

struct Mapping {
    outside: (u32, u16),
    sessions: u32,
}

pub struct Table {
    sessions: Vec<Option<Session>>,
    free: Vec<u32>,
    by_tuple: HashMap<Tuple, (u32, Dir)>,
    mappings: HashMap<MapKey, Mapping>,
    /// Per outside address, per protocol (TCP, UDP, ICMP): this worker's ports.
    ports: HashMap<u32, [PortSet; 3]>,
    /// This worker's slice of the ports.
    range: (u32, u32),
    hosts: HashMap<u32, u32>,
    limits: Limits,
    sweep: usize,
    /// Tuples (as received) of offloaded sessions that closed or began closing, for the
    /// fast path to remove (drivers::af_xdp::fastpath::nat).
    withdrawn: Vec<Tuple>,
}

fn proto_slot(proto: u8) -> usize {
    match proto {
        TCP => 0,
        ICMP => 2,
        _ => 1,
    }
}

impl Table {
    /// Worker `w` of `workers`.
    pub fn new(w: usize, workers: usize, limits: Limits) -> Table {
        Table {
            range: slice(w, workers),
            sessions: Vec::new(),
            free: Vec::new(),
            by_tuple: HashMap::default(),
            mappings: HashMap::default(),
            ports: HashMap::default(),
            hosts: HashMap::default(),
            limits,
            sweep: 0,
            withdrawn: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len() - self.free.len()
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// New limits for the sessions opened from now on: the open ones stay, and a table (or a
    /// host) above a lowered limit opens nothing until it falls below it.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The session a packet of `tuple` belongs to, and its direction.
    #[inline]
    pub fn find(&self, tuple: &Tuple) -> Option<(u32, Dir)> {
        self.by_tuple.get(tuple).copied()
    }

    pub fn get(&self, index: u32) -> Option<&Session> {
        self.sessions.get(index as usize)?.as_ref()
    }

    /// Session `index` as the one of a packet of `tuple` (a hint nat44-in left), checked.
    #[inline]
    pub fn check(&self, index: u32, tuple: &Tuple) -> Option<(u32, Dir)> {
        let s = self.sessions.get(index as usize)?.as_ref()?;
        if s.orig == *tuple {
            Some((index, Dir::Forward))
        } else if s.xlat.reversed() == *tuple {
            Some((index, Dir::Reply))
        } else {
            None
        }
    }

    /// The tuple a packet of session `index` going `dir` leaves with (nothing changed).
    pub fn target(&self, index: u32, dir: Dir) -> Option<Tuple> {
        let s = self.sessions.get(index as usize)?.as_ref()?;
        Some(match dir {
            Dir::Forward => s.xlat,
            Dir::Reply => s.orig.reversed(),
        })
    }

    /// A packet of session `index` going `dir` with TCP `flags` at `now`: its state moves
    /// on; the tuple it must leave with is returned.
    pub fn used(&mut self, index: u32, dir: Dir, flags: u8, now: u64) -> Option<Tuple> {
        let s = self.sessions.get_mut(index as usize)?.as_mut()?;
        s.last = now;
        if s.orig.proto == TCP {
            if flags & (tcp::FIN | tcp::RST) != 0 {
                s.state = State::Closing;
                if std::mem::take(&mut s.offloaded) {
                    self.withdrawn.extend([s.orig, s.xlat.reversed()]);
                }
            } else if s.state == State::Open
                && flags & tcp::SYN == 0
                && (dir == Dir::Reply || s.replied)
            {
                // The handshake's last ACK, or data both ways.
                s.state = State::Established;
            }
        }
        if dir == Dir::Reply {
            s.replied = true;
        }
        Some(match dir {
            Dir::Forward => s.xlat,
            Dir::Reply => s.orig.reversed(),
        })
    }

    /// The outside address and port for inside endpoint `key` (its mapping's, or a new
    /// one on `addr`), counted as one more session's.
    fn map(&mut self, key: MapKey, addr: u32) -> Result<(u32, u16), Refusal> {
        if let Some(m) = self.mappings.get_mut(&key) {
            m.sessions += 1;
            return Ok(m.outside);
        }
        let range = self.range;
        let sets = self.ports.entry(addr).or_insert_with(|| {
            std::array::from_fn(|p| PortSet::new(range, addr.wrapping_mul(7919) ^ p as u32))
        });
        let set = &mut sets[proto_slot(key.0)];
        // Port preservation when the port is this worker's and free; else any of its ports.
        let port = if key.2 >= FIRST && set.take(key.2) {
            key.2
        } else {
            set.take_any().ok_or(Refusal::PortsFull)?
        };
        self.mappings.insert(
            key,
            Mapping {
                outside: (addr, port),
                sessions: 1,
            },
        );
        Ok((addr, port))
    }

    fn unmap(&mut self, key: MapKey) {
        let Some(m) = self.mappings.get_mut(&key) else {
            return;
        };
        m.sessions -= 1;
        if m.sessions > 0 {
            return;
        }
        let (addr, port) = m.outside;
        self.mappings.remove(&key);
        if let Some(sets) = self.ports.get_mut(&addr) {
            sets[proto_slot(key.0)].release(port);
        }
    }

    /// Open a session for a packet of `orig`: its source kept, mapped (endpoint
    /// independently) to a port of an outside address, or set to a static mapping's
    /// endpoint; its destination changed to `dnat` when given (a static mapping). The
    /// session's index and the tuple the packet must leave with are returned.
    pub fn open(
        &mut self,
        orig: Tuple,
        (src, dnat): (Source, Option<(u32, u16)>),
        (now, stats): (u64, &Stats),
    ) -> Result<(u32, Tuple), Refusal> {
        if self.len() >= self.limits.sessions {
            return Err(Refusal::TableFull);
        }
        let host = orig.src;
        let held = self.hosts.get(&host).copied().unwrap_or(0);
        if held >= self.limits.per_host {
            return Err(Refusal::HostLimit);
        }
        let mut xlat = orig;
        if let Some((a, p)) = dnat {
            xlat.dst = a;
            xlat.dport = p;
        }
        let mut mapped = None;
        match src {
            Source::Keep => {}
            Source::Fixed(a, p) => (xlat.src, xlat.sport) = (a, p),
            Source::Map(addr) => {
                let key = (orig.proto, orig.src, orig.sport);
                (xlat.src, xlat.sport) = self.map(key, addr)?;
                mapped = Some(key);
            }
        }
        if orig.proto == ICMP {
            // The identifier is both ports.
            xlat.dport = xlat.sport;
        }
        let reply = xlat.reversed();
        if self.by_tuple.contains_key(&orig) || self.by_tuple.contains_key(&reply) {
            // The reply tuple is taken by another session (a static mapping's port reused
            // by a remote, say): this one cannot be told apart from it.
            if let Some(key) = mapped {
                self.unmap(key);
            }
            return Err(Refusal::Collision);
        }
        let session = Session {
            orig,
            xlat,
            state: State::Open,
            last: now,
            created: now,
            mapped,
            host,
            replied: false,
            offloaded: false,
            offered: [(0, 0); 2],
        };
        let index = match self.free.pop() {
            Some(i) => {
                self.sessions[i as usize] = Some(session);
                i
            }
            None => {
                self.sessions.push(Some(session));
                (self.sessions.len() - 1) as u32
            }
        };
        self.by_tuple.insert(orig, (index, Dir::Forward));
        self.by_tuple.insert(reply, (index, Dir::Reply));
        *self.hosts.entry(host).or_insert(0) += 1;
        stats.opened(orig.proto);
        Ok((index, xlat))
    }

    fn close(&mut self, index: u32, stats: &Stats) {
        let Some(s) = self.sessions.get_mut(index as usize).and_then(Option::take) else {
            return;
        };
        self.by_tuple.remove(&s.orig);
        self.by_tuple.remove(&s.xlat.reversed());
        if s.offloaded {
            self.withdrawn.extend([s.orig, s.xlat.reversed()]);
        }
        if let Some(key) = s.mapped {
            self.unmap(key);
        }
        if let Some(n) = self.hosts.get_mut(&s.host) {
            *n -= 1;
            if *n == 0 {
                self.hosts.remove(&s.host);
            }
        }
        self.free.push(index);
        stats.closed(s.orig.proto);
    }

    /// Session `index`, which the fast path may carry from now on: its key tuple (as the
    /// packets going `dir` are received), and the tuple they leave with.
    pub fn offload(&mut self, index: u32, dir: Dir) -> Option<(Tuple, Tuple)> {
        let s = self.sessions.get_mut(index as usize)?.as_mut()?;
        s.offloaded = true;
        Some(match dir {
            Dir::Forward => (s.orig, s.xlat),
            Dir::Reply => (s.xlat.reversed(), s.orig.reversed()),
        })
    }

    /// Session `index`'s `dir` to offer to the fast path at `at` (epoch, ms): its tuples as
    /// received and as sent; none when that direction was offered in the same epoch less
    /// than `again` ms before (its entry is on its way), or when there is no such session.
    pub fn offer(
        &mut self,
        index: u32,
        dir: Dir,
        at: (u32, u32),
        again: u32,
    ) -> Option<(Tuple, Tuple)> {
        let s = self.sessions.get_mut(index as usize)?.as_mut()?;
        let (epoch, ms) = s.offered[dir as usize];
        if epoch == at.0 && at.1.wrapping_sub(ms) < again {
            return None;
        }
        s.offered[dir as usize] = at;
        self.offload(index, dir)
    }

    /// `dir` of session `index` was not offered after all: the next frame may offer it.
    pub fn forget_offer(&mut self, index: u32, dir: Dir) {
        if let Some(Some(s)) = self.sessions.get_mut(index as usize) {
            s.offered[dir as usize] = (0, 0);
        }
    }

    /// Frames of session `index` (found by `tuple`) went through the fast path lately: it
    /// was used at `now`.
    pub fn touch(&mut self, index: u32, tuple: &Tuple, now: u64) {
        if self.check(index, tuple).is_none() {
            return;
        }
        if let Some(Some(s)) = self.sessions.get_mut(index as usize) {
            s.last = s.last.max(now);
        }
    }

    /// The offloaded sessions' tuples to withdraw from the fast path since the last call.
    pub fn take_withdrawn(&mut self) -> Vec<Tuple> {
        std::mem::take(&mut self.withdrawn)
    }

    /// Look at up to `n` sessions from where the last sweep stopped; close the expired.
    pub fn sweep(&mut self, n: usize, now: u64, t: &Timeouts, stats: &Stats) {
        let len = self.sessions.len();
        for _ in 0..n.min(len) {
            self.sweep = (self.sweep + 1) % len;
            let i = self.sweep as u32;
            if let Some(s) = &self.sessions[i as usize] {
                if now.saturating_sub(s.last) >= t.of(s) {
                    self.close(i, stats);
                    stats.expired();
                }
            }
        }
    }

    /// Close every session (the NAT's addresses or interfaces changed).
    pub fn clear(&mut self, stats: &Stats) {
        for i in 0..self.sessions.len() as u32 {
            self.close(i, stats);
        }
    }

    /// Every live session, for `show nat44 sessions`.
    pub fn iter(&self) -> impl Iterator<Item = &Session> {
        self.sessions.iter().flatten()
    }

    /// Ports in use per outside address, all protocols together.
    pub fn ports_in_use(&self) -> Vec<(u32, usize)> {
        let mut v: Vec<(u32, usize)> = self
            .ports
            .iter()
            .map(|(&a, p)| (a, p.iter().map(PortSet::in_use).sum()))
            .collect();
        v.sort();
        v
    }

    /// Bytes this table holds (sessions, both indexes, mappings), roughly: what `show nat44
    /// summary` reports as memory.
    pub fn memory(&self) -> usize {
        use std::mem::size_of;
        let entry = |k: usize, v: usize| k + v + 1;
        self.sessions.capacity() * size_of::<Option<Session>>()
            + self.free.capacity() * 4
            + self.by_tuple.capacity() * entry(size_of::<Tuple>(), 8)
            + self.mappings.capacity() * entry(size_of::<MapKey>(), size_of::<Mapping>())
            + self.hosts.capacity() * entry(4, 4)
            + self.ports.len() * 3 * (65536 / 8)
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
