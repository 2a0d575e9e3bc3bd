//! From rtnetlink messages (decoded by netlink-packet-route) to the listener's events: links
//! by Linux ifindex, addresses, routes and neighbours, or an ignore with its reason. Nothing
//! here knows the pairs or the router; `apply` resolves ifindexes and tables.

use crate::fib::parse::IpPrefix;
use crate::fib::{Prefix4, Prefix6};
use crate::wire::MacAddress;
use netlink_packet_core::NetlinkMessage;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteProtocol, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

/// The main table: sluice's table 0.
pub const TABLE_MAIN: u32 = 254;
/// The local table: Linux's own addresses and broadcasts; never mirrored.
pub const TABLE_LOCAL: u32 = 255;

/// One path of a kernel route, by Linux ifindex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxPath {
    pub ifindex: u32,
    pub gateway: Option<IpAddr>,
}

/// Where a kernel route sends packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinuxHops {
    Drop,
    One(LinuxPath),
    /// ECMP (RTA_MULTIPATH).
    Many(Vec<LinuxPath>),
    /// A route sluice cannot carry (its reason): where sluice holds a kernel route for the
    /// prefix, that route is deleted, since the kernel's replaced it.
    Unusable(&'static str),
}

/// A route added (or replaced) or deleted in a kernel table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteEvent {
    pub add: bool,
    /// The kernel's table id.
    pub table: u32,
    pub prefix: IpPrefix,
    pub hops: LinuxHops,
}

/// What one message says, as the listener needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A link exists (new or changed) with this name; `up`: administratively up.
    Link {
        index: u32,
        name: String,
        up: bool,
    },
    LinkGone {
        index: u32,
    },
    Address {
        add: bool,
        ifindex: u32,
        addr: IpAddr,
        len: u8,
    },
    Route(RouteEvent),
    /// A neighbour; `mac` none: gone or unusable (incomplete, failed).
    Neighbor {
        ifindex: u32,
        ip: IpAddr,
        mac: Option<MacAddress>,
    },
    /// Not mirrored, with the reason.
    Ignored(&'static str),
}

/// Each message of one datagram (or dump part), decoded; a message that cannot be decoded is
/// an `Err` with the reason, and a broken length ends the walk.
pub fn messages(buf: &[u8]) -> Vec<Result<NetlinkMessage<RouteNetlinkMessage>, &'static str>> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + 16 <= buf.len() {
        let len = u32::from_ne_bytes([buf[off], buf[off + 1], buf[off + 2], buf[off + 3]]) as usize;
        if len < 16 || off + len > buf.len() {
            out.push(Err("truncated message"));
            break;
        }
        out.push(
            NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[off..off + len])
                .map_err(|_| "undecodable message"),
        );
        off += (len + 3) & !3;
    }
    out
}

/// The event of one rtnetlink message.
pub fn event(msg: RouteNetlinkMessage) -> Event {
    match msg {
        RouteNetlinkMessage::NewLink(m) => link(&m),
        RouteNetlinkMessage::DelLink(m) => Event::LinkGone {
            index: m.header.index,
        },
        RouteNetlinkMessage::NewAddress(m) => address(&m, true),
        RouteNetlinkMessage::DelAddress(m) => address(&m, false),
        RouteNetlinkMessage::NewRoute(m) => route(&m, true),
        RouteNetlinkMessage::DelRoute(m) => route(&m, false),
        RouteNetlinkMessage::NewNeighbour(m) => neighbor(&m, true),
        RouteNetlinkMessage::DelNeighbour(m) => neighbor(&m, false),
        RouteNetlinkMessage::NewRule(_) | RouteNetlinkMessage::DelRule(_) => {
            Event::Ignored("rule (policy routing is not mirrored)")
        }
        _ => Event::Ignored("other message type"),
    }
}

fn link(m: &LinkMessage) -> Event {
    let name = m.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.clone()),
        _ => None,
    });
    match name {
        Some(name) => Event::Link {
            index: m.header.index,
            name,
            up: m.header.flags.contains(LinkFlags::Up),
        },
        None => Event::Ignored("link without a name"),
    }
}

fn address(m: &AddressMessage, add: bool) -> Event {
    if !matches!(m.header.family, AddressFamily::Inet | AddressFamily::Inet6) {
        return Event::Ignored("address of another family");
    }
    // IFA_LOCAL is the interface's own address (IFA_ADDRESS is the peer's on a
    // point-to-point link); IPv6 gives only IFA_ADDRESS.
    let mut local = None;
    let mut address = None;
    for a in &m.attributes {
        match a {
            AddressAttribute::Local(ip) => local = Some(*ip),
            AddressAttribute::Address(ip) => address = Some(*ip),
            _ => {}
        }
    }
    let Some(addr) = local.or(address) else {
        return Event::Ignored("address message without an address");
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if m.header.prefix_len > max {
        return Event::Ignored("address with a bad prefix length");
    }
    if let IpAddr::V6(a) = addr {
        if crate::wire::ipv6::is_link_local(u128::from(a)) {
            return Event::Ignored("link-local address");
        }
    }
    Event::Address {
        add,
        ifindex: m.header.index,
        addr,
        len: m.header.prefix_len,
    }
}

fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(x) => Some(IpAddr::V4(*x)),
        RouteAddress::Inet6(x) => Some(IpAddr::V6(*x)),
        _ => None,
    }
}

fn route(m: &RouteMessage, add: bool) -> Event {
    let h = &m.header;
    let v4 = match h.address_family {
        AddressFamily::Inet => true,
        AddressFamily::Inet6 => false,
        _ => return Event::Ignored("route of another family"),
    };
    if h.flags.contains(RouteFlags::Cloned) {
        return Event::Ignored("cloned (cache) route");
    }
    let mut table = h.table as u32;
    let mut dst = None;
    let mut gateway = None;
    let mut oif = None;
    let mut multipath = None;
    let mut unusable = None;
    for a in &m.attributes {
        match a {
            RouteAttribute::Table(t) => table = *t,
            RouteAttribute::Destination(d) => dst = ip_of(d),
            RouteAttribute::Gateway(g) => gateway = ip_of(g),
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::MultiPath(hops) => multipath = Some(hops),
            RouteAttribute::Via(_) => unusable = Some("gateway of another family (via)"),
            RouteAttribute::NhId(_) => unusable = Some("nexthop object (nhid)"),
            RouteAttribute::Encap(_) | RouteAttribute::EncapType(_) => {
                unusable = Some("encapsulation (lwtunnel)")
            }
            _ => {}
        }
    }
    if table == TABLE_LOCAL {
        return Event::Ignored("table local");
    }
    if h.protocol == RouteProtocol::Kernel {
        return Event::Ignored("proto kernel (from an address)");
    }
    let len = h.destination_prefix_length;
    let prefix = match (v4, dst) {
        (true, None) => Prefix4::new(0, len).map(IpPrefix::V4),
        (false, None) => Prefix6::new(0, len).map(IpPrefix::V6),
        (true, Some(IpAddr::V4(a))) => Prefix4::new(u32::from(a), len).map(IpPrefix::V4),
        (false, Some(IpAddr::V6(a))) => Prefix6::new(u128::from(a), len).map(IpPrefix::V6),
        _ => None,
    };
    let Some(prefix) = prefix else {
        return Event::Ignored("route with a bad destination");
    };
    let hops = if h.source_prefix_length != 0 {
        LinuxHops::Unusable("source-specific route (from)")
    } else if h.tos != 0 {
        LinuxHops::Unusable("route with a tos")
    } else if let Some(reason) = unusable {
        LinuxHops::Unusable(reason)
    } else {
        match h.kind {
            RouteType::BlackHole | RouteType::Unreachable | RouteType::Prohibit => LinuxHops::Drop,
            RouteType::Unicast => unicast_hops(v4, gateway, oif, multipath),
            RouteType::Local | RouteType::Broadcast | RouteType::Anycast | RouteType::Multicast => {
                return Event::Ignored("local, broadcast, anycast or multicast route");
            }
            _ => LinuxHops::Unusable("route type (throw, nat, ...)"),
        }
    };
    Event::Route(RouteEvent {
        add,
        table,
        prefix,
        hops,
    })
}

fn unicast_hops(
    v4: bool,
    gateway: Option<IpAddr>,
    oif: Option<u32>,
    multipath: Option<&Vec<netlink_packet_route::route::RouteNextHop>>,
) -> LinuxHops {
    let family_ok = |g: Option<IpAddr>| g.is_none_or(|g| g.is_ipv4() == v4);
    if let Some(hops) = multipath {
        let mut paths = Vec::with_capacity(hops.len());
        for nh in hops {
            let mut gw = None;
            for a in &nh.attributes {
                match a {
                    RouteAttribute::Gateway(g) => gw = ip_of(g),
                    RouteAttribute::Via(_) => {
                        return LinuxHops::Unusable("gateway of another family (via)")
                    }
                    _ => {}
                }
            }
            if !family_ok(gw) {
                return LinuxHops::Unusable("gateway of another family (via)");
            }
            paths.push(LinuxPath {
                ifindex: nh.interface_index,
                gateway: gw,
            });
        }
        return match paths.len() {
            0 => LinuxHops::Unusable("multipath route without next hops"),
            1 => LinuxHops::One(paths[0]),
            _ => LinuxHops::Many(paths),
        };
    }
    if !family_ok(gateway) {
        return LinuxHops::Unusable("gateway of another family (via)");
    }
    match oif {
        Some(ifindex) => LinuxHops::One(LinuxPath { ifindex, gateway }),
        None => LinuxHops::Unusable("route without an interface"),
    }
}

fn neighbor(m: &NeighbourMessage, add: bool) -> Event {
    if !matches!(m.header.family, AddressFamily::Inet | AddressFamily::Inet6) {
        return Event::Ignored("neighbour of another family (bridge fdb)");
    }
    let mut ip = None;
    let mut lladdr = None;
    for a in &m.attributes {
        match a {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(x)) => ip = Some(IpAddr::V4(*x)),
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(x)) => {
                ip = Some(IpAddr::V6(*x))
            }
            NeighbourAttribute::LinkLayerAddress(l) => lladdr = Some(l.clone()),
            _ => {}
        }
    }
    let Some(ip) = ip else {
        return Event::Ignored("neighbour without an address");
    };
    let usable = matches!(
        m.header.state,
        NeighbourState::Reachable
            | NeighbourState::Stale
            | NeighbourState::Delay
            | NeighbourState::Probe
            | NeighbourState::Permanent
    );
    if add && m.header.state == NeighbourState::Noarp {
        return Event::Ignored("noarp neighbour");
    }
    let mac = match lladdr {
        Some(l) if add && usable => match <[u8; 6]>::try_from(l.as_slice()) {
            Ok(b) => Some(MacAddress(b)),
            Err(_) => return Event::Ignored("neighbour with a link-layer address of another size"),
        },
        _ => None,
    };
    Event::Neighbor {
        ifindex: m.header.ifindex,
        ip,
        mac,
    }
}

#[cfg(test)]
#[path = "translate_tests.rs"]
mod tests;
