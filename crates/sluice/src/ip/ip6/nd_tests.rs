use super::*;
use crate::buffer::{BufferPool, HugePages};
use crate::ip::ip6::input::test_support::*;
use crate::ip::neighbor_hold::MAX_NEIGHBORS;
use crate::nodes::testing::{Captured, TestGraph};
use crate::router::adjacency::ADJ_LOCAL;
use crate::wire::icmp6::NaFlags;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// ip6-nd in a graph between a feed and sinks, with a clock the test moves (in ms).
struct Rig {
    pool: Arc<BufferPool>,
    bufs: WorkerBuffers,
    graph: TestGraph,
    /// The bytes of what reached the sinks, in the order of `graph.seen`.
    captured: Captured,
    clock: Arc<AtomicU64>,
    view: SharedL3View,
    learnt: std::sync::mpsc::Receiver<NeighborLearn>,
}

/// Clock ticks (ms) a second.
const HZ: u64 = 1000;

impl Rig {
    fn new() -> Rig {
        let pool = BufferPool::new(256, HugePages::Never).unwrap();
        let bufs = pool.worker_handle();
        let captured = Captured::default();
        let clock = Arc::new(AtomicU64::new(0));
        let view = view();
        let (tx, learnt) = std::sync::mpsc::sync_channel(16);
        let c = clock.clone();
        let start = Instant::now();
        let nd = Ip6Nd::decl_with_clock(
            view.clone(),
            Some(tx),
            Box::new(move || start + Duration::from_millis(c.load(Ordering::Relaxed))),
        );
        Rig {
            graph: TestGraph::new(nd, Some(captured.clone())),
            pool,
            bufs,
            captured,
            clock,
            view,
            learnt,
        }
    }

    /// Run one pass with `frames` (each with its adjacency) fed in; what came out, as
    /// (next slot, bytes, tx_if).
    fn pass(&mut self, frames: &[(Vec<u8>, u32)]) -> Vec<(usize, Vec<u8>, u32)> {
        for (f, adj) in frames {
            let bi = crate::nodes::testing::received(&mut self.bufs, f);
            let m = self.bufs.meta_mut(bi);
            m.adj = *adj;
            m.rx_if = 0;
            self.graph.inbox.lock().unwrap().push(bi);
        }
        self.graph.graph.run_once(&mut self.bufs);
        let seen = std::mem::take(&mut *self.graph.seen.lock().unwrap());
        let bytes = std::mem::take(&mut *self.captured.lock().unwrap());
        seen.into_iter()
            .zip(bytes)
            .map(|((slot, tx_if, ..), b)| (slot, b, tx_if))
            .collect()
    }

    fn errors(&self) -> Vec<u64> {
        self.graph.errors()
    }

    fn learn_neighbor(&self, ip: u128, mac: MacAddress) {
        let mut v = (**self.view.load()).clone();
        v.neighbors.insert((1, IpAddr::V6(Ipv6Addr::from(ip))), mac);
        v.generation += 1;
        self.view.store(Arc::new(v));
    }
}

fn solicit_frame(src: u128, target: u128) -> Vec<u8> {
    let mut ns = [0u8; ND_PACKET_LEN];
    icmp6::build_solicit(&mut ns, src, HOST_MAC, target);
    eth(ipv6::multicast_mac(ipv6::solicited_node(target)), &ns)
}

#[test]
fn solicitation_for_our_address_is_answered_and_its_sender_learnt() {
    let mut rig = Rig::new();
    let out = rig.pass(&[(solicit_frame(HOST, if_addr(0)), ADJ_LOCAL)]);
    assert_eq!(out.len(), 2);
    let (slot, na, tx) = out
        .iter()
        .find(|o| o.0 == Next::InterfaceOutput as usize)
        .unwrap();
    assert_eq!((*slot, *tx), (Next::InterfaceOutput as usize, 0));
    assert_eq!(&na[..14], &ethernet_rewrite(HOST_MAC, if_mac(0), 0x86dd));
    let h = Ipv6Header::parse(&na[14..]).unwrap();
    assert_eq!((h.source(), h.destination()), (if_addr(0), HOST));
    assert_eq!(
        parse_nd(&na[14..]),
        Ok(NdMessage::Advert {
            target: if_addr(0),
            flags: NaFlags {
                router: true,
                solicited: true,
                override_: true
            },
            target_link_addr: Some(if_mac(0)),
        })
    );
    let learnt = rig.learnt.try_recv().unwrap();
    assert_eq!(learnt.mac, HOST_MAC);
    assert_eq!(learnt.ip, IpAddr::V6(Ipv6Addr::from(HOST)));
    assert_eq!(rig.errors()[Error::SolicitAnswered as usize], 1);
}

#[test]
fn link_local_target_and_dad_probe_are_answered() {
    let mut rig = Rig::new();
    let ll = ipv6::link_local_from_mac(if_mac(0));
    let out = rig.pass(&[(solicit_frame(0xfe80 << 112 | 5, ll), ADJ_LOCAL)]);
    assert!(out.iter().any(|o| o.0 == Next::InterfaceOutput as usize));
    // DAD: from ::, no option; the answer goes to all nodes, not solicited.
    let mut ns = [0u8; ND_PACKET_LEN];
    icmp6::build_solicit(&mut ns, 0, HOST_MAC, if_addr(0));
    ns[4..6].copy_from_slice(&24u16.to_be_bytes());
    let mut dad = ns[..64].to_vec();
    dad[42..44].copy_from_slice(&[0, 0]);
    let c = ipv6::upper_layer_checksum(0, ipv6::solicited_node(if_addr(0)), 58, &dad[40..]);
    dad[42..44].copy_from_slice(&c.to_be_bytes());
    let out = rig.pass(&[(eth(if_mac(0), &dad), ADJ_LOCAL)]);
    let na = &out
        .iter()
        .find(|o| o.0 == Next::InterfaceOutput as usize)
        .unwrap()
        .1;
    assert_eq!(&na[..6], &[0x33, 0x33, 0, 0, 0, 1]);
    assert!(matches!(
        parse_nd(&na[14..]),
        Ok(NdMessage::Advert {
            flags: NaFlags {
                solicited: false,
                ..
            },
            ..
        })
    ));
    assert!(rig.learnt.try_recv().is_ok()); // from the first, not from DAD
    assert!(rig.learnt.try_recv().is_err());
}

#[test]
fn bad_and_foreign_messages_are_counted() {
    let mut rig = Rig::new();
    let mut bad = solicit_frame(HOST, if_addr(0));
    bad[21] = 64; // hop limit
    let mut na = [0u8; ND_PACKET_LEN];
    icmp6::build_advert(&mut na, NEIGHBOR, if_addr(0), NEIGHBOR_MAC, NEIGHBOR, true);
    let out = rig.pass(&[
        (bad, ADJ_LOCAL),
        (solicit_frame(HOST, FAR), ADJ_LOCAL),
        (eth(if_mac(0), &na), ADJ_LOCAL),
    ]);
    assert_eq!(out.len(), 3);
    assert!(out.iter().all(|o| o.0 == Next::Drop as usize));
    let e = rig.errors();
    assert_eq!(e[NdError::HopLimit as usize], 1);
    assert_eq!(e[Error::SolicitNotOurs as usize], 1);
    assert_eq!(e[Error::AdvertLearnt as usize], 1);
    assert_eq!(rig.learnt.try_recv().unwrap().mac, NEIGHBOR_MAC);
}

#[test]
fn held_packets_are_released_when_the_neighbour_appears() {
    let mut rig = Rig::new();
    let target = GLEANED + 1;
    let frames: Vec<(Vec<u8>, u32)> = (0..6)
        .map(|_| (udp(HOST, target, 64, 80), ADJ_GLEAN))
        .collect();
    let out = rig.pass(&frames);
    // One solicitation to the solicited-node group; 4 held, 2 over the limit dropped.
    let ns: Vec<_> = out
        .iter()
        .filter(|o| o.0 == Next::InterfaceOutput as usize)
        .collect();
    assert_eq!(ns.len(), 1);
    assert_eq!(ns[0].2, 1);
    assert_eq!(
        &ns[0].1[..6],
        &ipv6::multicast_mac(ipv6::solicited_node(target)).0
    );
    assert!(matches!(
        parse_nd(&ns[0].1[14..]),
        Ok(NdMessage::Solicit { target: t, source_link_addr: Some(m) }) if t == target && m == if_mac(1)
    ));
    assert_eq!(out.iter().filter(|o| o.0 == Next::Drop as usize).count(), 2);
    let e = rig.errors();
    assert_eq!(
        (e[Error::Held as usize], e[Error::QueueFull as usize]),
        (4, 2)
    );
    // Nothing yet; then the neighbour is learnt and the next pass releases them.
    assert!(rig.pass(&[]).is_empty());
    rig.learn_neighbor(target, GLEANED_MAC);
    let out = rig.pass(&[]);
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|o| o.0 == Next::Rewrite as usize));
    assert_eq!(out[0].1, udp(HOST, target, 64, 80), "released untouched");
    assert_eq!(rig.errors()[Error::Released as usize], 4);
    // A packet for a neighbour already in the view goes straight back.
    let out = rig.pass(&[(udp(HOST, target, 64, 80), ADJ_GLEAN)]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, Next::Rewrite as usize);
    assert_eq!(rig.pool.report().in_use, 0);
}

#[test]
fn neighbours_beyond_the_table_are_dropped_and_counted() {
    let mut rig = Rig::new();
    let frames: Vec<(Vec<u8>, u32)> = (1..=MAX_NEIGHBORS as u128 + 1)
        .map(|k| (udp(HOST, GLEANED + k, 64, 80), ADJ_GLEAN))
        .collect();
    let out = rig.pass(&frames);
    let e = rig.errors();
    assert_eq!(e[Error::Held as usize], MAX_NEIGHBORS as u64);
    assert_eq!(e[Error::SolicitSent as usize], MAX_NEIGHBORS as u64);
    assert_eq!(e[Error::TableFull as usize], 1);
    assert_eq!(out.iter().filter(|o| o.0 == Next::Drop as usize).count(), 1);
}

#[test]
fn unanswered_solicitations_are_retried_then_packets_dropped() {
    let mut rig = Rig::new();
    let mut v = (**rig.view.load()).clone();
    v.neighbors.clear();
    rig.view.store(Arc::new(v));
    rig.pass(&[(udp(HOST, FAR, 64, 80), ADJ_INCOMPLETE)]);
    let sent = |rig: &Rig| rig.errors()[Error::SolicitSent as usize];
    assert_eq!(sent(&rig), 1);
    rig.clock.store(HZ / 2, Ordering::Relaxed);
    assert!(rig.pass(&[]).is_empty());
    for k in 1..MAX_SOLICIT as u64 {
        rig.clock.store(k * HZ, Ordering::Relaxed);
        let out = rig.pass(&[]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, Next::InterfaceOutput as usize);
        // The solicitation is for the adjacency's next hop, not the destination.
        assert!(matches!(
            parse_nd(&out[0].1[14..]),
            Ok(NdMessage::Solicit {
                target: NEIGHBOR_TABLE_ONLY,
                ..
            })
        ));
    }
    assert_eq!(sent(&rig), MAX_SOLICIT as u64);
    rig.clock.store(MAX_SOLICIT as u64 * HZ, Ordering::Relaxed);
    let out = rig.pass(&[]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, Next::Drop as usize);
    assert_eq!(rig.errors()[Error::NoAnswer as usize], 1);
    assert_eq!(rig.pool.report().in_use, 0);
}
