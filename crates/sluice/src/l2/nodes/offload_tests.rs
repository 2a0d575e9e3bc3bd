//! The bridge nodes and the XDP fast path's mark: only a frame from a source learnt where
//! it came in, to the port its destination was learnt on, keeps it, with the bridge domain
//! for interface-output's offer.

use super::{fwd::L2Fwd, learn::L2Learn};
use crate::buffer::{FLAG_L2_OFFER, FLAG_OFFLOAD};
use crate::l2::bridge::{Bridges, DomainSettings};
use crate::nodes::testing::{frame_bytes, Harness};
use crate::wire::MacAddress;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

fn mac(n: u8) -> [u8; 6] {
    [2, 0, 0, 0, 0, n]
}

/// Interfaces 0 and 1 in one domain: 0a learnt behind 1, 0b behind 0.
fn setup() -> (Harness, Bridges) {
    let h = Harness::new(2);
    let mut b = Bridges::default();
    b.create(1, DomainSettings::default()).unwrap();
    for i in [0, 1] {
        b.set_member(i, Some((1, 0))).unwrap();
    }
    for (m, i) in [(0x0a, 1), (0x0b, 0)] {
        b.add_mac(1, MacAddress(mac(m)), i, false).unwrap();
    }
    h.set_bridges(&b);
    (h, b)
}

fn frame(dst: u8, src: u8) -> Vec<u8> {
    let mut f = frame_bytes(64);
    f[..6].copy_from_slice(&mac(dst));
    f[6..12].copy_from_slice(&mac(src));
    f
}

fn marked(m: &mut crate::buffer::BufferMeta, _: usize) {
    m.flags |= FLAG_OFFLOAD;
}

#[test]
fn l2_learn_keeps_the_mark_only_for_a_source_learnt_where_it_came_in() {
    let (h, b) = setup();
    let (learns, _rx) = std::sync::mpsc::sync_channel(16);
    let parts = super::learn::LearnParts {
        fib: b.reader(),
        clock: b.clock(),
        learns,
        lost: Arc::new(AtomicU64::new(0)),
    };
    let decl = L2Learn::decl(h.modes.clone(), parts);
    // From 0b (learnt on 0), from 0a (learnt on 1: a move), from 0c (new), on interface 0.
    let out = h.run_node_with(
        decl,
        &[frame(0x0a, 0x0b), frame(0x0b, 0x0a), frame(0x0a, 0x0c)],
        0,
        marked,
    );
    let kept: Vec<bool> = out.flags.iter().map(|f| f & FLAG_OFFLOAD != 0).collect();
    assert_eq!(kept, [true, false, false]);
}

#[test]
fn l2_fwd_marks_a_frame_to_a_learnt_port_for_the_offer() {
    let (h, b) = setup();
    let decl = L2Fwd::decl(h.modes.clone(), b.reader());
    // To 0a (behind 1), to 0e (unknown: flooded), broadcast (flooded), to 0b (behind 0: dropped).
    let mut broadcast = frame(0, 0x0b);
    broadcast[..6].fill(0xff);
    let frames = [
        frame(0x0a, 0x0b),
        frame(0x0e, 0x0b),
        broadcast,
        frame(0x0b, 0x0b),
    ];
    let out = h.run_node_with(decl, &frames, 0, marked);
    let offers: Vec<(u32, u8)> = out
        .tx_ifs
        .iter()
        .zip(&out.flags)
        .filter(|(_, f)| *f & FLAG_OFFLOAD != 0)
        .map(|(&tx, f)| (tx, f & FLAG_L2_OFFER))
        .collect();
    assert_eq!(
        offers,
        [(1, FLAG_L2_OFFER)],
        "{:?} {:?}",
        out.tx_ifs,
        out.flags
    );
    // Unmarked frames (no fast path) are not offered, whatever their way.
    let decl = L2Fwd::decl(h.modes.clone(), b.reader());
    let out = h.run_node(decl, &frames, 0);
    assert!(out
        .flags
        .iter()
        .all(|f| f & (FLAG_OFFLOAD | FLAG_L2_OFFER) == 0));
}
