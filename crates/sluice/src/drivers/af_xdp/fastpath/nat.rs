//! NAT44 sessions in the fast path: what an entry's translation adds to the checksums, and
//! the queues between the installer and the workers that own the sessions.
//!
//! An entry is one direction of one session (its exact TCP/UDP tuple as received on one
//! interface). The worker offers it only for a session the graph would translate alike
//! for every frame: UDP, or TCP established (frames with SYN, FIN or RST go to the graph,
//! which moves the session's state). The session stays the worker's: the installer tells
//! it which offloaded sessions frames used (`touched`, so they do not expire), and the
//! worker tells the installer which sessions closed or began closing (`withdrawn`, whose
//! entries go at its next tick).

use super::maps::{Key, NatRewrite};
use super::FastPath;
use crate::nat44::packet::Tuple;
use std::sync::atomic::Ordering;

/// `a + b` in ones' complement (RFC 1071), folded to 16 bits; 0 only when both are.
fn add(a: u32, b: u32) -> u32 {
    let mut s = a + b;
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

/// What replacing 16-bit word `old` by `new` adds to a checksum's sum (RFC 1624, eqn. 3).
fn word(sum: u32, old: u16, new: u16) -> u32 {
    add(add(sum, u32::from(!old)), u32::from(new))
}

fn word32(sum: u32, old: u32, new: u32) -> u32 {
    word(
        word(sum, (old >> 16) as u16, (new >> 16) as u16),
        old as u16,
        new as u16,
    )
}

/// The translation of a TCP or UDP frame of `from` into `to`: the words changed are those
/// `nat44::packet::rewrite` changes, in the same way, so the program's frame is the
/// graph's to the bit (a sum of RFC 1624 updates is the update by their sum, the
/// checksums' 0x0000 and 0xffff included).
pub fn rewrite_of(from: &Tuple, to: &Tuple) -> NatRewrite {
    let (mut ip, mut l4) = (0u32, 0u32);
    for (old, new) in [(from.src, to.src), (from.dst, to.dst)] {
        if old != new {
            ip = word32(ip, old, new);
            l4 = word32(l4, old, new);
        }
    }
    for (old, new) in [(from.sport, to.sport), (from.dport, to.dport)] {
        if old != new {
            l4 = word(l4, old, new);
        }
    }
    NatRewrite {
        to: Tuple {
            proto: from.proto,
            ..*to
        },
        ip_sum: ip as u16,
        l4_sum: l4 as u16,
        worker: 0,
        index: 0,
    }
}

/// A session as the installer knows it: worker `worker`'s session `index`, whose frames
/// of `tuple` (as received) the entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionRef {
    pub worker: usize,
    pub index: u32,
    pub tuple: Tuple,
}

impl FastPath {
    /// Remove the entries of the sessions the workers withdrew (closed, or closing).
    pub(super) fn withdraw_sessions(&self) {
        let nat = self.nat.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(nat) = nat else { return };
        let withdrawn = nat.take_withdrawn();
        if withdrawn.is_empty() {
            return;
        }
        let ports = self.ifindexes();
        // The entry's ingress is not the session's to know: any port may hold one. A key
        // no port holds costs the batch a call of its own; the rest go together.
        let keys: Vec<Key> = withdrawn
            .iter()
            .flat_map(|t| ports.iter().map(move |&i| Key::nat4(i, t)))
            .collect();
        let removed = self.maps.remove_all(&keys);
        self.stats
            .nat_withdrawn
            .fetch_add(removed as u64, Ordering::Relaxed);
    }
}
