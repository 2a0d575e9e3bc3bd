//! The tries against the reference longest match (`RouteTable::lookup`), against a fresh
//! build after updates, and against the previous FIB on full synthetic tables.

use super::poptrie::{Poptrie4, Poptrie6};
use super::poptrie_writer::{
    PoptrieWriter, BLOCK_MIN, NO_BLOCKS, SMALL_ROUTES, SMALL_TOP_BITS, TOP_BITS,
};
use super::prefix::{Prefix4, Prefix6};
use super::routes::RouteTable;
use super::NO_ROUTE;
use proptest::prelude::*;

type Writer4 = PoptrieWriter<u32>;
type Writer6 = PoptrieWriter<u128>;

/// Apply a change to the trie and publish it.
fn apply<A: super::poptrie::Key>(w: &mut PoptrieWriter<A>, t: &RouteTable<A>, q: super::Prefix<A>) {
    w.update(t, q);
    w.commit();
}

fn table(routes: &[(u32, u8, u32)]) -> RouteTable<u32> {
    let mut t = RouteTable::new();
    for &(a, l, nh) in routes {
        t.insert(Prefix4::containing(a, l), nh);
    }
    t
}

fn reference(t: &RouteTable<u32>, a: u32) -> u32 {
    t.lookup(a).map_or(NO_ROUTE, |(_, nh)| nh)
}

/// Addresses worth asking about: each route's first and last address and their
/// neighbours, and some fixed ones.
fn probes(t: &RouteTable<u32>) -> Vec<u32> {
    let mut v = vec![0, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff];
    for (p, _) in t.iter() {
        let (a, z) = (p.addr(), p.last());
        v.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1), a | 0x55]);
    }
    v
}

/// Both top levels (the small one `build` takes for so few routes, and the full one), with
/// blocks where a build makes them and with every subtree a block.
fn check(routes: &[(u32, u8, u32)]) {
    let t = table(routes);
    for w in [
        Writer4::build(&t),
        Writer4::build_with(&t, TOP_BITS),
        Writer4::build_blocks(&t, 0),
        Writer4::build_with_blocks(&t, TOP_BITS, 0),
        // Top levels the writer never makes: the batched lookup's path for any width,
        // narrower than a lane's number (4) and between the two (14).
        Writer4::build_with(&t, 4),
        Writer4::build_with_blocks(&t, 14, 0),
    ] {
        let p: &Poptrie4 = w.trie();
        let addrs = probes(&t);
        let mut out = vec![0; addrs.len()];
        p.lookup_batch(&addrs, &mut out);
        for (&a, &got) in addrs.iter().zip(&out) {
            assert_eq!(got, reference(&t, a), "{a:#x} in {routes:?}");
            assert_eq!(p.lookup(a), got);
        }
    }
}

#[test]
fn empty_tables_are_cheap() {
    let both = Writer4::default().memory().bytes + Writer6::default().memory().bytes;
    assert!(both <= 64 * 1024, "{both} bytes");
    let one = Writer4::build(&table(&[])).memory();
    assert_eq!(one.bytes_used, 4096);
    // A thousand VRFs of a few routes each cost less than one full IPv4 table (~20 MiB).
    let few = table(&[
        (0x0a00_0000, 8, 1),
        (0x0a01_0000, 16, 2),
        (0xc0a8_0100, 24, 3),
    ]);
    let vrf = Writer4::build(&few).memory().bytes + Writer6::default().memory().bytes;
    assert!(1000 * vrf < 20 << 20, "{vrf} bytes per VRF");
}

#[test]
fn a_table_changes_top_level_as_it_grows_and_shrinks() {
    let mut t = table(&[(0x0a00_0000, 8, 1)]);
    let mut w = Writer4::build(&t);
    assert_eq!(w.top_bits(), SMALL_TOP_BITS);
    let host = |i: u32| Prefix4::containing(0x0a00_0000 | i << 8, 24);
    for i in 0..(SMALL_ROUTES as u32 + 10) {
        t.insert(host(i), i);
        apply(&mut w, &t, host(i));
    }
    assert_eq!(w.top_bits(), TOP_BITS);
    for i in 0..(SMALL_ROUTES as u32) {
        t.remove(host(i));
        apply(&mut w, &t, host(i));
    }
    assert_eq!(w.top_bits(), SMALL_TOP_BITS);
    for a in probes(&t) {
        assert_eq!(w.trie().lookup(a), reference(&t, a), "{a:#x}");
    }
}

#[test]
fn edge_cases() {
    check(&[]);
    check(&[(0, 0, 7)]);
    check(&[(0x0a00_0000, 8, 1), (0x0a01_0203, 32, 2), (0, 0, 3)]);
    // Every length around the strides' edges (18, 24, 30) under one /8.
    let mut r: Vec<_> = (9..=32u8)
        .map(|l| (0x0a80_0000u32 | (1 << (32 - l as u32)), l, l as u32))
        .collect();
    r.push((0x0a00_0000, 8, 100));
    check(&r);
    // Host routes at both ends of the address space.
    check(&[(0, 32, 1), (u32::MAX, 32, 2), (0xffff_0000, 16, 3)]);
}

#[test]
fn a_route_over_a_node_leaves_the_node_alone() {
    // A /20 inside a /16 and a /12 over both: the /16's slot holds a node; lookups
    // outside the /20 but inside the /16 find the /16.
    check(&[
        (0xc0a8_0000, 16, 1),
        (0xc0a8_1000, 20, 2),
        (0xc0a0_0000, 12, 3),
    ]);
}

proptest! {
    #[test]
    fn matches_the_reference(routes in prop::collection::vec((any::<u32>(), 0u8..=32, 0u32..1000), 0..200)) {
        check(&routes);
    }

    #[test]
    fn updates_match_the_reference(
        initial in prop::collection::vec((0x0a00_0000u32..0x0a40_0000, 8u8..=32, 0u32..50), 0..100),
        changes in prop::collection::vec((0x0a00_0000u32..0x0a40_0000, 6u8..=32, prop::option::of(0u32..50)), 1..60),
    ) {
        check_updates(&initial, &changes);
    }

    #[test]
    fn matches_the_reference_when_dense(routes in prop::collection::vec((0x0a00_0000u32..0x0a00_4000, 14u8..=32, 0u32..4), 0..300)) {
        check(&routes);
    }
}

/// Apply `changes` (insert when a next hop is given, else delete) one by one, updating
/// the trie after each and committing after every second one (so that a change also meets
/// one not yet committed); then it must answer as the reference and as a fresh build.
fn check_updates(initial: &[(u32, u8, u32)], changes: &[(u32, u8, Option<u32>)]) {
    for block_min in [BLOCK_MIN, 0] {
        check_updates_with(initial, changes, block_min);
    }
}

/// In-place nodes and leaves, at least a fresh build's without blocks: a change keeps a node
/// with nothing longer under it, or a run a fresh build would merge, so that it is published
/// in one word; a block has the nodes of a root's 64 children as nodes or leaves, one node
/// fewer than the root and its children when all 64 are nodes.
fn at_least_a_fresh_build<A: super::poptrie::Key>(w: &PoptrieWriter<A>, t: &RouteTable<A>) -> bool {
    let (m, f) = (
        w.memory(),
        PoptrieWriter::build_blocks(t, NO_BLOCKS).memory(),
    );
    m.nodes + w.blocks() >= f.nodes && m.leaves >= f.leaves
}

fn check_updates_with(
    initial: &[(u32, u8, u32)],
    changes: &[(u32, u8, Option<u32>)],
    block_min: u32,
) {
    let mut t = table(initial);
    let mut w = Writer4::build_blocks(&t, block_min);
    for (i, &(a, l, nh)) in changes.iter().enumerate() {
        let q = Prefix4::containing(a, l);
        match nh {
            Some(nh) => {
                t.insert(q, nh);
            }
            None => {
                t.remove(q);
            }
        }
        w.update(&t, q);
        if i % 2 == 1 {
            w.commit();
        }
    }
    w.commit();
    let mut addrs = probes(&t);
    addrs.extend(changes.iter().map(|c| c.0));
    let fresh = Writer4::build_blocks(&t, block_min);
    // In place or rebuilt, the bookkeeping of what is live is exact: nothing leaks.
    let m = w.memory();
    assert_eq!((m.nodes, m.leaves), w.reachable(), "{changes:?}");
    assert!(at_least_a_fresh_build(&w, &t), "{changes:?}");
    for &a in &addrs {
        let want = reference(&t, a);
        assert_eq!(w.trie().lookup(a), want, "{a:#x}");
        assert_eq!(fresh.trie().lookup(a), want, "{a:#x}");
    }
}

#[test]
fn updates_match_a_fresh_build() {
    // A host route in and out under a /16, a /12 over it replaced, a default route.
    check_updates(
        &[(0xc0a8_0000, 16, 1), (0xc0a8_1000, 20, 2)],
        &[
            (0xc0a8_1234, 32, Some(3)),
            (0xc0a0_0000, 12, Some(4)),
            (0xc0a8_1234, 32, None),
            (0xc0a0_0000, 12, Some(5)),
            (0, 0, Some(6)),
            (0xc0a8_1000, 20, None),
            (0xc0a8_0000, 16, None),
        ],
    );
}

/// The trie and the route table both give each address its next hop.
fn assert_answers(w: &Writer4, t: &RouteTable<u32>, want: &[(u32, u32)]) {
    for &(a, nh) in want {
        assert_eq!(w.trie().lookup(a), nh, "{a:#x}");
        assert_eq!(reference(t, a), nh, "{a:#x}");
    }
}

#[test]
fn a_next_hop_change_that_keeps_the_shape_is_stored_in_place_at_commit() {
    use super::poptrie::{upto, INDEX};
    use super::CHILD;
    // One full-table slot (10.1.0.0/18) whose root node holds the /16's leaves and two /24s;
    // routes elsewhere to keep the table a full one.
    let mut t = table(&[
        (0x0a01_0000, 16, 1),
        (0x0a01_0200, 24, 2),
        (0x0a01_0400, 24, 3),
    ]);
    for i in 0..SMALL_ROUTES as u32 + 1 {
        t.insert(Prefix4::containing(0x1400_0000 | i << 8, 24), 4);
    }
    let mut w = Writer4::build(&t);
    assert_eq!(w.top_bits(), TOP_BITS);
    let slot = (0x0a01_0000u32 >> (32 - TOP_BITS)) as usize;
    let before = w.memory();

    // A /24's next hop replaced: nothing new written, nothing dead; readers see it at commit.
    let p2 = Prefix4::containing(0x0a01_0200, 24);
    t.insert(p2, 7);
    w.update(&t, p2);
    let during = w.memory();
    assert_eq!(
        (during.bytes_used, during.dead_nodes, during.dead_leaves),
        (before.bytes_used, 0, 0)
    );
    assert_eq!(w.trie().lookup(0x0a01_0201), 2, "not before the commit");
    w.commit();
    assert_eq!(w.trie().lookup(0x0a01_0201), 7);

    // In one commit: the other /24 replaced in place, then a /25 under it, which makes the
    // root anew (a node child). The old root, which readers may still be walking until the
    // commit's words are stored, must keep its committed leaves: the pending next hop of
    // the first change is carried by the new root, not stored into the old one.
    let old_root = w.trie().top_value(slot);
    assert_eq!(old_root & CHILD, CHILD);
    let old = w.trie().node(old_root & INDEX).unwrap();
    let old_leaf_of_4 = old.base_leaf + upto(old.leafvec, 4) - 1;
    let p4 = Prefix4::containing(0x0a01_0400, 24);
    t.insert(p4, 8);
    w.update(&t, p4);
    let p25 = Prefix4::containing(0x0a01_0480, 25);
    t.insert(p25, 9);
    w.update(&t, p25);
    assert_eq!(w.trie().lookup(0x0a01_0401), 3, "not before the commit");
    w.commit();
    assert_ne!(w.trie().top_value(slot), old_root, "the root was made anew");
    assert_eq!(
        w.trie().leaf(old_leaf_of_4),
        3,
        "the old root's leaf as committed"
    );
    assert_answers(
        &w,
        &t,
        &[
            (0x0a01_0401, 8),
            (0x0a01_0481, 9),
            (0x0a01_0201, 7),
            (0x0a01_0301, 1),
        ],
    );
    let m = w.memory();
    assert_eq!((m.nodes, m.leaves), w.reachable());
    assert!(at_least_a_fresh_build(&w, &t));

    // A shorter prefix over a node: its next hop is pushed into the node's leaves, in place
    // too (a /20 over 10.1.17.0/24, which holds a /28 and so is a node of its own).
    let p20 = Prefix4::containing(0x0a01_1000, 20);
    t.insert(p20, 5);
    let p28 = Prefix4::containing(0x0a01_1110, 28);
    t.insert(p28, 6);
    apply(&mut w, &t, p20);
    apply(&mut w, &t, p28);
    let before = w.memory();
    t.insert(p20, 10);
    w.update(&t, p20);
    let during = w.memory();
    assert_eq!(
        (during.bytes_used, during.dead_nodes, during.dead_leaves),
        (before.bytes_used, before.dead_nodes, before.dead_leaves)
    );
    assert_eq!(w.trie().lookup(0x0a01_1101), 5, "not before the commit");
    w.commit();
    assert_answers(
        &w,
        &t,
        &[
            (0x0a01_1101, 10),
            (0x0a01_1111, 6),
            (0x0a01_1401, 10),
            (0x0a01_2001, 1),
        ],
    );
    assert!(at_least_a_fresh_build(&w, &t));
}

#[test]
fn dead_subtrees_are_reclaimed() {
    let mut t = table(&[(0x0a00_0000, 24, 1)]);
    let mut w = Writer4::build(&t);
    for i in 0..1000u32 {
        let q = Prefix4::containing(0x0a00_0000 | (i % 256), 32);
        t.insert(q, i);
        apply(&mut w, &t, q);
    }
    // 1000 rebuilds of one slot leave at most as many dead nodes and leaves as live ones
    // (then everything is rebuilt), so the trie stays within twice a fresh build's size.
    let m = w.memory();
    let (nodes, leaves) = (m.nodes + m.dead_nodes, m.leaves + m.dead_leaves);
    assert!(m.full_rebuilds > 0);
    let fresh = Writer4::build(&t).memory();
    let (fresh_nodes, fresh_leaves) = (fresh.nodes, fresh.leaves);
    assert!(
        nodes <= 2 * fresh_nodes + 4,
        "{nodes} nodes, {fresh_nodes} fresh"
    );
    assert!(
        leaves <= 2 * fresh_leaves + 64,
        "{leaves} leaves, {fresh_leaves} fresh"
    );
    check_updates(&[(0x0a00_0000, 24, 1)], &[(0x0a00_0007, 32, Some(9))]);
}

fn table6(routes: &[(u128, u8, u32)]) -> RouteTable<u128> {
    let mut t = RouteTable::new();
    for &(a, l, nh) in routes {
        t.insert(Prefix6::containing(a, l), nh);
    }
    t
}

/// IPv6: every route's ends and neighbours, and some fixed addresses, against the
/// reference, one by one and batched.
fn check6(routes: &[(u128, u8, u32)]) {
    let t = table6(routes);
    for w in [
        Writer6::build(&t),
        Writer6::build_with(&t, TOP_BITS),
        Writer6::build_blocks(&t, 0),
        Writer6::build_with_blocks(&t, TOP_BITS, 0),
        Writer6::build_with(&t, 4),
        Writer6::build_with_blocks(&t, 14, 0),
    ] {
        check6_one(&t, w.trie());
    }
}

fn check6_one(t: &RouteTable<u128>, p: &Poptrie6) {
    let mut addrs = vec![0, 1, u128::MAX, 1 << 127];
    for (q, _) in t.iter() {
        let (a, z) = (q.addr(), q.last());
        addrs.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1), a | 0x5555]);
    }
    let mut out = vec![0; addrs.len()];
    p.lookup_batch(&addrs, &mut out);
    for (&a, &got) in addrs.iter().zip(&out) {
        let want = t.lookup(a).map_or(NO_ROUTE, |(_, nh)| nh);
        assert_eq!(got, want, "{a:#x}");
        assert_eq!(p.lookup(a), want, "{a:#x}");
    }
}

const DOC6: u128 = 0x2001_0db8 << 96;

#[test]
fn ipv6_edge_cases() {
    check6(&[]);
    check6(&[(0, 0, 7)]);
    // Host routes, a /127, routes at every stride edge (18, 24, ... 120, 126) under a /32.
    let mut r: Vec<_> = (33..=128u8)
        .map(|l| (DOC6 | (1u128 << (128 - l as u32)), l, l as u32))
        .collect();
    r.push((DOC6, 32, 100));
    r.push((u128::MAX, 128, 1));
    r.push((0, 128, 2));
    check6(&r);
}

proptest! {
    #[test]
    fn ipv6_matches_the_reference(
        routes in prop::collection::vec((any::<u64>(), any::<u32>(), 16u8..=128, 0u32..1000), 0..150),
    ) {
        // Under 2001:db8::/32, so that routes overlap and nest.
        let r: Vec<_> = routes
            .iter()
            .map(|&(hi, lo, l, nh)| (DOC6 | (hi as u128) << 32 | lo as u128, l, nh))
            .collect();
        check6(&r);
    }

    #[test]
    fn ipv6_updates_match_a_fresh_build(
        changes in prop::collection::vec((any::<u16>(), 20u8..=128, prop::option::of(0u32..50)), 1..60),
        block_min in prop::sample::select(vec![BLOCK_MIN, 0]),
    ) {
        let mut t = table6(&[(DOC6, 32, 1)]);
        let mut w = Writer6::build_blocks(&t, block_min);
        for &(x, l, nh) in &changes {
            let q = Prefix6::containing(DOC6 | (x as u128) << 80 | x as u128, l);
            match nh {
                Some(nh) => t.insert(q, nh),
                None => t.remove(q),
            };
            apply(&mut w, &t, q);
        }
        let fresh = Writer6::build_blocks(&t, block_min);
        let m = w.memory();
        prop_assert_eq!((m.nodes, m.leaves), w.reachable());
        prop_assert!(at_least_a_fresh_build(&w, &t));
        let (p, fresh) = (w.trie(), fresh.trie());
        for &(x, _, _) in &changes {
            let a = DOC6 | (x as u128) << 80 | x as u128;
            let want = t.lookup(a).map_or(NO_ROUTE, |(_, nh)| nh);
            prop_assert_eq!(p.lookup(a), want);
            prop_assert_eq!(fresh.lookup(a), want);
        }
    }
}
