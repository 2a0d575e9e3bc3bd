//! Hand-built messages, put on the wire and read back as the listener reads them.

use super::*;
use netlink_packet_core::{NetlinkHeader, NetlinkPayload};
use netlink_packet_route::neighbour::NeighbourMessage;
use netlink_packet_route::route::{RouteHeader, RouteNextHop};

/// The bytes of one message, as the kernel sends it.
fn wire(msg: RouteNetlinkMessage) -> Vec<u8> {
    let mut m = NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::InnerMessage(msg));
    m.finalize();
    let mut buf = vec![0u8; m.buffer_len()];
    m.serialize(&mut buf);
    buf
}

/// Through the wire and back.
fn read(msg: RouteNetlinkMessage) -> Event {
    let buf = wire(msg);
    let mut all = messages(&buf);
    assert_eq!(all.len(), 1);
    match all.remove(0).unwrap().payload {
        NetlinkPayload::InnerMessage(m) => event(m),
        other => panic!("not a message: {other:?}"),
    }
}

fn route4(dst: [u8; 4], len: u8) -> RouteMessage {
    let mut m = RouteMessage::default();
    m.header = RouteHeader {
        address_family: AddressFamily::Inet,
        destination_prefix_length: len,
        table: 254,
        protocol: RouteProtocol::Static,
        kind: RouteType::Unicast,
        ..Default::default()
    };
    m.attributes
        .push(RouteAttribute::Destination(RouteAddress::Inet(dst.into())));
    m
}

fn pfx(s: &str) -> IpPrefix {
    crate::fib::parse::parse_prefix(s).unwrap()
}

fn v4(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn a_route_via_a_gateway_and_its_delete() {
    let mut m = route4([10, 1, 0, 0], 16);
    m.attributes.push(RouteAttribute::Oif(7));
    m.attributes
        .push(RouteAttribute::Gateway(RouteAddress::Inet(
            [192, 0, 2, 2].into(),
        )));
    let want = RouteEvent {
        add: true,
        table: 254,
        prefix: pfx("10.1.0.0/16"),
        hops: LinuxHops::One(LinuxPath {
            ifindex: 7,
            gateway: Some(v4("192.0.2.2")),
        }),
    };
    assert_eq!(
        read(RouteNetlinkMessage::NewRoute(m.clone())),
        Event::Route(want.clone())
    );
    let del = RouteEvent { add: false, ..want };
    assert_eq!(read(RouteNetlinkMessage::DelRoute(m)), Event::Route(del));
}

#[test]
fn attached_default_ecmp_blackhole_and_ipv6_routes() {
    // dev only: no gateway; the table from RTA_TABLE when the header's is too small.
    let mut m = route4([0, 0, 0, 0], 0);
    m.attributes.clear();
    m.header.table = 252;
    m.attributes.push(RouteAttribute::Table(1000));
    m.attributes.push(RouteAttribute::Oif(3));
    match read(RouteNetlinkMessage::NewRoute(m)) {
        Event::Route(r) => {
            assert_eq!((r.table, r.prefix), (1000, pfx("0.0.0.0/0")));
            assert_eq!(
                r.hops,
                LinuxHops::One(LinuxPath {
                    ifindex: 3,
                    gateway: None
                })
            );
        }
        e => panic!("{e:?}"),
    }
    let mut m = route4([10, 2, 0, 0], 16);
    let mut hops = Vec::new();
    for (i, gw) in [(3, [192, 0, 2, 2]), (4, [198, 51, 100, 2])] {
        let mut nh = RouteNextHop::default();
        nh.interface_index = i;
        nh.attributes
            .push(RouteAttribute::Gateway(RouteAddress::Inet(gw.into())));
        hops.push(nh);
    }
    m.attributes.push(RouteAttribute::MultiPath(hops));
    match read(RouteNetlinkMessage::NewRoute(m)) {
        Event::Route(r) => assert_eq!(
            r.hops,
            LinuxHops::Many(vec![
                LinuxPath {
                    ifindex: 3,
                    gateway: Some(v4("192.0.2.2"))
                },
                LinuxPath {
                    ifindex: 4,
                    gateway: Some(v4("198.51.100.2"))
                },
            ])
        ),
        e => panic!("{e:?}"),
    }
    for kind in [
        RouteType::BlackHole,
        RouteType::Unreachable,
        RouteType::Prohibit,
    ] {
        let mut m = route4([203, 0, 113, 0], 24);
        m.header.kind = kind;
        match read(RouteNetlinkMessage::NewRoute(m)) {
            Event::Route(r) => assert_eq!(r.hops, LinuxHops::Drop),
            e => panic!("{e:?}"),
        }
    }
    let mut m = RouteMessage::default();
    m.header.address_family = AddressFamily::Inet6;
    m.header.destination_prefix_length = 48;
    m.header.table = 254;
    m.header.protocol = RouteProtocol::Boot;
    m.header.kind = RouteType::Unicast;
    m.attributes
        .push(RouteAttribute::Destination(RouteAddress::Inet6(
            "2001:db8:9::".parse().unwrap(),
        )));
    m.attributes
        .push(RouteAttribute::Gateway(RouteAddress::Inet6(
            "fe80::2".parse().unwrap(),
        )));
    m.attributes.push(RouteAttribute::Oif(5));
    match read(RouteNetlinkMessage::NewRoute(m)) {
        Event::Route(r) => {
            assert_eq!(r.prefix, pfx("2001:db8:9::/48"));
            assert_eq!(
                r.hops,
                LinuxHops::One(LinuxPath {
                    ifindex: 5,
                    gateway: Some("fe80::2".parse().unwrap())
                })
            );
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn routes_sluice_does_not_mirror_are_ignored_with_reasons() {
    let ignored = |m: RouteMessage| match read(RouteNetlinkMessage::NewRoute(m)) {
        Event::Ignored(r) => r,
        e => panic!("{e:?}"),
    };
    let unusable = |m: RouteMessage| match read(RouteNetlinkMessage::NewRoute(m)) {
        Event::Route(RouteEvent {
            hops: LinuxHops::Unusable(r),
            ..
        }) => r,
        e => panic!("{e:?}"),
    };
    let mut m = route4([10, 0, 0, 1], 32);
    m.header.table = 255;
    m.header.kind = RouteType::Local;
    assert_eq!(ignored(m), "table local");
    let mut m = route4([192, 0, 2, 0], 24);
    m.header.protocol = RouteProtocol::Kernel;
    m.attributes.push(RouteAttribute::Oif(3));
    assert_eq!(ignored(m), "proto kernel (from an address)");
    let mut m = route4([224, 0, 0, 0], 4);
    m.header.kind = RouteType::Multicast;
    assert!(ignored(m).contains("multicast"));
    let mut m = route4([10, 0, 0, 0], 8);
    m.header.flags = RouteFlags::Cloned;
    assert_eq!(ignored(m), "cloned (cache) route");
    // Host bits set: not a prefix.
    let m = route4([10, 0, 0, 1], 8);
    assert_eq!(ignored(m), "route with a bad destination");
    let mut m = route4([10, 0, 0, 0], 8);
    m.attributes.push(RouteAttribute::NhId(4));
    assert_eq!(unusable(m), "nexthop object (nhid)");
    let mut m = route4([10, 0, 0, 0], 8);
    m.header.kind = RouteType::Throw;
    assert!(unusable(m).contains("throw"));
    let m = route4([10, 0, 0, 0], 8);
    assert_eq!(unusable(m), "route without an interface");
    let mut m = route4([10, 0, 0, 0], 8);
    m.attributes.push(RouteAttribute::Oif(3));
    m.attributes.push(RouteAttribute::Via(
        netlink_packet_route::route::RouteVia::Inet6("fe80::1".parse().unwrap()),
    ));
    assert!(unusable(m).contains("another family"));
    let mut m = route4([10, 0, 0, 0], 8);
    m.header.tos = 4;
    m.attributes.push(RouteAttribute::Oif(3));
    assert_eq!(unusable(m), "route with a tos");
}

#[test]
fn addresses_neighbours_links_and_rules() {
    let mut a = AddressMessage::default();
    a.header.family = AddressFamily::Inet;
    a.header.prefix_len = 24;
    a.header.index = 7;
    a.attributes
        .push(AddressAttribute::Address(v4("192.0.2.99")));
    a.attributes.push(AddressAttribute::Local(v4("192.0.2.1")));
    assert_eq!(
        read(RouteNetlinkMessage::NewAddress(a.clone())),
        Event::Address {
            add: true,
            ifindex: 7,
            addr: v4("192.0.2.1"),
            len: 24
        }
    );
    let mut ll = AddressMessage::default();
    ll.header.family = AddressFamily::Inet6;
    ll.header.prefix_len = 64;
    ll.attributes
        .push(AddressAttribute::Address("fe80::1".parse().unwrap()));
    assert_eq!(
        read(RouteNetlinkMessage::NewAddress(ll)),
        Event::Ignored("link-local address")
    );
    let neigh = |state: NeighbourState, mac: &[u8]| {
        let mut n = NeighbourMessage::default();
        n.header.family = AddressFamily::Inet;
        n.header.ifindex = 7;
        n.header.state = state;
        n.attributes
            .push(NeighbourAttribute::Destination(NeighbourAddress::Inet(
                [192, 0, 2, 5].into(),
            )));
        if !mac.is_empty() {
            n.attributes
                .push(NeighbourAttribute::LinkLayerAddress(mac.to_vec()));
        }
        n
    };
    let mac = [2, 0, 0, 0, 0, 5];
    assert_eq!(
        read(RouteNetlinkMessage::NewNeighbour(neigh(
            NeighbourState::Reachable,
            &mac
        ))),
        Event::Neighbor {
            ifindex: 7,
            ip: v4("192.0.2.5"),
            mac: Some(MacAddress(mac))
        }
    );
    for m in [
        RouteNetlinkMessage::NewNeighbour(neigh(NeighbourState::Failed, &[])),
        RouteNetlinkMessage::DelNeighbour(neigh(NeighbourState::Stale, &mac)),
    ] {
        assert_eq!(
            read(m),
            Event::Neighbor {
                ifindex: 7,
                ip: v4("192.0.2.5"),
                mac: None
            }
        );
    }
    assert_eq!(
        read(RouteNetlinkMessage::NewNeighbour(neigh(
            NeighbourState::Reachable,
            &[1, 2, 3]
        ))),
        Event::Ignored("neighbour with a link-layer address of another size")
    );
    let mut l = LinkMessage::default();
    l.header.index = 7;
    l.header.flags = LinkFlags::Up;
    l.attributes.push(LinkAttribute::IfName("tap-e0".into()));
    assert_eq!(
        read(RouteNetlinkMessage::NewLink(l.clone())),
        Event::Link {
            index: 7,
            name: "tap-e0".into(),
            up: true
        }
    );
    assert_eq!(
        read(RouteNetlinkMessage::DelLink(l)),
        Event::LinkGone { index: 7 }
    );
    let rule = netlink_packet_route::rule::RuleMessage::default();
    assert!(matches!(
        read(RouteNetlinkMessage::NewRule(rule)),
        Event::Ignored(_)
    ));
}

#[test]
fn broken_datagrams_are_counted_not_panicked_on() {
    let mut buf = wire(RouteNetlinkMessage::NewRoute(route4([10, 0, 0, 0], 8)));
    // A length past the end.
    buf[0] = 0xff;
    let all = messages(&buf);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].as_ref().err(), Some(&"truncated message"));
    // A route message cut short inside its header.
    let mut short = wire(RouteNetlinkMessage::NewRoute(route4([10, 0, 0, 0], 8)));
    short.truncate(20);
    short[0..4].copy_from_slice(&20u32.to_ne_bytes());
    let all = messages(&short);
    assert!(all[0].is_err());
    // Two messages in one datagram.
    let mut two = wire(RouteNetlinkMessage::NewRoute(route4([10, 0, 0, 0], 8)));
    two.extend(wire(RouteNetlinkMessage::DelRoute(route4(
        [10, 0, 0, 0],
        8,
    ))));
    assert_eq!(messages(&two).iter().filter(|m| m.is_ok()).count(), 2);
    assert!(messages(&[0u8; 7]).is_empty());
}
