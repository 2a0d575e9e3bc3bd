//! Worker handoff (VPP's): packets received on an interface with a *spread* are hashed over
//! their flow (`rss`, Toeplitz) and each goes on to ethernet-input on the worker its hash
//! picks, through a lock-free ring per (from, to) pair of workers (`ring`). This spreads a
//! device with fewer queues than workers (a veth, a memif with one ring, a pcap file) over
//! them, and keeps each flow on one worker — both directions of it with the symmetric key,
//! which stateful sessions need.
//!
//! A spread is the workers it uses and a 128-entry indirection table over them, as NICs have
//! (hash mod 128 → worker). `set interface handoff` and `[[handoff]]` change it while traffic
//! runs; readers see the old table or the new one.
//!
//! The symmetric key repeats every 16 bits, so two fields whose bytes lie an even number of
//! bytes apart and change together cancel out: flows that differ only by the same value in
//! the last byte of their source address and of their source port (`sluice gen --flows`'s)
//! all hash alike under it. Real traffic does not vary so; synthetic traffic may need the
//! standard key.
//!
//! Order: one flow always hashes to one worker, and a ring keeps the order of what one worker
//! pushed, so a flow received by one worker leaves in order. A full ring drops the packets
//! that do not fit at once (the handoff node's "congestion drop" counter), before any work is
//! spent on them.

pub mod config;
pub mod node;
pub mod ring;
pub mod section;

use crate::rss::{Toeplitz, STANDARD_KEY, SYMMETRIC_KEY};
use arc_swap::ArcSwap;
use std::sync::Arc;

/// Slots in each (from, to) ring: 32 frames of 256.
pub const RING_SLOTS: usize = 8192;
/// Entries in a spread's indirection table.
pub const TABLE: usize = 128;

/// Which Toeplitz key a spread hashes with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashKey {
    /// Both directions of a flow on one worker (the default).
    Symmetric,
    /// The key NICs use (Microsoft's); the directions of a flow may part.
    Standard,
}

impl HashKey {
    pub fn name(self) -> &'static str {
        match self {
            HashKey::Symmetric => "symmetric",
            HashKey::Standard => "standard",
        }
    }

    pub fn parse(s: &str) -> Result<HashKey, String> {
        match s {
            "symmetric" => Ok(HashKey::Symmetric),
            "standard" => Ok(HashKey::Standard),
            other => Err(format!(
                "key '{other}': symmetric (both directions of a flow on one worker) or standard"
            )),
        }
    }
}

/// How one interface's packets are spread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spread {
    pub workers: Vec<usize>,
    pub key: HashKey,
    /// Hash mod `TABLE` → worker.
    pub table: [u8; TABLE],
}

impl Spread {
    /// A spread over `workers` (distinct, each below `all`), entries in turn.
    pub fn new(workers: &[usize], key: HashKey, all: usize) -> Result<Spread, String> {
        if workers.is_empty() {
            return Err("a handoff needs at least one worker".into());
        }
        for (k, &w) in workers.iter().enumerate() {
            if w >= all {
                return Err(format!(
                    "worker {w}: there are {all} worker(s), 0 to {}",
                    all - 1
                ));
            }
            if workers[..k].contains(&w) {
                return Err(format!("worker {w} is named twice"));
            }
        }
        Ok(Spread {
            workers: workers.to_vec(),
            key,
            table: std::array::from_fn(|k| workers[k % workers.len()] as u8),
        })
    }
}

/// The spreads of every interface, shared by the control plane and the workers.
pub struct Handoff {
    workers: usize,
    /// By interface index; `None`: no handoff.
    spreads: ArcSwap<Vec<Option<Spread>>>,
    symmetric: Toeplitz,
    standard: Toeplitz,
}

impl Handoff {
    pub fn new(workers: usize, interfaces: usize) -> Handoff {
        Handoff {
            workers,
            spreads: ArcSwap::from_pointee(vec![None; interfaces]),
            symmetric: Toeplitz::new(&SYMMETRIC_KEY),
            standard: Toeplitz::new(&STANDARD_KEY),
        }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Spread interface `index`'s packets (`None`: stop handing them off).
    pub fn set(&self, index: usize, spread: Option<Spread>) -> Result<(), String> {
        let mut next = (**self.spreads.load()).clone();
        let slot = next
            .get_mut(index)
            .ok_or(format!("interface index {index} has no receive queues"))?;
        *slot = spread;
        self.spreads.store(Arc::new(next));
        Ok(())
    }

    /// Every interface's spread, by index.
    pub fn spreads(&self) -> Arc<Vec<Option<Spread>>> {
        self.spreads.load_full()
    }

    /// Whether interface `index` hands its packets off (an input node asks once a burst).
    #[inline]
    pub fn enabled(&self, index: u32) -> bool {
        self.spreads
            .load()
            .get(index as usize)
            .is_some_and(Option::is_some)
    }

    pub fn hasher(&self, key: HashKey) -> &Toeplitz {
        match key {
            HashKey::Symmetric => &self.symmetric,
            HashKey::Standard => &self.standard,
        }
    }
}

/// The rings between `workers` workers: `producers[from][to]` and `consumers[to][from]`
/// (`None` on the diagonal: a worker keeps its own packets).
pub type Rings = (
    Vec<Vec<Option<ring::Producer>>>,
    Vec<Vec<Option<ring::Consumer>>>,
);

pub fn rings(workers: usize, slots: usize) -> Rings {
    let mut producers: Vec<Vec<Option<ring::Producer>>> = (0..workers)
        .map(|_| (0..workers).map(|_| None).collect())
        .collect();
    let mut consumers: Vec<Vec<Option<ring::Consumer>>> = (0..workers)
        .map(|_| (0..workers).map(|_| None).collect())
        .collect();
    for from in 0..workers {
        for to in 0..workers {
            if from != to {
                let (p, c) = ring::ring(slots);
                producers[from][to] = Some(p);
                consumers[to][from] = Some(c);
            }
        }
    }
    (producers, consumers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_check_their_workers_and_fill_the_table_in_turn() {
        let s = Spread::new(&[1, 0], HashKey::Symmetric, 2).unwrap();
        assert_eq!(&s.table[..4], &[1, 0, 1, 0]);
        let s = Spread::new(&[2, 0, 1], HashKey::Standard, 3).unwrap();
        let per: Vec<usize> = (0..3)
            .map(|w| s.table.iter().filter(|&&t| t as usize == w).count())
            .collect();
        assert_eq!(
            per,
            [43, 42, 43],
            "workers 2 and 0 take the two extra entries"
        );
        assert!(Spread::new(&[], HashKey::Symmetric, 2)
            .unwrap_err()
            .contains("at least one"));
        assert!(Spread::new(&[0, 2], HashKey::Symmetric, 2)
            .unwrap_err()
            .contains("there are 2 worker(s)"));
        assert!(Spread::new(&[1, 1], HashKey::Symmetric, 2)
            .unwrap_err()
            .contains("named twice"));
        assert!(HashKey::parse("crc").unwrap_err().contains("symmetric"));
    }

    #[test]
    fn setting_a_spread_turns_handoff_on_and_off() {
        let h = Handoff::new(2, 3);
        assert!(!h.enabled(1));
        h.set(
            1,
            Some(Spread::new(&[0, 1], HashKey::Symmetric, 2).unwrap()),
        )
        .unwrap();
        assert!(h.enabled(1) && !h.enabled(0) && !h.enabled(7));
        h.set(1, None).unwrap();
        assert!(!h.enabled(1));
        assert!(h.set(3, None).is_err());
    }

    #[test]
    fn a_handed_off_packet_keeps_the_fast_paths_mark() {
        let (p, _c) = rings(2, 4);
        let to = p.into_iter().next().unwrap();
        let decl = super::node::WorkerHandoff::decl(Arc::new(Handoff::new(2, 1)), 0, to);
        assert!(decl.offload, "worker-handoff is offload-safe");
    }

    #[test]
    fn rings_join_every_pair_but_none_to_itself() {
        let (mut p, mut c) = rings(3, 4);
        assert!(p[1][1].is_none() && c[2][2].is_none());
        assert_eq!(p[0][2].as_mut().unwrap().push(&[7, 8]), 2);
        let mut out = [0u32; 4];
        assert_eq!(c[2][0].as_mut().unwrap().pop(&mut out), 2);
        assert_eq!(&out[..2], &[7, 8]);
        assert!(c[2][1].as_ref().unwrap().is_empty());
    }
}
