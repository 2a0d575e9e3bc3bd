//! What a memif peer can do wrong. The peer writes ring indices, descriptors and control
//! messages into memory and a socket we share with it; each thing we refuse is one of these
//! named violations. Every violation is counted on the interface (`show hardware`) and ends
//! the connection: a peer that broke the protocol once is not trusted with the rings again.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Violation {
    /// A control message that does not decode (size, type, version, mode, field range).
    BadMessage = 1,
    /// A valid control message at the wrong moment (a second INIT, anything after CONNECT).
    OutOfOrder,
    /// INIT for another interface id, or with the wrong secret.
    BadIdentity,
    /// A region whose file is not sealed against shrinking (or is no memfd at all).
    RegionUnsealed,
    /// A region out of order, without its descriptor, or longer than its file.
    BadRegion,
    /// A ring out of order, too small or large, outside its region, or with a bad cookie.
    BadRing,
    /// A ring's interrupt descriptor missing, not an eventfd, or blocking.
    BadInterrupt,
    /// The peer's producer index more than a ring ahead of what we consumed.
    HeadPastRing,
    /// The peer's consumer index beyond what we posted (or moved backwards).
    TailPastHead,
    /// A descriptor whose region, offset or length lies outside the peer's region, or that
    /// offers no room.
    BadDescriptor,
    /// A descriptor handed back that is not the buffer we posted in that slot: moved,
    /// repeated from another slot, or in another region.
    NotPosted,
    /// A descriptor handed back longer than the buffer we posted.
    BadLength,
}

impl Violation {
    pub const ALL: [Violation; 12] = [
        Violation::BadMessage,
        Violation::OutOfOrder,
        Violation::BadIdentity,
        Violation::RegionUnsealed,
        Violation::BadRegion,
        Violation::BadRing,
        Violation::BadInterrupt,
        Violation::HeadPastRing,
        Violation::TailPastHead,
        Violation::BadDescriptor,
        Violation::NotPosted,
        Violation::BadLength,
    ];

    /// The counter's name, as `show hardware` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Violation::BadMessage => "bad message",
            Violation::OutOfOrder => "message out of order",
            Violation::BadIdentity => "wrong id or secret",
            Violation::RegionUnsealed => "region unsealed",
            Violation::BadRegion => "bad region",
            Violation::BadRing => "bad ring",
            Violation::BadInterrupt => "bad interrupt fd",
            Violation::HeadPastRing => "head past ring",
            Violation::TailPastHead => "tail past head",
            Violation::BadDescriptor => "bad descriptor",
            Violation::NotPosted => "descriptor not posted",
            Violation::BadLength => "bad descriptor length",
        }
    }

    fn from_code(code: u8) -> Option<Violation> {
        Violation::ALL.get((code as usize).checked_sub(1)?).copied()
    }
}

/// One counter per violation.
#[derive(Default)]
pub struct Counters([AtomicU64; Violation::ALL.len()]);

impl Counters {
    pub fn add(&self, v: Violation) {
        self.0[v as usize - 1].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, v: Violation) -> u64 {
        self.0[v as usize - 1].load(Ordering::Relaxed)
    }

    /// The counters that are not zero, by name.
    pub fn nonzero(&self) -> Vec<(&'static str, u64)> {
        Violation::ALL
            .iter()
            .map(|&v| (v.name(), self.get(v)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

/// The first violation seen on a connection (0: none), set by whichever thread saw it.
#[derive(Default)]
pub struct Verdict(std::sync::atomic::AtomicU8);

impl Verdict {
    /// Record `v` unless an earlier violation is already recorded; true if this one was.
    pub fn set(&self, v: Violation) -> bool {
        self.0
            .compare_exchange(0, v as u8, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    pub fn get(&self) -> Option<Violation> {
        Violation::from_code(self.0.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_names_are_unique() {
        for v in Violation::ALL {
            assert_eq!(Violation::from_code(v as u8), Some(v));
        }
        assert_eq!(Violation::from_code(0), None);
        assert_eq!(Violation::from_code(200), None);
        let mut names: Vec<_> = Violation::ALL.iter().map(|v| v.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Violation::ALL.len());
    }

    #[test]
    fn the_first_verdict_stays() {
        let v = Verdict::default();
        assert_eq!(v.get(), None);
        assert!(v.set(Violation::TailPastHead));
        assert!(!v.set(Violation::BadDescriptor));
        assert_eq!(v.get(), Some(Violation::TailPastHead));
        let c = Counters::default();
        c.add(Violation::BadLength);
        c.add(Violation::BadLength);
        assert_eq!(c.nonzero(), vec![("bad descriptor length", 2)]);
    }
}
