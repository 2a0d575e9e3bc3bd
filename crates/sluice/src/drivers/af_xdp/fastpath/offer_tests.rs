//! The worker's offers and the installer's handling of routes: what a routed packet's entry
//! says, what is never offered, and the refused sources kept beside the entries.

use super::maps::{Key, KIND_ROUTE4};
use super::offer::{Offerer, Routed};
use super::{FastPath, Port};
use crate::interface::Interface;
use crate::ip::ip4::rewrite::test_support::{
    if_mac, view, ADJ_COMPLETE, ADJ_GLEAN, ADJ_SMALL_MTU, GLEANED, GLEANED_MAC, HOST_MAC,
    NEIGHBOR_MAC,
};
use crate::router::adjacency::ADJ_DROP;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

/// A fast path without its installer, or None where BPF is not allowed (not root) outside CI.
fn fast_path() -> Option<Arc<FastPath>> {
    match FastPath::new(64) {
        Ok(fp) => Some(Arc::new(fp)),
        Err(e) if std::env::var_os("CI").is_none() && e.contains("CAP_BPF") => None,
        Err(e) => panic!("{e}"),
    }
}

/// Interface `k` with the fast path (slot k, ifindex 100 + k).
fn port(k: u32) -> Interface {
    let mut i = Interface::new(k, &format!("if{k}"), "af_xdp", 1);
    i.fast_path = Some(Port {
        slot: k as u16,
        ifindex: 100 + k,
    });
    i
}

/// A routed frame as ip4-rewrite leaves it: `eth` (14 bytes) then IPv4 to `dst`.
fn rewritten(eth: [u8; 14], dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..14].copy_from_slice(&eth);
    f[14] = 0x45;
    f[26..30].copy_from_slice(&[10, 0, 0, 7]);
    f[30..34].copy_from_slice(&dst);
    f
}

fn header(dst: [u8; 6], src: [u8; 6]) -> [u8; 14] {
    let mut h = [0u8; 14];
    h[..6].copy_from_slice(&dst);
    h[6..12].copy_from_slice(&src);
    h[12..14].copy_from_slice(&[8, 0]);
    h
}

/// `o.route` of a packet routed by `adj` of `view` as `frame`.
fn route(
    o: &mut Offerer,
    (rx, tx): (&Interface, &Interface),
    view: &crate::router::adjacency::L3View,
    adj: u32,
    frame: &[u8],
    epoch: u32,
) {
    o.route(rx, tx, Routed { view, adj, frame }, epoch);
}

/// What the offer tests start from: a fast path, ip4-rewrite's test view, and if0 and if1.
struct Setup {
    fp: Arc<FastPath>,
    view: crate::router::adjacency::SharedL3View,
    rx: Interface,
    tx: Interface,
}

/// `Setup`, or None where there is no fast path (see `fast_path`).
fn setup() -> Option<Setup> {
    Some(Setup {
        fp: fast_path()?,
        view: view(),
        rx: port(0),
        tx: port(1),
    })
}

impl Setup {
    /// An offerer without a NAT.
    fn offerer(&self) -> Offerer {
        Offerer::new(self.fp.clone(), None, None)
    }

    /// Offer from if0 to if1 a packet to `dst` routed by `adj` with the Ethernet header
    /// `eth`.
    fn route(&self, o: &mut Offerer, adj: u32, eth: [u8; 14], dst: [u8; 4], epoch: u32) {
        let frame = rewritten(eth, dst);
        route(
            o,
            (&self.rx, &self.tx),
            &self.view.load(),
            adj,
            &frame,
            epoch,
        );
    }
}

fn taken(fp: &FastPath) -> Vec<super::Candidate> {
    std::mem::take(&mut *fp.candidates.lock().unwrap())
}

#[test]
fn a_routed_packet_offers_its_destination_with_the_rewrite_and_the_checks() {
    let Some(s) = setup() else { return };
    let (fp, v) = (&s.fp, s.view.load());
    let mut o = s.offerer();
    let eth = header(NEIGHBOR_MAC.0, if_mac(1).0);
    s.route(&mut o, ADJ_COMPLETE, eth, [10, 9, 0, 1], 5);
    let c = taken(fp);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].key, Key::route4(100, [10, 9, 0, 1]));
    let r = c[0].value.route.expect("a route's rewrite");
    assert_eq!((r.dst_mac, r.src_mac), (NEIGHBOR_MAC.0, if_mac(1).0));
    assert_eq!(r.in_mac, if_mac(0).0, "the MAC ethernet-input routes for");
    assert_eq!(r.max_len, 1514);
    assert_eq!(r.use_slot, v.adj(ADJ_COMPLETE).slot);
    assert_eq!((c[0].value.epoch, c[0].value.out_slot), (5, 1));

    // Offered once an epoch (for a while), again in the next.
    s.route(&mut o, ADJ_COMPLETE, eth, [10, 9, 0, 1], 5);
    assert!(taken(fp).is_empty());
    s.route(&mut o, ADJ_COMPLETE, eth, [10, 9, 0, 1], 6);
    assert_eq!(taken(fp).len(), 1);

    // The adjacency's smaller MTU is the limit; a gleaned host's neighbour is its use flag.
    s.route(&mut o, ADJ_SMALL_MTU, eth, [10, 9, 0, 2], 6);
    assert_eq!(taken(fp)[0].value.route.unwrap().max_len, 1014);
    let glean = header(GLEANED_MAC.0, if_mac(1).0);
    s.route(&mut o, ADJ_GLEAN, glean, GLEANED, 6);
    let g = taken(fp);
    let slot = v.neighbors.get(&(1, GLEANED.into())).unwrap().slot;
    assert_eq!(g[0].value.route.unwrap().use_slot, slot);
    assert_eq!(g[0].value.route.unwrap().dst_mac, GLEANED_MAC.0);
}

#[test]
fn what_the_program_cannot_do_is_never_offered() {
    let Some(s) = setup() else { return };
    let (fp, v, rx, tx) = (&s.fp, s.view.load(), &s.rx, &s.tx);
    let eth = header(NEIGHBOR_MAC.0, if_mac(1).0);
    let good = rewritten(eth, [10, 9, 0, 1]);
    let mut o = s.offerer();
    let mut arp = good.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let plain = Interface::new(1, "plain", "af_packet", 1);
    // Not a neighbour's adjacency; another interface than the adjacency's; neither IPv4 nor IPv6 (ARP); a short
    // frame; epoch 0 (no fast path when the pass began); egress without the fast path.
    route(&mut o, (rx, tx), &v, ADJ_DROP, &good, 5);
    route(&mut o, (rx, &port(2)), &v, ADJ_COMPLETE, &good, 5);
    route(&mut o, (rx, tx), &v, ADJ_COMPLETE, &arp, 5);
    route(&mut o, (rx, tx), &v, ADJ_COMPLETE, &good[..30], 5);
    route(&mut o, (rx, tx), &v, ADJ_COMPLETE, &good, 0);
    route(&mut o, (rx, &plain), &v, ADJ_COMPLETE, &good, 5);
    assert!(taken(fp).is_empty());
}

#[test]
fn routes_are_installed_only_with_the_routers_refused_sources_in_the_map() {
    let Some(s) = setup() else { return };
    let (fp, view) = (&s.fp, &s.view);
    let mut o = s.offerer();
    let eth = header(NEIGHBOR_MAC.0, if_mac(1).0);
    let epoch = fp.epoch();
    s.route(&mut o, ADJ_COMPLETE, eth, [10, 9, 0, 1], epoch);
    let mut window = (Instant::now(), 0);
    // No router view yet: nothing to say which sources are refused, so no route.
    fp.install_batch(taken(fp), &mut window);
    assert!(fp.maps.flows(8).is_empty());
    assert_eq!(
        fp.stats
            .no_sources
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );

    fp.set_view(view.clone());
    s.route(&mut o, ADJ_COMPLETE, eth, [10, 9, 0, 2], epoch);
    fp.install_batch(taken(fp), &mut window);
    let flows = fp.maps.flows(8);
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0].0.kind, KIND_ROUTE4);
    // if0 10.0.0.1/24 and if1 10.1.0.1/24: the addresses and the broadcast addresses.
    let refused = crate::sys::bpf::map_keys(&fp.maps.refused, 16).unwrap();
    let mut got: Vec<[u8; 4]> = refused.iter().map(|k| k[..4].try_into().unwrap()).collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            [10, 0, 0, 1],
            [10, 0, 0, 255],
            [10, 1, 0, 1],
            [10, 1, 0, 255]
        ]
    );

    // An address the router gives up is no longer refused (a new view, a new epoch).
    let mut changed = (*view.load_full()).clone();
    changed.interfaces[0].v4.clear();
    changed.generation += 1;
    view.store(Arc::new(changed));
    fp.bump_epoch();
    let epoch = fp.epoch();
    s.route(&mut o, ADJ_COMPLETE, eth, [10, 9, 0, 3], epoch);
    fp.install_batch(taken(fp), &mut window);
    assert_eq!(
        crate::sys::bpf::map_keys(&fp.maps.refused, 16)
            .unwrap()
            .len(),
        2
    );

    // A candidate of an older epoch is refused.
    s.route(&mut o, ADJ_COMPLETE, eth, [10, 9, 0, 4], epoch - 1);
    fp.install_batch(taken(fp), &mut window);
    assert!(fp.stats.stale.load(std::sync::atomic::Ordering::Relaxed) >= 1);
    assert!(!fp
        .maps
        .flows(8)
        .iter()
        .any(|(k, _)| k.addr[..4] == [10, 9, 0, 4]));
}

/// Routes are widened to the prefix their decision holds for, asked of the router.
#[test]
fn a_routed_destination_is_installed_as_its_whole_route_when_the_router_says_it_can_be() {
    use crate::router::{NeighborLearn, NextHopSpec};
    use crate::wire::MacAddress;
    use std::net::IpAddr;
    let Some(fp) = fast_path() else { return };
    let mut r = crate::router::test_support::two_ports();
    let via = NextHopSpec::Via {
        addr: "198.51.100.2".parse().unwrap(),
        interface: None,
        table: None,
    };
    let prefix = crate::fib::parse::parse_prefix("10.0.0.0/8").unwrap();
    r.add_route(0, prefix, &[via]).unwrap();
    let n: IpAddr = "198.51.100.2".parse().unwrap();
    let now = Instant::now();
    r.learn(NeighborLearn::solicit(1, n), now).unwrap();
    r.learn(
        NeighborLearn::answer(1, n, MacAddress([2, 0, 0, 0, 0, 0x22])),
        now,
    )
    .unwrap();
    r.commit();
    let fib = r.fib_reader().load_full();
    let mut adj = [0u32; 1];
    fib.v4().lookup_batch(&[0x0a01_0203], &mut adj);
    fp.set_view(r.view());
    fp.set_router(Arc::new(std::sync::Mutex::new(r)));
    let candidate = |dst: [u8; 4], adj: u32| super::Candidate {
        key: Key::route4(100, dst),
        value: super::maps::Value {
            epoch: fp.epoch(),
            out_slot: 1,
            in_stat: 0,
            out_stat: 1,
            hits: 0,
            seen: 0,
            route: Some(super::maps::RouteRewrite {
                dst_mac: [2, 0, 0, 0, 0, 0x22],
                src_mac: [2, 0, 0, 0, 0, 0xa1],
                max_len: 1514,
                in_mac: [2, 0, 0, 0, 0, 0xa0],
                use_slot: 0,
            }),
            nat: None,
        },
        rx_if: 0,
        adj,
        owner: super::Owner::Nothing,
    };
    let mut window = (Instant::now(), 0);
    // One that no longer holds (another adjacency than the FIB's) is not installed.
    fp.install_batch(vec![candidate([10, 1, 2, 3], adj[0] + 7)], &mut window);
    assert!(fp.maps.flows(8).is_empty());
    fp.install_batch(vec![candidate([10, 1, 2, 3], adj[0])], &mut window);
    let flows = fp.maps.flows(8);
    assert_eq!(flows.len(), 1);
    assert_eq!(
        (flows[0].0.plen, &flows[0].0.addr[..4]),
        (8, &[10, 0, 0, 0][..])
    );
}

/// A NAT with one worker whose table takes sessions.
fn nat() -> Arc<crate::nat44::shared::Nat44Shared> {
    let nat = crate::nat44::shared::Nat44Shared::new(1);
    nat.view.store(Arc::new(crate::nat44::NatView {
        limits: Some(crate::nat44::Limits {
            sessions: 100,
            per_host: 100,
        }),
        workers: 1,
        ..Default::default()
    }));
    nat
}

/// A UDP session of `nat`'s worker 0 from 10.0.0.7:4000 to 10.9.0.1:53, its tuple, index
/// and translation, and the frame nat44-out leaves of it: the next hop's header (out by
/// if1), the translated tuple.
fn udp_session(
    nat: &crate::nat44::shared::Nat44Shared,
) -> (
    crate::nat44::packet::Tuple,
    u32,
    crate::nat44::packet::Tuple,
    Vec<u8>,
) {
    use crate::nat44::packet::{Tuple, UDP};
    let orig = Tuple {
        proto: UDP,
        src: 0x0a00_0007,
        dst: 0x0a09_0001,
        sport: 4000,
        dport: 53,
    };
    let (index, xlat) = {
        let nv = nat.view.load();
        let mut t = nat.table(0, &nv).unwrap();
        let stats = crate::nat44::Stats::default();
        let out = (crate::nat44::table::Source::Map(0xcb00_7101), None);
        t.table.open(orig, out, (0, &stats)).unwrap()
    };
    let eth = header(NEIGHBOR_MAC.0, if_mac(1).0);
    let mut frame = rewritten(eth, [10, 9, 0, 1]);
    frame[23] = UDP;
    frame[26..30].copy_from_slice(&xlat.src.to_be_bytes());
    frame[34..36].copy_from_slice(&xlat.sport.to_be_bytes());
    frame[36..38].copy_from_slice(&xlat.dport.to_be_bytes());
    frame[16..18].copy_from_slice(&46u16.to_be_bytes());
    (orig, index, xlat, frame)
}

#[test]
fn a_translated_packet_offers_its_sessions_direction_not_its_route() {
    let Some(fp) = fast_path() else { return };
    let nat = nat();
    let view = view();
    let v = view.load();
    let (orig, index, xlat, mut frame) = udp_session(&nat);
    let mut o = Offerer::new(fp.clone(), Some(nat.clone()), None);
    let (rx, tx) = (port(0), port(1));
    fn routed<'a>(view: &'a crate::router::adjacency::L3View, frame: &'a [u8]) -> Routed<'a> {
        Routed {
            view,
            adj: ADJ_COMPLETE,
            frame,
        }
    }
    o.nat((&rx, &tx), routed(&v, &frame), (0, index), 5);
    let c = taken(&fp);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].key, Key::nat4(100, &orig), "the tuple as received");
    let n = c[0].value.nat.expect("a translation");
    assert_eq!(n.to, xlat);
    assert_eq!(n.ip_sum, super::nat::rewrite_of(&orig, &xlat).ip_sum);
    assert_eq!(c[0].value.route.unwrap().dst_mac, NEIGHBOR_MAC.0);
    let super::Owner::Session(s) = c[0].owner else {
        panic!("its session: {:?}", c[0].owner);
    };
    assert_eq!((s.worker, s.index, s.tuple), (0, index, orig));
    // Once an epoch; a frame that is not the session's translation is not offered.
    o.nat((&rx, &tx), routed(&v, &frame), (0, index), 5);
    assert!(taken(&fp).is_empty());
    frame[35] ^= 1;
    o.nat((&rx, &tx), routed(&v, &frame), (0, index), 6);
    assert!(taken(&fp).is_empty());
    // The session now withdraws its entries when it ends.
    let nv = nat.view.load();
    let mut t = nat.table(0, &nv).unwrap();
    t.table.clear(&crate::nat44::Stats::default());
    assert_eq!(t.table.take_withdrawn(), vec![orig, xlat.reversed()]);
}

/// With the reply's path known, a session's forward offer brings its reply's: received on
/// the outside, translated back, routed to the inside host's neighbour as ip4-lookup
/// would, unless a feature other than NAT's stands on the reply's arcs.
#[test]
fn a_translated_packet_offers_its_reply_when_the_graph_would_only_translate_and_route_it() {
    use crate::graph::features::{self, FeatureView, IP4_UNICAST};
    use crate::router::adjacency::{ethernet_rewrite, AdjKind, Adjacency};
    let Some(fp) = fast_path() else { return };
    let nat = nat();
    let (orig, index, xlat, frame) = udp_session(&nat);
    // ip4-rewrite's test view, and the inside host 10.0.0.7 a known neighbour on if0.
    let mut v = (**view().load()).clone();
    let host = orig.src;
    let mut a = Adjacency::simple(AdjKind::Neighbor);
    a.interface = 0;
    a.next_hop = IpAddr::V4(host.into());
    a.complete = true;
    a.rewrite = ethernet_rewrite(HOST_MAC, if_mac(0), 0x0800);
    a.mtu = 1500;
    a.slot = crate::router::neighbor_map::NO_SLOT;
    v.adjs.push(a);
    let to_host = (v.adjs.len() - 1) as u32;
    let mut w = crate::fib::FibWriter::new();
    w.add4(crate::fib::Prefix4::new(host, 32).unwrap(), to_host)
        .unwrap();
    w.commit();
    let tables = crate::router::TableSet::only(w.reader());
    let (inside, outside) = (port(0), port(1));
    let offer = |feature: FeatureView, epoch: u32| {
        let reply = super::offer::ReplyPath {
            tables: tables.clone(),
            features: features::shared(feature),
        };
        let mut o = Offerer::new(fp.clone(), Some(nat.clone()), Some(reply));
        let routed = Routed {
            view: &v,
            adj: ADJ_COMPLETE,
            frame: &frame,
        };
        o.nat((&inside, &outside), routed, (0, index), epoch);
        taken(&fp)
    };
    let c = offer(FeatureView::new(), 5);
    assert_eq!(c.len(), 2, "{c:?}");
    assert_eq!(c[0].key, Key::nat4(100, &orig));
    let reply = &c[1];
    assert_eq!(
        reply.key,
        Key::nat4(101, &xlat.reversed()),
        "as the outside receives it"
    );
    assert_eq!(reply.rx_if, 1);
    assert_eq!(reply.adj, to_host);
    let n = reply.value.nat.expect("a translation");
    assert_eq!(n.to, orig.reversed());
    let r = reply.value.route.expect("a route");
    assert_eq!(
        (r.dst_mac, r.src_mac, r.in_mac),
        (HOST_MAC.0, if_mac(0).0, if_mac(1).0)
    );
    assert_eq!(r.max_len, 1514);
    assert_eq!(reply.value.out_slot, 0, "out by the inside port");
    // An input ACL on the outside: the reply must cross it in the graph.
    let mut acl = FeatureView::new();
    acl.set(IP4_UNICAST, 1, crate::acl::node::ACL_IP4_IN, true)
        .unwrap();
    assert_eq!(offer(acl, 6).len(), 1, "the forward direction alone");
}

#[test]
fn a_bridged_frame_offers_its_source_and_destination_on_its_ingress() {
    let Some(s) = setup() else { return };
    let (fp, rx, tx) = (&s.fp, &s.rx, &s.tx);
    let mut o = s.offerer();
    let eth = header([2, 0, 0, 0, 0, 0xb1], [2, 0, 0, 0, 0, 0xa1]);
    o.bridge((rx, tx), &eth, 3, 5);
    let c = taken(fp);
    assert_eq!(c.len(), 1);
    let (dst, src) = ([2, 0, 0, 0, 0, 0xb1], [2, 0, 0, 0, 0, 0xa1]);
    assert_eq!(c[0].key, Key::bridge(100, dst, src));
    assert_eq!((c[0].value.out_slot, c[0].value.route), (1, None));
    let learnt = super::bridge::MacRef {
        key: crate::l2::fib::key(3, &src),
        interface: 0,
    };
    assert_eq!(
        c[0].owner,
        super::Owner::Mac(learnt),
        "its source's age kept"
    );
    // Once an epoch; not toward a smaller MTU than the ingress's (the kernel would drop).
    o.bridge((rx, tx), &eth, 3, 5);
    let mut small = port(1);
    small.mtu = 1000;
    o.bridge((&port(2), &small), &eth, 3, 6);
    assert!(taken(fp).is_empty());
}

#[test]
fn a_routed_ipv6_packet_offers_its_destination() {
    let Some(s) = setup() else { return };
    let (fp, v) = (&s.fp, s.view.load());
    let mut o = s.offerer();
    let mut frame = vec![0u8; 62];
    frame[..14].copy_from_slice(&header(NEIGHBOR_MAC.0, if_mac(1).0));
    frame[12..14].copy_from_slice(&[0x86, 0xdd]);
    frame[14] = 0x60;
    let dst = "2001:db8:19::5"
        .parse::<std::net::Ipv6Addr>()
        .unwrap()
        .octets();
    frame[38..54].copy_from_slice(&dst);
    route(&mut o, (&s.rx, &s.tx), &v, ADJ_COMPLETE, &frame, 5);
    let c = taken(fp);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].key, Key::route6_prefix(100, dst, 128));
    let r = c[0].value.route.expect("a route's rewrite");
    assert_eq!((r.dst_mac, r.in_mac), (NEIGHBOR_MAC.0, if_mac(0).0));
}
